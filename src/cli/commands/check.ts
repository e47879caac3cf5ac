import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { checkPlugin } from "../../check/run.ts";
import type { CheckReport } from "../../check/report.ts";
import { CxError, EXIT_CODES, isCxError } from "../../errors.ts";
import { globalOptions, hashArg, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { isInteractive } from "../_prompt.ts";
import { openSession } from "../_session.ts";
import { describeTrustRequest } from "../_trust-prompt.ts";
import { choose } from "../_prompt.ts";
import type { TrustRequest } from "../../trust/check.ts";
import { selfCommand, shellWord } from "../_hints.ts";
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
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const hash = hashArg(args.hash);
    const only = typeof args.only === "string" ? args.only.split(",").map((s) => s.trim()).filter(Boolean) : undefined;
    // A state folder of its own: what check approves, records and leaves is thrown away with it.
    const stateDir = mkdtempSync(join(tempFolder(), "cxagent-check-state-"));
    try {
      // Module snapshots go where the user's own sessions put them: a private folder, not the temporary one.
      await using session = await openSession({ ...options, stateDir, snapshotDir: snapshotBase(resolveFolders(options).stateDir) });
      if (hash !== undefined) {
        // An unreadable sidecar or a library that cannot load is not approved (nothing of it will
        // run); the report says what is wrong with it.
        await session.approve(args.plugin, { hash }).catch((error: unknown) => {
          if (!isCxError(error, "E_MANIFEST") && !isCxError(error, "E_LOAD")) throw error;
        });
      }
      const report = await checkPlugin(session, args.plugin, { confirmTrust: hash === undefined && isInteractive() ? askForThisCheck : undefined, only }).catch((error: unknown) => {
        if (!isCxError(error, "E_NOT_APPROVED")) throw error;
        const computed = String(error.details?.hash ?? "");
        throw new CxError("E_NOT_APPROVED", `plugin '${String(error.details?.plugin)}' was not checked: check runs its code, so a person must approve its files first (hash ${computed})`, {
          hint: `run '${selfCommand()} check ${shellWord(args.plugin)}' on a terminal to be asked, or, after reviewing them, '${selfCommand()} check ${shellWord(args.plugin)} --hash ${computed}'`,
          details: error.details,
        });
      });
      return { json: report, text: reportText(report), exitCode: report.ok ? 0 : EXIT_CODES.E_PLUGIN_FAILED };
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
});

/** The trust prompt, for this check's run only: nothing of it is recorded where a later load would find it. */
async function askForThisCheck(request: TrustRequest): Promise<boolean> {
  err(`${describeTrustRequest(request)}\n`);
  const answer = await choose("Approve these exact files for this check?", [
    { key: "y", label: "yes", value: "yes" },
    { key: "n", label: "no", value: "no" },
  ], "no");
  if (answer === "yes") err(`approved for this check only; nothing was recorded ('${selfCommand()} approve' approves it for use)\n`);
  return answer === "yes";
}

const LABEL = { pass: "pass", warn: "warn", fail: "FAIL", skip: "skip" } as const;
const WIDTH = 100;

function reportText(report: CheckReport): string {
  const idWidth = Math.max(...report.checks.map((c) => c.id.length), 8);
  const indent = " ".repeat(2 + 4 + 2 + idWidth + 2);
  // The report quotes the plugin (its names, its answers, its errors): inert wherever it goes.
  const lines = [`cxagent check: ${inert(report.plugin)}${report.version ? ` ${inert(report.version)}` : ""} (${inert(report.library)})`, ""];
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
