/**
 * How the CLI decides calls that need permission (SPEC §9): ask on a terminal; without one, allow
 * only with --allow (the display goes to stderr so the log shows what was allowed), else deny.
 */
import type { PermissionHandler } from "../host/gate.ts";
import { type Choice, choose, isInteractive } from "./_prompt.ts";
import { inert } from "../inert.ts";
import { askedBecause } from "../host/tool-policy.ts";
import { join } from "node:path";
import { hintCommand, shellWord } from "./_hints.ts";
import { err } from "./_stdio.ts";

/** The plugin's wording of a call, inert; its later lines indented so none can pass for our legend. */
export function shownDisplay(display: string | null): string {
  return (display ?? "").split(/\r?\n/).map(inert).join("\n    ");
}

/** Where an Always answer is stored: the state folder's permissions.json, for the project folder. */
export interface GrantPlace {
  stateDir: string;
  project: string;
}

export function cliPermission(allow: boolean, place: GrantPlace): PermissionHandler | undefined {
  if (isInteractive()) return askOnTerminal(place);
  if (allow) {
    return ({ decision }) => {
      err(`allowed by --allow: ${shownDisplay(decision.display)}\n`);
      return "once";
    };
  }
  return undefined;
}

/** The same keys as the trust prompt: y allows (once), n denies, a allows always where offered. */
const askOnTerminal = (place: GrantPlace): PermissionHandler => async ({ decision }) => {
  const choices: Choice<"once" | "always" | "deny">[] = [
    { key: "y", label: "allow once", value: "once" },
    ...(decision.alwaysOffered ? [{ key: "a", label: "always", value: "always" as const }] : []),
    { key: "n", label: "deny", value: "deny" },
  ];
  const legend = decision.alwaysOffered
    ? `y = allow once, a = always allow ${decision.rule} in this project, n = deny`
    : "y = allow once, n = deny";
  const why = decision.forcedBy ? `this tool ${inert(askedBecause(decision.forcedBy))}\n` : "";
  err(`${shownDisplay(decision.display)}\n${why}${legend}\n`);
  const answer = await choose("Allow this call?", choices, "deny");
  if (answer === "always" && decision.rule) {
    err(`always: stored '${decision.rule}' for ${inert(place.project)} in ${join(place.stateDir, "permissions.json")}; to remove it: ${hintCommand(`grants --revoke ${shellWord(decision.rule)}`)}\n`);
  }
  return answer;
};
