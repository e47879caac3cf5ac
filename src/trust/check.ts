/**
 * The trust decision for one load (SPEC §6.3): when the exact load set at its folder was not
 * approved, ask a person (through the caller's ConfirmTrust; this file knows no terminal) — or refuse. Runs before any process exists. What the person is shown
 * is built from the same bytes that are hashed and loaded, and every string from the plugin or
 * its folder is made inert for the terminal.
 */
import { CxError } from "../errors.ts";
import { inert } from "../inert.ts";
import type { Manifest } from "../protocol/manifest.ts";
import type { Changes, TrustState } from "./approvals.ts";
import type { PluginKind } from "../protocol/host-args.ts";

export interface TrustRequest {
  name: string;
  /** What it declares before it runs (a Cortex plugin: no tools, which only its running code declares). */
  manifest: Manifest;
  /** Which ABI it speaks. */
  kind: PluginKind;
  /** A Cortex plugin: where its name came from, and what its manifest.toml says of it. */
  cortex: { manifest: string | null; description: string | null; versionDeclared: boolean } | null;
  /** A Cortex process plugin's commands, each tool's, and the paths outside its folder it runs. */
  process?: { manifest: string; runs: { tool: string; command: string; args: string[]; outside: string[] }[] } | null;
  library: string;
  folder: string;
  /** The folder's real path: what the approval is bound to. */
  realFolder: string;
  hash: string;
  state: TrustState;
  /** What changed since the approval at this folder (state "changed"); null when not recorded. */
  changes: Changes | null;
  /** Folders where a same-named plugin is approved: a different plugin from this one. */
  approvedElsewhere: string[];
  /** Other plugins whose files are in the same load set. */
  sharesWith: string[];
  /** The config.json entry whose settings it will receive, by key names. */
  settings: { entry: string; keys: string[] } | null;
  /** Libraries from its folder the loader maps for it, from their approved copies. */
  ships: string[];
}

/** Asks a person whether to approve; true only when they did. A prompt, or an app's own dialog. */
export type ConfirmTrust = (request: TrustRequest) => boolean | Promise<boolean>;

/** "modified: README.md; added: x.so" — every file name made inert. */
export function describeChanges(changes: Changes | null): string {
  if (changes === null) return "which ones is not known: the earlier approval was made by an older cxagent, which kept no file list";
  const parts = (["modified", "added", "removed"] as const)
    .filter((k) => changes[k].length)
    .map((k) => `${k}: ${changes[k].map(inert).join(", ")}`);
  return parts.join("; ") || "no file, but the hash differs";
}

export function otherFolderSentence(name: string, elsewhere: readonly string[], here: string): string {
  const where = elsewhere.map(inert).join(", ");
  return `another plugin named ${inert(name)} is approved from ${where}; this one is at ${inert(here)}`;
}

/**
 * Throws E_NOT_APPROVED when nobody can be asked, E_DENIED when the person said no; returns when
 * the exact load set is approved (already, or just now by the person; the caller records it).
 */
export async function confirmTrusted(request: TrustRequest, options: { approveCommand: string; confirm?: ConfirmTrust }): Promise<"already" | "now"> {
  if (request.state === "approved") return "already";
  if (!options.confirm) throw notApproved(request, options.approveCommand);
  if (!(await options.confirm(request))) {
    throw new CxError("E_DENIED", `plugin '${request.name}' was not approved, so it was not loaded`);
  }
  return "now";
}

export function notApproved(request: TrustRequest, approveCommand: string): CxError {
  const why =
    request.state === "changed"
      ? `its files changed since it was approved (${describeChanges(request.changes)})`
      : request.approvedElsewhere.length
        ? `it has not been approved: ${otherFolderSentence(request.name, request.approvedElsewhere, request.realFolder)}`
        : "it has not been approved";
  return new CxError("E_NOT_APPROVED", `plugin '${request.name}' was not loaded: ${why} (hash ${request.hash})`, {
    hint: "review its files, then approve exactly these: a person at a prompt, or by pinning this hash",
    next: { do: "approve", ref: approveCommand, hash: request.hash },
    details: {
      plugin: request.name,
      hash: request.hash,
      folder: request.realFolder,
      state: request.state,
      changes: request.changes,
      approvedElsewhere: request.approvedElsewhere,
    },
  });
}

