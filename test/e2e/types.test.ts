/**
 * The library is a good npm citizen: its declarations (types/, built by scripts/build-types.ts)
 * type-check a consumer's script under a strict tsconfig (test/fixtures/consumer), and every type
 * a public function, class or option takes or returns is itself exported from "cxagent".
 */
import { beforeAll, expect, test } from "bun:test";
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { ROOT, tempDir } from "../helpers.ts";

let types: string;
let dir: { path: string } & Disposable;

beforeAll(() => {
  dir = tempDir("cxagent-types-");
  types = join(dir.path, "package", "types");
  // A copy of the package as a consumer installs it: its files, its types built fresh.
  const pkg = join(dir.path, "package");
  mkdirSync(pkg);
  for (const f of ["package.json", "src", "bin"]) cpSync(join(ROOT, f), join(pkg, f), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(pkg, "node_modules"));
  const built = Bun.spawnSync([process.execPath, join(ROOT, "scripts/build-types.ts"), types], { cwd: ROOT, stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error(built.stderr.toString());
}, 240_000);

test("a consumer's script type-checks under NodeNext, exactOptionalPropertyTypes and noUncheckedIndexedAccess, sync callbacks included", () => {
  const consumer = join(dir.path, "consumer");
  cpSync(join(ROOT, "test/fixtures/consumer"), consumer, { recursive: true });
  mkdirSync(join(consumer, "node_modules/@types"), { recursive: true });
  symlinkSync(join(dir.path, "package"), join(consumer, "node_modules/cxagent"));
  symlinkSync(join(ROOT, "node_modules/@types/bun"), join(consumer, "node_modules/@types/bun"));
  symlinkSync(join(ROOT, "node_modules/bun-types"), join(consumer, "node_modules/bun-types"));
  const tsc = Bun.spawnSync([join(ROOT, "node_modules/.bin/tsc"), "-p", consumer, "--pretty", "false"], { cwd: consumer });
  expect({ code: tsc.exitCode, errors: tsc.stdout.toString() }).toEqual({ code: 0, errors: "" });
  // tsc is CPU-bound: about 15 s alone, over 60 s beside two busy loops and other suites
}, 240_000);

test("every type the public API names is exported", () => {
  const index = join(types, "index.d.ts");
  const program = ts.createProgram([index], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: ["bun"], typeRoots: [join(ROOT, "node_modules/@types")] });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(index)!)!;
  const exported = new Set<ts.Symbol>();
  for (const s of checker.getExportsOfModule(module)) exported.add(s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const missing = new Set<string>();
  const visit = (node: ts.Node, owner: string) => {
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      const name = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      let symbol = checker.getSymbolAtLocation(name);
      if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
      const declaration = symbol?.declarations?.[0];
      const file = declaration?.getSourceFile().fileName ?? "";
      const ours = file.startsWith(types);
      if (symbol && ours && !(symbol.flags & ts.SymbolFlags.TypeParameter) && !exported.has(symbol)) {
        missing.add(`${symbol.name} (named by ${owner}, declared in ${relative(types, file)})`);
      }
    }
    // private members carry no types a consumer can name
    if ((ts.isPropertyDeclaration(node) || ts.isMethodDeclaration(node)) && node.modifiers?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) return;
    ts.forEachChild(node, (child) => visit(child, owner));
  };
  for (const symbol of exported) {
    for (const declaration of symbol.declarations ?? []) {
      // a valibot schema's inferred type is spelled through valibot's own types: not ours to export
      if (ts.isVariableDeclaration(declaration) && /Schema$/.test(symbol.name)) continue;
      visit(declaration, symbol.name);
    }
  }
  expect([...missing].sort()).toEqual([]);
});
