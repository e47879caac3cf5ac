/**
 * What a plugin host's connection may ask of the session's secrets (issue 40): the value of one
 * name, for this plugin only, and the redactor every text from any plugin passes through.
 */
import type { Redactor } from "./redact.ts";

/** Why a name was not given: the manifest does not declare it, nothing is bound to it, or it did not resolve. */
export type SecretRefusal = "undeclared" | "unbound" | "unavailable";

export type SecretAnswer = { ok: true; value: Uint8Array } | { ok: false; code: SecretRefusal; message: string };

export interface SecretAccess {
  readonly redactor: Redactor;
  /** The value of `name` for this plugin (declared in its approved sidecar, bound by the user), or why not. */
  request(name: string): Promise<SecretAnswer>;
}
