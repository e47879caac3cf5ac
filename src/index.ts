/**
 * The cxagent library API, for scripts run with `bun run` (SPEC §10).
 */
export { Session, BUILTIN_TOOLS, type SessionOptions, type LoadOptions, type AvailablePlugin } from "./host/session.ts";
export type { Inspection, SettingsSource, Shadowing } from "./session/inspect.ts";
export type { TrustRequest, ConfirmTrust } from "./trust/check.ts";
export { Plugin, type InvokeOptions, type PluginChange } from "./host/plugin.ts";
export type { CallEvent } from "./host/plugin-process.ts";
export type { Approval, Approver, GateDecision, PermissionRequest } from "./host/gate.ts";
export { CxError, EXIT_CODES, type ErrorCode, isCxError } from "./errors.ts";
export type { Manifest, Tool, Command } from "./protocol/manifest.ts";
export type { JobResult, CommandResult, Submit } from "./protocol/result.ts";
export { createLogger } from "./log.ts";
