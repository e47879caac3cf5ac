/**
 * Which ABI a plugin library speaks, decided from its exports before any of its code runs
 * (src/discovery/kind.ts).
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { kindOfBytes, kindOfExports } from "../../src/discovery/kind.ts";
import { fixtureLibrary } from "../helpers.ts";

test("which ABI a library speaks: cortex_plugin_init and no cxagent_plugin_* is Cortex, anything else is cxagent's", () => {
  expect(kindOfExports(["cortex_plugin_init"])).toBe("cortex");
  expect(kindOfExports(["cortex_plugin_init", "helper"])).toBe("cortex");
  expect(kindOfExports(["cortex_plugin_init", "cxagent_plugin_describe"])).toBe("native");
  expect(kindOfExports(["cxagent_plugin_describe"])).toBe("native");
  expect(kindOfExports([])).toBe("native");
  expect(kindOfBytes(readFileSync(fixtureLibrary("cortex-basic")))).toBe("cortex");
  expect(kindOfBytes(readFileSync(fixtureLibrary("echo")))).toBe("native");
  expect(kindOfBytes(Buffer.from("not a library"))).toBe("native");
});

test("a library whose symbol table cannot be read is left to the load, which says why", () => {
  const bytes = Buffer.from(readFileSync(fixtureLibrary("cortex-basic")));
  bytes.writeUInt16LE(56 * 1000, 56); // e_phnum: program headers past the end of the file
  expect(kindOfBytes(bytes)).toBe("native");
});
