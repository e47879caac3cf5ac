/**
 * Run by end-group.test.ts inside a private pid namespace, as `setsid bun end-group-child.ts`: the
 * leader of a process group of its own, not pid 1. It asks endGroup to end the groups it must
 * never signal, then one it may, and prints what survived.
 */
import { endGroup } from "../../src/plugin-host/process-run.ts";

const own = Bun.spawn(["sleep", "30"], { detached: true }); // a group of its own
const mate = Bun.spawn(["sleep", "30"]); // in this script's group
const running = (p: typeof own) => p.exitCode === null && p.signalCode === null;
await Bun.sleep(100);
for (const group of [0, 1, -1, process.pid]) endGroup(group);
await Bun.sleep(400);
console.log(JSON.stringify({ own: running(own), mate: running(mate) }));
endGroup(own.pid);
await Promise.race([own.exited, Bun.sleep(5000)]);
console.log(JSON.stringify({ ownEnded: !running(own), mate: running(mate) }));
mate.kill("SIGKILL");
own.kill("SIGKILL");
