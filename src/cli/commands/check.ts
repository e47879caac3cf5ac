import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkPlugin } from "../../check/run.ts";
import type { CheckReport } from "../../check/report.ts";
import { CxError, EXIT_CODES, isCxError } from "../../errors.ts";
import { type GlobalOptions, globalOptions, hashArg, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { isInteractive } from "../_prompt.ts";
import { openSession } from "../_session.ts";
import { describeTrustRequest } from "../_trust-prompt.ts";
import { choose } from "../_prompt.ts";
import type { TrustRequest } from "../../trust/check.ts";
import { hintCommand, shellWord } from "../_hints.ts";
import { inert } from "../../inert.ts";
import { err } from "../_stdio.ts";
import { tempFolder } from "../../files.ts";
import { snapshotBase } from "../../host/private-folder.ts";
import { resolveFolders } from "../../discovery/paths.ts";

export default defineCommand({
  meta: commandMeta({
    name: "check",
    description: "Run a plugin through every check of the contract (exports, sidecar, ownership, results, gate, concurrency, lifecycle, processes), each pass, warn or fail; exit 5 if any fails",
    summary: "Run a plugin through every check of the contract, each pass, warn or fail",
  }),
  args: {
    ...pluginArg,
    hash: { type: "string", description: "Run it without asking, only if its files hash to this (64 hex digits)", valueHint: "HEX" },
    only: { type: "string", description: "Run only these checks (comma-separated ids, as the report names them)", valueHint: "IDS" },
    fixture: { type: "string", description: "Call the tools in a scratch copy of this folder (what a tool that reads the project should find); with --cwd instead, they run in the project folder itself and may change it", valueHint: "DIR" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const hash = hashArg(args.hash);
    const only = typeof args.only === "string" ? args.only.split(",").map((s) => s.trim()).filter(Boolean) : undefined;
    const fixture = typeof args.fixture === "string" ? resolve(options.cwd, args.fixture) : undefined;
    // Given --cwd, the tools run in that project folder, as a user's call would; otherwise in a scratch folder.
    const project = typeof args.cwd === "string" ? options.cwd : undefined;
    if (fixture !== undefined && project !== undefined) throw new CxError("E_USAGE", "give --fixture or --cwd, not both: the tools run in one folder");
    if (project !== undefined && !isFolder(project)) throw new CxError("E_INVALID_INPUT", `--cwd ${project} is not a folder`);
    // An approval in the user's own state folder of these exact files counts: no second --hash.
    const approvedHash = hash ?? (await usersApproval(options, args.plugin));
    // A state folder of its own: what check approves, records and leaves is thrown away with it.
    const stateDir = mkdtempSync(join(tempFolder(), "cxagent-check-state-"));
    try {
      // Module snapshots go where the user's own sessions put them: a private folder, not the temporary one.
      await using session = await openSession({ ...options, stateDir, snapshotDir: snapshotBase(resolveFolders(options).stateDir) });
      if (approvedHash !== undefined) {
        // An unreadable sidecar or a library that cannot load is not approved (nothing of it will
        // run); the report says what is wrong with it.
        await session.approve(args.plugin, { hash: approvedHash }).catch((error: unknown) => {
          if (!isCxError(error, "E_MANIFEST") && !isCxError(error, "E_LOAD")) throw error;
        });
      }
      const report = await checkPlugin(session, args.plugin, { confirmTrust: approvedHash === undefined && isInteractive() ? askForThisCheck : undefined, only, project, fixture }).catch((error: unknown) => {
        if (!isCxError(error, "E_NOT_APPROVED")) throw error;
        const computed = String(error.details?.hash ?? "");
        throw new CxError("E_NOT_APPROVED", `plugin '${String(error.details?.plugin)}' was not checked: check runs its code, so a person must approve its files first (hash ${computed})`, {
          hint: `run '${hintCommand(`check ${shellWord(args.plugin)}`)}' on a terminal to be asked, or, after reviewing them, '${hintCommand(`check ${shellWord(args.plugin)} --hash ${computed}`)}'`,
          details: error.details,
        });
      });
      return { json: report, text: reportText(report), exitCode: report.ok ? 0 : EXIT_CODES.E_PLUGIN_FAILED };
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
});

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The hash of the plugin's files when the user's own state folder approves exactly these files,
 * else undefined. Nothing is recorded there: check's approvals stay in its throwaway folder.
 */
async function usersApproval(options: GlobalOptions, ref: string): Promise<string | undefined> {
  await using session = await openSession(options);
  try {
    const inspected = session.inspect(ref);
    return inspected.trust.state === "approved" ? inspected.loadSet.hash : undefined;
  } catch (error) {
    if (isCxError(error) && error.code !== "E_STATE") return undefined; // check itself reports what is wrong with it
    throw error;
  }
}

/** The trust prompt, for this check's run only: nothing of it is recorded where a later load would find it. */
async function askForThisCheck(request: TrustRequest): Promise<boolean> {
  err(`${describeTrustRequest(request)}\n`);
  const answer = await choose("Approve these exact files for this check?", [
    { key: "y", label: "yes", value: "yes" },
    { key: "n", label: "no", value: "no" },
  ], "no");
  if (answer === "yes") err(`approved for this check only; nothing was recorded ('${hintCommand("approve")}' approves it for use)\n`);
  return answer === "yes";
}

const LABEL = { pass: "pass", warn: "warn", fail: "FAIL", skip: "skip" } as const;
const WIDTH = 100;

function reportText(report: CheckReport): string {
  const idWidth = Math.max(...report.checks.map((c) => c.id.length), 8);
  const indent = " ".repeat(2 + 4 + 2 + idWidth + 2);
  // The report quotes the plugin (its names, its answers, its errors): inert wherever it goes.
  const where = report.ranIn.what === "project" ? `in the project folder ${inert(report.ranIn.folder ?? "")}` : report.ranIn.what === "fixture" ? `in a scratch copy of ${inert(report.ranIn.folder ?? "")}` : "in an empty scratch folder (--cwd or --fixture gives the tools a project to read)";
  const lines = [`cxagent check: ${inert(report.plugin)}${report.version ? ` ${inert(report.version)}` : ""} (${inert(report.library)})`, `tools called ${where}`, ""];
  for (const c of report.checks) {
    lines.push(...wrap(`  ${LABEL[c.status]}  ${c.id.padEnd(idWidth)}  `, inert(c.seen), indent));
    if (c.fix) lines.push(...wrap(`${indent}fix: `, inert(c.fix), `${indent}     `));
  }
  const { pass, warn, fail, skip } = report.counts;
  lines.push("", [`${pass} passed`, warn && `${warn} warning${warn === 1 ? "" : "s"}`, fail && `${fail} failed`, skip && `${skip} skipped`].filter(Boolean).join(", "));
  if (report.ended.length) lines.push(`ended ${report.ended.length} process${report.ended.length === 1 ? "" : "es"} the plugin left running: ${report.ended.join(", ")}`);
  return lines.join("\n");
}

/** `text` after `first`, broken at spaces so no line passes WIDTH; later lines start with `rest`. */
function wrap(first: string, text: string, rest: string): string[] {
  const out: string[] = [];
  let line = first;
  let empty = true;
  for (const word of text.split(/\s+/)) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      out.push(line);
      line = rest;
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  out.push(line);
  return out;
}
