/**
 * A process plugin's call is ended by its process group (plugin-host/process-run.ts endGroup):
 * never group 0 (the host's own, by kill(0)), never 1 (kill(-1): every process it may signal),
 * never the host's own group. Tried where such a mistake reaches nothing outside: a private pid
 * namespace, the host a group leader of its own there.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { inPidNamespace, PID_NAMESPACE } from "../isolation.ts";

test.skipIf(!PID_NAMESPACE)("endGroup spares groups 0, 1, below 1 and the host's own, and ends the group it is given", async () => {
  const run = await inPidNamespace(`setsid ${process.execPath} ${join(import.meta.dir, "end-group-child.ts")}`);
  expect(run.stderr).not.toContain("pid 1 got SIGTERM");
  expect(run.stdout.trim().split("\n").map((line) => JSON.parse(line))).toEqual([
    { own: true, mate: true },
    { ownEnded: true, mate: true },
  ]);
}, 30_000);
