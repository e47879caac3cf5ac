import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { EXIT_CODES } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { globalOptions, pluginArg } from "../_args.ts";
import type { CommandResult } from "../_output.ts";
import { openSession } from "../_session.ts";

/**
 * `cxagent secrets <plugin>`: each secret its sidecar declares, what config.json binds it to, and
 * whether that resolves now (a file is read, a command is run, a variable is looked up); never a
 * value. No plugin code runs. Exit 3 when a bound secret does not resolve.
 */
export default defineCommand({
  meta: commandMeta({
    name: "secrets",
    description: "Each secret a plugin declares, what your config.json binds it to, and whether it resolves now (never the value; no plugin code runs)",
    summary: "List a plugin's secrets, their bindings and whether they resolve",
  }),
  args: { ...pluginArg },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    await using session = await openSession(options);
    const inspected = session.inspect(args.plugin);
    const declared = inspected.manifest.secrets ?? [];
    const bound = session.secrets.bindings(inspected.name, declared);
    const resolved = await Promise.all(bound.map((s) => (s.binding ? session.secrets.resolve(inspected.name, s) : null)));
    const secrets = bound.map((s, i) => {
      const got = resolved[i];
      return {
        name: s.name,
        description: s.description,
        binding: s.binding,
        bindingText: s.bindingText,
        removedBy: s.removedBy,
        resolves: got?.ok ?? false,
        problem: got && !got.ok ? got.message : null,
      };
    });
    const named = Object.keys(session.config.plugins.get(inspected.name)?.secrets ?? {});
    const undeclared = named.filter((n) => !declared.some((d) => d.name === n));
    const failed = secrets.filter((s) => s.binding && !s.resolves).length;
    const lines = secrets.map((s) => {
      const state = s.resolves ? "resolves" : s.binding ? `does not resolve: ${inert(s.problem ?? "")}` : "not bound";
      return `${inert(s.name)}${s.description ? `  ${inert(s.description)}` : ""}\n  binding  ${inert(s.bindingText)}\n  ${state}`;
    });
    if (!declared.length) lines.push(`${inert(inspected.name)} declares no secrets`);
    for (const n of undeclared) lines.push(`warning: ${inert(session.configFile)} binds '${inert(n)}', which ${inert(inspected.name)} does not declare; it is never given`);
    return {
      json: { plugin: inspected.name, folder: inspected.loadSet.realFolder, secrets, undeclaredBindings: undeclared },
      text: lines.join("\n"),
      exitCode: failed ? EXIT_CODES.E_CONFIG : 0,
    };
  },
});
