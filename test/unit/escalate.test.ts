/**
 * src/reaper/escalate.ts's endProcesses with real processes in groups of their own: SIGTERM, the
 * grace period, SIGKILL; a dry run that signals nothing; a pid whose start time is not the
 * recorded one left alone; the members of a group a target made found and ended with it; and
 * which endings leave nothing to remember (finished).
 */
import { expect, test } from "bun:test";
import { endProcesses, type Ending, finished } from "../../src/reaper/escalate.ts";
import type { Owned } from "../../src/reaper/ours.ts";
import { readStat, startTimeOf } from "../../src/reaper/proc.ts";

const owned = (pid: number): Owned => ({ pid, startTime: startTimeOf(pid)!, pgid: pid, sid: pid });
const alive = (pid: number) => {
  const s = readStat(pid);
  return s !== null && s.state !== "Z";
};

/** A shell in a group and session of its own that ignores SIGTERM (or not), with a child in its group; its first line of output is the child's pid. */
async function leader(ignoreTerm: boolean) {
  const proc = Bun.spawn(["sh", "-c", `${ignoreTerm ? "trap '' TERM; " : ""}sleep 60 & echo $!; wait`], { detached: true, stdout: "pipe" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  const child = Number(text.trim());
  return {
    proc,
    child,
    [Symbol.asyncDispose]: async () => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // ended
      }
      await proc.exited;
    },
  };
}

test("a dry run signals nothing: the target and its group's members would end", async () => {
  await using l = await leader(false);
  const target = owned(l.proc.pid);
  const endings = await endProcesses([target], { graceMs: 1000, dryRun: true });
  expect(endings).toEqual([{ target, outcome: "would-end", members: [{ pid: l.child, startTime: startTimeOf(l.child)!, outcome: "would-end" }] }]);
  expect(alive(l.proc.pid) && alive(l.child)).toBe(true);
  expect(finished(endings)).toEqual([]);
});

test("the group a target made ends with it, its members reported; both gone once it returns", async () => {
  await using l = await leader(false);
  const target = owned(l.proc.pid);
  const childStart = startTimeOf(l.child)!;
  const endings = await endProcesses([target], { graceMs: 2000 });
  expect(endings).toEqual([{ target, outcome: "ended", members: [{ pid: l.child, startTime: childStart, outcome: "ended" }] }]);
  expect(alive(l.child)).toBe(false);
  expect(finished(endings)).toEqual([target.pid]);
});

test("SIGTERM ignored: SIGKILL after the grace period; with no grace, SIGKILL at once", async () => {
  for (const graceMs of [300, 0]) {
    await using l = await leader(true);
    const target = owned(l.proc.pid);
    const began = performance.now();
    const endings = await endProcesses([target], { graceMs });
    const took = performance.now() - began;
    expect([graceMs, endings[0]!.outcome]).toEqual([graceMs, "ended"]);
    expect(alive(l.child)).toBe(false);
    // the grace period was waited out (SIGTERM did nothing), or not waited at all
    if (graceMs > 0) expect(took).toBeGreaterThanOrEqual(graceMs - 5);
  }
});

test("a pid whose start time is not the recorded one is another process: reported reused, not signalled", async () => {
  await using l = await leader(false);
  const recorded: Owned = { pid: l.proc.pid, startTime: String(BigInt(startTimeOf(l.proc.pid)!) - 1n), pgid: l.proc.pid, sid: l.proc.pid };
  const endings = await endProcesses([recorded], { graceMs: 0 });
  expect(endings).toEqual([{ target: recorded, outcome: "reused", members: [] }]);
  expect(alive(l.proc.pid) && alive(l.child)).toBe(true);
  expect(finished(endings)).toEqual([recorded.pid]);
});

test("a registered member is reported as a target, not again as a member", async () => {
  await using l = await leader(false);
  const target = owned(l.proc.pid);
  const member: Owned = { pid: l.child, startTime: startTimeOf(l.child)!, pgid: l.proc.pid, sid: l.proc.pid };
  const endings = await endProcesses([target, member], { graceMs: 2000 });
  expect(endings).toEqual([
    { target, outcome: "ended", members: [] },
    { target: member, outcome: "ended", members: [] },
  ]);
});

test("finished: targets with nothing left running; a survivor, a dry run or a member still running keep theirs", () => {
  const t = (pid: number): Owned => ({ pid, startTime: "1" });
  const e = (pid: number, outcome: Ending["outcome"], members: Ending["members"] = []): Ending => ({ target: t(pid), outcome, members });
  const m = (outcome: Ending["members"][number]["outcome"]) => [{ pid: 99, startTime: "1", outcome }];
  expect(finished([e(1, "ended"), e(2, "gone"), e(3, "reused"), e(4, "still-running"), e(5, "would-end"), e(6, "ended", m("still-running")), e(7, "ended", m("would-end")), e(8, "gone", m("ended"))])).toEqual([1, 2, 3, 8]);
});
