/**
 * The trust decision for one load (SPEC §6.3): hash the load set, compare with approvals.json, and
 * when the exact bytes were not approved, ask a person — or refuse. Runs before any process exists.
 */
import { basename } from "node:path";
import { CxError } from "../errors.ts";
import type { Manifest } from "../protocol/manifest.ts";
import { SIDECAR_SUFFIX } from "../discovery/sidecar.ts";
import { readApprovals, recordApproval, type TrustState, trustState } from "./approvals.ts";
import { type LoadSet, loadSetHash } from "./hash.ts";
import { choose } from "../prompt.ts";

export interface TrustRequest {
  name: string;
  manifest: Manifest;
  library: string;
  folder: string;
  hash: string;
  state: TrustState;
  /** Other plugins whose files are in the same load set. */
  sharesWith: string[];
}

/** Asks a person; resolves true only when they approved. */
export type ConfirmTrust = (request: TrustRequest) => Promise<boolean>;

/** The other plugins whose sidecars are in `library`'s load set. */
export function sharersOf(files: readonly string[], library: string): string[] {
  const ownSidecar = `${basename(library).replace(/\.[^.]+$/, "")}${SIDECAR_SUFFIX}`;
  return files.filter((f) => f.endsWith(SIDECAR_SUFFIX) && f !== ownSidecar).map((f) => basename(f, SIDECAR_SUFFIX));
}

export function trustRequest(name: string, manifest: Manifest, library: string, loadSet: LoadSet, state: TrustState): TrustRequest {
  return { name, manifest, library, folder: loadSet.folder, hash: loadSet.hash, state, sharesWith: sharersOf(loadSet.files, library) };
}

/** The approval prompt on the terminal (SPEC §6.3): default No, Ctrl-C is No. */
export async function askOnTerminal(request: TrustRequest): Promise<boolean> {
  process.stderr.write(`${describeTrustRequest(request)}\n`);
  const answer = await choose("Approve these exact files?", [
    { key: "y", label: "yes", value: "yes" },
    { key: "n", label: "no", value: "no" },
  ], "no");
  return answer === "yes";
}

/**
 * Returns the hashed load set (with the library's bytes) once its exact bytes are approved.
 * Throws E_NOT_APPROVED when nobody can be asked, E_DENIED when the person said no.
 */
export async function ensureTrusted(options: {
  stateDir: string;
  name: string;
  manifest: Manifest;
  library: string;
  folder: string;
  approveCommand: string;
  confirm?: ConfirmTrust;
}): Promise<LoadSet> {
  const loadSet = loadSetHash(options.folder, options.library);
  const state = trustState(readApprovals(options.stateDir), options.name, loadSet.hash);
  if (state === "approved") return loadSet;
  const request = trustRequest(options.name, options.manifest, options.library, loadSet, state);
  if (!options.confirm) {
    const why = state === "changed" ? "its files changed since it was approved" : "it has not been approved";
    throw new CxError("E_NOT_APPROVED", `plugin '${options.name}' was not loaded: ${why} (hash ${loadSet.hash})`, {
      hint: `review it with 'cxagent describe ${options.approveCommand}', then approve it: 'cxagent approve ${options.approveCommand}' on a terminal, or 'cxagent approve ${options.approveCommand} --hash ${loadSet.hash}'`,
      details: { plugin: options.name, hash: loadSet.hash, folder: options.folder, state },
    });
  }
  if (!(await options.confirm(request))) {
    throw new CxError("E_DENIED", `plugin '${options.name}' was not approved, so it was not loaded`);
  }
  recordApproval(options.stateDir, options.name, loadSet.hash, options.folder);
  return loadSet;
}

/** The approval prompt's text (SPEC §6.3). */
export function describeTrustRequest(request: TrustRequest): string {
  const m = request.manifest;
  const dynamic = m.tools.filter((t) => t.gated === "dynamic").map((t) => t.name);
  const lines = [
    request.state === "changed"
      ? `Plugin ${m.name} ${m.version} changed since you approved it.`
      : `Plugin ${m.name} ${m.version} has not been approved yet.`,
    `  folder        ${request.folder}  (every file in it is covered)`,
    `  hash          ${request.hash}`,
    `  tools         ${m.tools.length}${m.tools.length ? `: ${m.tools.map((t) => t.name).join(", ")}` : ""}`,
    `  asks per call ${dynamic.length ? `depending on its arguments: ${dynamic.join(", ")}` : "never depending on arguments"}`,
    `  instructions  ${m.instructions ? "adds instructions for the model" : "none"}`,
    `  processes     ${m.spawns ? "starts processes of its own" : "starts none"}`,
    `  on its own    ${m.client ? "can start work by itself (client)" : "only acts when called"}`,
    `  shares folder ${request.sharesWith.length ? `with ${request.sharesWith.join(", ")}` : "with no other plugin"}`,
    "Loading it runs its code with your permissions.",
  ];
  return lines.join("\n");
}
