/** claimStdout(): after it, only MCP frames reach fd 1 (checked in a process of its own). */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";

test("console.log, console.info, console.table and process.stdout.write go to stderr; frames to stdout", async () => {
  const script = `
    import { claimStdout } from ${JSON.stringify(join(ROOT, "src/mcp/stdout.ts"))};
    const frame = claimStdout();
    console.log("log noise");
    console.info("info noise");
    console.table([{ a: 1 }]); // any console method that prints to stdout
    process.stdout.write("write noise\\n");
    frame('{"jsonrpc":"2.0","method":"ping","id":1}\\n');
  `;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(code).toBe(0);
  expect(stdout).toBe('{"jsonrpc":"2.0","method":"ping","id":1}\n');
  for (const noise of ["log noise", "info noise", "write noise", "a: 1"]) expect(stderr).toContain(noise);
});
