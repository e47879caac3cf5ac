/**
 * The library (session/ and below) never names a CLI flag: an error carries a structured `next`
 * step, which the CLI words with its own flags (cli/_hints.ts). The plugin host's own command
 * line (protocol/host-args.ts) is the host's, not the CLI's.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");
const LIBRARY = ["session", "host", "discovery", "trust", "reaper", "json-schema", "protocol", "kinds", "elf", "errors.ts", "files.ts", "lock.ts", "index.ts"];
/** The CLI's flags, in a string the code builds (a comment may name them). */
const FLAG = /["'`][^"'`]*--(cwd|json|jsonl|verbose|state-dir|config-dir|allow|once|live|hash|timeout|args|args-file|readme|all-folders|lang|arg|field)\b/;
/** A kind profile's `words` are the CLI's words for that kind by design (KindProfile.words): the one exception. */
const CLI_WORDS = /^\s*listNote: /;

function files(path: string): string[] {
  try {
    return readdirSync(path, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(path, e.name)) : e.name.endsWith(".ts") ? [join(path, e.name)] : []));
  } catch {
    return [path];
  }
}

test("no string of the library names a CLI flag", () => {
  const named: string[] = [];
  for (const file of LIBRARY.flatMap((p) => files(join(SRC, p)))) {
    readFileSync(file, "utf8").split("\n").forEach((line, i) => {
      if (/^\s*(\/?\*|\/\/)/.test(line) || CLI_WORDS.test(line)) return;
      if (FLAG.test(line)) named.push(`src/${relative(SRC, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(named).toEqual([]);
  expect(FLAG.test(`hint: "give --cwd an existing folder",`)).toBe(true);
});
