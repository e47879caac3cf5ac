import { defineCommand } from "citty";
import { commandMeta } from "../_meta.ts";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { CxError, isCxError } from "../../errors.ts";
import { inert } from "../../inert.ts";
import { isPluginName } from "../../protocol/manifest.ts";
import { globalOptions, hashArg } from "../_args.ts";
import { hintCommand, shellWord } from "../_hints.ts";
import type { CommandResult } from "../_output.ts";
import { isInteractive } from "../_prompt.ts";
import { openSession } from "../_session.ts";
import { trustPrompt } from "../_trust-prompt.ts";
import { installedFolder, pluginsFolder } from "../_installed.ts";

/** Archives `install` unpacks with tar(1): npm's .tgz, and the plain and compressed tars. */
const TARBALL = /\.(tgz|tar|tar\.gz|tar\.xz|tar\.bz2|tar\.zst)$/;

export default defineCommand({
  meta: commandMeta({
    name: "install",
    description: "Copy a plugin (a folder or a tarball) into the plugins folder and approve its exact files: asks on a terminal, or checks --hash",
    summary: "Copy a plugin (folder or tarball) into the plugins folder and approve its files",
  }),
  args: {
    source: { type: "positional", description: "The plugin's folder, or a tarball of it (.tgz, .tar.gz, .tar, …; one top folder, as npm pack makes, is entered)", required: true },
    hash: { type: "string", description: "Approve without asking, only if the copied files hash to this (64 hex digits; describe shows it)", valueHint: "HEX" },
  },
  async run({ args }): Promise<CommandResult> {
    const options = globalOptions(args);
    const hash = hashArg(args.hash);
    const source = resolve(options.cwd, String(args.source));
    if (!existsSync(source)) throw new CxError("E_NOT_FOUND", `nothing to install at ${source}: it does not exist`, { hint: "give the plugin's folder, or a tarball of it" });
    await using session = await openSession(options);
    const plugins = pluginsFolder(session.folders.configDir);
    mkdirSync(plugins, { recursive: true });
    // Unpacked and copied under a name discovery skips (it ignores names starting with "."), then moved into place.
    const staging = mkdtempSync(join(plugins, ".installing-"));
    try {
      const folder = statSync(source).isDirectory() ? copyFolder(source, join(staging, "copy")) : unpack(source, join(staging, "copy"));
      const inspected = session.inspect(folder);
      const name = inspected.name;
      if (!isPluginName(name)) throw new CxError("E_MANIFEST", `the plugin's name ${JSON.stringify(name)} cannot name a folder`);
      const target = installedFolder(session.folders.configDir, name);
      const holder = session.catalog().find((e) => e.name === name);
      if (existsSync(target) || holder) {
        const where = holder?.location?.folder ?? target;
        throw new CxError("E_INVALID_INPUT", `a plugin named '${name}' is already ${where === target ? "installed" : "found"} at ${where}: installing another would make one of them unreachable by name`, {
          hint: where === target ? `'${hintCommand(`uninstall ${shellWord(name)}`)}' removes the installed one first` : "rename one of them (its sidecar's name), or load the other by its path",
          details: { plugin: name, folder: where },
        });
      }
      renameSync(folder, target);
      try {
        const approved = await session.approve(target, { hash, confirm: isInteractive() ? trustPrompt(session.folders.stateDir) : undefined });
        return {
          json: { ...approved, installed: true, source },
          text: `installed ${inert(approved.plugin)} ${inert(approved.version)} at ${inert(target)}, approved${hash ? " by pinned hash" : ""} (hash ${approved.hash})`,
        };
      } catch (error) {
        // Not approved: nothing stays behind, as if it had never been installed.
        rmSync(target, { recursive: true, force: true });
        if (isCxError(error, "E_NEEDS_TTY")) {
          throw new CxError("E_NEEDS_TTY", `installing plugin '${name}' needs its files approved, and there is no terminal to ask on; nothing was installed`, {
            hint: `review its files ('${hintCommand(`describe ${shellWord(String(args.source))}`)}'), then install it with '${hintCommand(`install ${shellWord(String(args.source))} --hash ${inspected.loadSet.hash}`)}'`,
            details: error.details,
          });
        }
        if (isCxError(error)) throw new CxError(error.code, `${error.message}; nothing was installed`, { hint: error.hint, details: error.details });
        throw error;
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  },
});

function copyFolder(from: string, to: string): string {
  // Symbolic links are copied as links: what is hashed and approved is what the source held.
  cpSync(from, to, { recursive: true, verbatimSymlinks: true, errorOnExist: true });
  return to;
}

function unpack(tarball: string, to: string): string {
  if (!TARBALL.test(tarball)) throw new CxError("E_INVALID_INPUT", `${tarball} is neither a folder nor a tarball (.tgz, .tar.gz, .tar, .tar.xz, .tar.bz2, .tar.zst)`);
  mkdirSync(to);
  // GNU tar refuses members that would land outside `to` (absolute names, ..); ownership is ours.
  const tar = Bun.spawnSync(["tar", "-x", "-f", tarball, "-C", to, "--no-same-owner"], { stdout: "ignore", stderr: "pipe" });
  if (tar.exitCode !== 0) throw new CxError("E_INVALID_INPUT", `could not unpack ${tarball}: ${tar.stderr.toString().trim() || `tar exited with ${tar.exitCode}`}`);
  // npm pack puts everything under package/: one top folder and nothing else is entered.
  const top = readdirSync(to);
  return top.length === 1 && statSync(join(to, top[0]!)).isDirectory() ? join(to, top[0]!) : to;
}
