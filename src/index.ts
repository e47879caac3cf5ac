/**
 * The cxagent library API, for scripts run with `bun run` (SPEC §10). It knows no terminal and
 * names no CLI flag: errors carry a structured next step, and asking a person (to trust a plugin,
 * to allow a call) is the caller's, through `confirmTrust` and `permission`.
 */
export {
  Session,
  BUILTIN_TOOLS,
  type SessionOptions,
  type LoadOptions,
  type AvailablePlugin,
  type ApproveOptions,
  type ApprovalResult,
} from "./session/session.ts";
export type { LoadStep, LoadTimings } from "./session/pipeline.ts";
export type { CortexFacts, Inspection, SettingsSource, Shadowing } from "./session/inspect.ts";
export type { Narrowing, SandboxFacts, Widening } from "./session/sandbox-facts.ts";
export type { SandboxDeclaration } from "./protocol/sandbox.ts";
export type { SandboxLayer } from "./protocol/sandbox-policy.ts";
export type { PluginKind } from "./protocol/host-args.ts";
export type { KeptFiles, KindProfile, KindWords } from "./kinds/index.ts";
export type { TrustRequest, ConfirmTrust } from "./trust/check.ts";
export type { Changes, Trust, TrustState } from "./trust/approvals.ts";
export { Plugin, type InvokeOptions, type PluginChange } from "./host/plugin.ts";
export { whenParentDies } from "./host/parent-death.ts";
export type { CallEvent } from "./host/connection.ts";
export type { GateDecision, PermissionAnswer, PermissionHandler, PermissionRequest } from "./host/gate.ts";
export { askedBecause, hiddenBecause, hiddenBy, ruleText, unmatchedText, type Limit, type RuleSource, type ToolPolicy } from "./host/tool-policy.ts";
export type { ToolChoice } from "./discovery/config.ts";
export type { ProjectConfig } from "./discovery/project-config.ts";
export { COST_ESTIMATE, contextCost, type Selection } from "./session/selection.ts";
export { composeInstructions, type InstructionsSource } from "./session/instructions.ts";
export { CxError, EXIT_CODES, type ErrorCode, type NextStep, isCxError, resultExitCode, commandExitCode } from "./errors.ts";
export type { Manifest, Tool, Command } from "./protocol/manifest.ts";
export type { JobResult, CommandResult, Submit, DecidedBy, Spilled } from "./protocol/result.ts";
export { ResultStore, refHex, REF_PREFIX, RESULT_DEFAULTS, type ResultInfo, type ResultOrigin, type StoredResult } from "./results/store.ts";
export { DELIVERY_CAP_DEFAULT, DELIVERY_CAP_MIN } from "./results/deliver.ts";
export { readPage, type ResultPage } from "./results/page.ts";
export type { GivenReference } from "./results/refs.ts";
export { createLogger, type Logger } from "./log.ts";
export type { CxErrorOptions } from "./errors.ts";
export type { Config, PluginConfig } from "./discovery/config.ts";
export type { Folders } from "./discovery/paths.ts";
export type { Resolved, SearchFolder } from "./discovery/discover.ts";
export type { PluginLocation } from "./discovery/resolve.ts";
export type { Approval } from "./trust/approvals.ts";
export type { LoadSet, LoadSetFile } from "./trust/hash.ts";
export type { DependencyPlan, InSetDependency } from "./trust/dependencies.ts";
export type { ReapReport, ReapEntry } from "./reaper/reap.ts";
export type { Outcome } from "./reaper/escalate.ts";
export type { CatalogEntry } from "./discovery/catalog.ts";
export type { Collision } from "./session/names.ts";
export type { ProjectPluginConfig } from "./discovery/project-config.ts";
export type { ToolLayer } from "./session/selection.ts";
export type { ProcessFacts } from "./session/process-facts.ts";
export type { ResultWriter, StoreOptions } from "./results/store.ts";
/** Secrets (issue 40): the session's broker, what a plugin host may ask of it, exact-value redaction. */
export { SecretBroker, type BoundSecret, type SecretSources } from "./secrets/broker.ts";
export type { SecretAccess, SecretAnswer, SecretRefusal } from "./secrets/access.ts";
export { MARKER_PREFIX, Redactor, type Span, StreamRedactor } from "./secrets/redact.ts";
export type { Resolution } from "./secrets/resolve.ts";
export type { SecretBinding } from "./discovery/secret-bindings.ts";
export type { SecretDeclaration } from "./protocol/manifest.ts";
/** Writing a plugin in TypeScript or JavaScript: what its module default-exports. */
export {
  definePlugin,
  LOG_LEVELS,
  type ModulePlugin,
  type PluginContext,
  type CallContext,
  type GateContext,
  type LogLevel,
  type ManifestInput,
  type JobResultInput,
  type GateAnswerInput,
  type SubmitRequestInput,
  type CommandResultInput,
  type Maybe,
  type Awaitable,
} from "./protocol/module-plugin.ts";
