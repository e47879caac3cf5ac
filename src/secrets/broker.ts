/**
 * The session's secrets (issue 40): which declared name is bound to what (the user's config.json,
 * less what the project's config removes), resolved only when a plugin host asks, once per
 * session, and every resolved value known to the one redactor all plugin text passes through.
 * Values live in this process's memory only: never in an environment, an argument, a file or a log.
 */
import type { Config } from "../discovery/config.ts";
import type { ProjectConfig } from "../discovery/project-config.ts";
import type { SecretBinding } from "../discovery/secret-bindings.ts";
import type { SecretDeclaration } from "../protocol/manifest.ts";
import type { SecretAccess, SecretAnswer } from "./access.ts";
import { Redactor } from "./redact.ts";
import { describeBinding, type Resolution, resolveBinding } from "./resolve.ts";

/** One declared secret, and what it is bound to. */
export interface BoundSecret {
  name: string;
  description: string;
  /** null: nothing bound (or the project removed it: `removedBy`). */
  binding: SecretBinding | null;
  /** The binding in words, or why there is none. */
  bindingText: string;
  /** The project config file that removed the user's binding, if one did. */
  removedBy: string | null;
}

export interface SecretSources {
  config: Config;
  configFile: string;
  project: ProjectConfig | null;
  env?: NodeJS.ProcessEnv;
}

/**
 * A plugin host's environment less every variable config.json binds a secret to: an `env`
 * binding is read by cxagent, never passed on (not even when CXAGENT_PASS_ENV names it).
 */
export function withoutBoundEnv(env: Record<string, string>, config: Config): Record<string, string> {
  const bound = new Set<string>();
  for (const entry of config.plugins.values()) for (const b of Object.values(entry.secrets ?? {})) if ("env" in b) bound.add(b.env);
  if (!bound.size) return env;
  return Object.fromEntries(Object.entries(env).filter(([k]) => !bound.has(k)));
}

export class SecretBroker {
  readonly redactor = new Redactor();
  /** What each binding resolved to (or is resolving to), by config entry and name: once per session, failures too. */
  private readonly resolved = new Map<string, Promise<Resolution>>();

  constructor(private readonly sources: SecretSources) {}

  /** Each secret `declared` (the approved sidecar's), with its binding from config entry `entry`. */
  bindings(entry: string | undefined, declared: readonly SecretDeclaration[]): BoundSecret[] {
    const mine = entry === undefined ? undefined : this.sources.config.plugins.get(entry)?.secrets;
    const removed = entry === undefined ? undefined : this.sources.project?.plugins.get(entry)?.secrets;
    return declared.map((d) => {
      const given = mine && Object.hasOwn(mine, d.name) ? mine[d.name]! : null;
      const removedBy = given && removed && Object.hasOwn(removed, d.name) ? this.sources.project!.path : null;
      const binding = removedBy ? null : given;
      const bindingText = binding
        ? describeBinding(binding)
        : removedBy
          ? `none: ${removedBy} removes it`
          : `none: add "secrets": {"${d.name}": {"file": …}} to plugins.${entry ?? "<name>"} in ${this.sources.configFile}`;
      return { name: d.name, description: d.description, binding, bindingText, removedBy };
    });
  }

  /**
   * Resolves one bound secret (once per session: a failing command is not run again at every
   * request), and teaches the redactor its value.
   */
  resolve(entry: string | undefined, secret: BoundSecret): Promise<Resolution> {
    const binding = secret.binding;
    if (!binding) return Promise.resolve({ ok: false, message: secret.bindingText });
    const key = `${entry ?? ""}\0${secret.name}`;
    let got = this.resolved.get(key);
    if (!got) {
      got = resolveBinding(binding, this.sources.env).then((r) => {
        if (r.ok) this.redactor.add(secret.name, r.value);
        return r;
      });
      this.resolved.set(key, got);
    }
    return got;
  }

  /**
   * What the host of plugin `plugin` (config entry `entry`, approved sidecar declaring `declared`)
   * may ask for. Handed only to a host started from the approved bytes (session/pipeline.ts).
   */
  accessFor(plugin: string, entry: string | undefined, declared: readonly SecretDeclaration[]): SecretAccess {
    return {
      redactor: this.redactor,
      request: async (name: string): Promise<SecretAnswer> => {
        const secret = this.bindings(entry, declared).find((s) => s.name === name);
        if (!secret) {
          const names = declared.map((d) => d.name);
          return { ok: false, code: "undeclared", message: `plugin '${plugin}' asked for secret '${name}', which its manifest does not declare (it declares ${names.length ? names.join(", ") : "none"})` };
        }
        if (!secret.binding) return { ok: false, code: "unbound", message: `plugin '${plugin}' asked for secret '${name}', which is not bound: ${secret.bindingText}` };
        const got = await this.resolve(entry, secret);
        if (!got.ok) return { ok: false, code: "unavailable", message: `plugin '${plugin}' asked for secret '${name}' (${secret.bindingText}), which did not resolve: ${got.message}` };
        return got;
      },
    };
  }
}
