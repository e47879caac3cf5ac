/**
 * The import rules of src/, read from the table in ARCHITECTURE.md: each row's parts may import
 * only the parts its second column names (and npm packages and Node's modules), so the map and
 * the code cannot drift apart. No import circles, type-only imports included. Run by `npm test`
 * (`depcruise src --config .dependency-cruiser.cjs`).
 */
const { readdirSync, readFileSync } = require("node:fs");
const { join } = require("node:path");

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A name as the table writes it: `host/` a folder of src/, `errors.ts` a file of src/; any other path is the repository's. */
const pathOf = (name) => {
  const inSrc = /^[\w-]+\/$/.test(name) || /^[\w.-]+\.ts$/.test(name);
  return `^${inSrc ? "src/" : ""}${escape(name)}${name.endsWith("/") ? "" : "$"}`;
};
const names = (cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);

const map = readFileSync(join(__dirname, "ARCHITECTURE.md"), "utf8");
const rows = map
  .split("\n")
  .filter((line) => /^\| `/.test(line))
  .map((line) => line.split("|").slice(1, 3).map(names));
if (rows.length === 0) throw new Error("ARCHITECTURE.md has no table of parts");

const named = new Set(rows.flatMap(([parts]) => parts));
const unnamed = readdirSync(join(__dirname, "src"), { withFileTypes: true })
  .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
  .filter((name) => !named.has(name));
if (unnamed.length) throw new Error(`ARCHITECTURE.md's table names no row for src/${unnamed.join(", src/")}: add one, with what it may import`);

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "a part's files import each other in no loop",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
  ],
  allowed: [
    { comment: "npm packages and Node's modules", from: {}, to: { dependencyTypesNot: ["local", "localmodule", "aliased", "aliased-tsconfig", "unknown", "undetermined"] } },
    // The shim's build, embedded in the compiled binary: not there yet in a fresh clone before
    // build-native runs, when the import resolves to nothing (and so names no part of the table).
    { comment: "the compiled binary's embedded shim", from: { path: "^src/plugin-host/_shim-embedded\\.ts$" }, to: { path: "ffi/build/cxagent_shim\\.(so|c)$" } },
    { comment: "the compiled binary's embedded sandbox launcher", from: { path: "^src/sandbox/_launcher-embedded\\.ts$" }, to: { path: "ffi/build/cxagent-sandbox\\.bin$" } },
    ...rows.map(([parts, imports]) => ({
      comment: `ARCHITECTURE.md: ${parts.join(", ")} may import ${imports.join(", ") || "nothing"}`,
      from: { path: parts.map(pathOf) },
      to: { path: [...parts.map(pathOf), ...imports.map(pathOf)] },
    })),
  ],
  allowedSeverity: "error",
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    // Packages that export ES modules only (citty, the MCP SDK) resolve by their "import" condition.
    enhancedResolveOptions: { conditionNames: ["import", "require", "node", "default"], exportsFields: ["exports"] },
    exclude: { path: "node_modules" },
  },
};
