/** The read cap (issue 41): which call a line is for, the cap's bounds, and what a line over it does, with a real call table. */
import { expect, test } from "bun:test";
import { Calls } from "../../src/host/calls.ts";
import type { LineSink } from "../../src/host/lines.ts";
import { callIdOf, checkedReadCap, ReadCap } from "../../src/host/read-cap.ts";
import { LINE_CAP } from "../../src/protocol/wire.ts";
import { CxError } from "../../src/errors.ts";
import { MIN_LINE_CAP } from "../../src/host/lines.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

test("a line's call is read from its first 64 bytes: a reply's id or a report's, whole digits, at the start only", () => {
  for (const head of [`{"id":12,"ok":true`, `{"id":12}`, `{"event":"progress","id":12,"text":"x"`, `{"event":"stream","id":12}`]) {
    expect(callIdOf(head)).toBe(12);
    expect(callIdOf(bytes(head))).toBe(12);
  }
  expect(callIdOf(`{"id":123456789012345,`)).toBe(123456789012345);
  for (const head of [`{"id":1234567890123456,`, ` {"id":12,`, `x{"id":12,`, `{"id":12`, `{"id":"12",`, `{"event":"PROGRESS","id":12,`, `{"ok":true,"id":12,`]) expect({ head, id: callIdOf(head) }).toEqual({ head, id: null });
  // Past the first 64 bytes nothing is read: a long event name hides the id, as text and as bytes.
  const long = `{"event":"${"a".repeat(60)}","id":12,`;
  expect(callIdOf(long)).toBeNull();
  expect(callIdOf(bytes(long))).toBeNull();
  // A view of a longer buffer is read within the view only.
  const whole = bytes(`{"id":12,"ok":true}`);
  expect(callIdOf(whole.subarray(0, 7))).toBeNull(); // `{"id":1`
  expect(callIdOf(whole.subarray(0, 9))).toBe(12);
});

test("a read cap is a whole number of bytes from 4 KiB to the line cap, both included; anything else is refused naming it and the range", () => {
  expect(checkedReadCap(undefined, "x")).toBeUndefined();
  expect(checkedReadCap(MIN_LINE_CAP, "x")).toBe(MIN_LINE_CAP);
  expect(checkedReadCap(LINE_CAP, "x")).toBe(LINE_CAP);
  for (const bad of [MIN_LINE_CAP - 1, LINE_CAP + 1, 5000.5, Number.NaN]) {
    let error: CxError | null = null;
    try {
      checkedReadCap(bad, "readCapBytes of plugin 'p'");
    } catch (e) {
      error = e as CxError;
    }
    expect(error?.code).toBe("E_INVALID_INPUT");
    expect(error?.message).toBe(`readCapBytes of plugin 'p' is ${bad}; it must be a whole number of bytes from ${MIN_LINE_CAP} to ${LINE_CAP}`);
    expect(error?.hint).toBe(`give a read cap from ${MIN_LINE_CAP} bytes (4 KiB) to ${LINE_CAP} (64 MiB), or none for the default`);
  }
});

function table() {
  const calls = new Calls({ label: "p", poolCap: 4, stuckMs: 60_000, send: () => {} });
  let ended = 0;
  const cap = new ReadCap("p", calls, () => void ended++);
  return { calls, cap, ended: () => ended };
}

const sink: LineSink = { write() {}, end: () => "", abort() {} };

test("a call's cap and spill apply to its reply line only; a report line or an unknown call gets the line cap and no spill", async () => {
  const { calls, cap } = table();
  const answer = calls.start({ kind: "invoke" }, "tool 't'", { readCap: 8192, spill: sink });
  const plain = calls.start({ kind: "invoke" }, "tool 'u'", {});
  expect(cap.limits.capOf(bytes(`{"id":1,"ok":`))).toBe(8192);
  expect(cap.limits.capOf(bytes(`{"event":"stream","id":1,`))).toBe(8192);
  expect(cap.limits.capOf(bytes(`{"id":2,"ok":`))).toBe(LINE_CAP);
  expect(cap.limits.capOf(bytes(`{"id":9,"ok":`))).toBe(LINE_CAP);
  expect(cap.limits.capOf(bytes(`not json`))).toBe(LINE_CAP);
  expect(cap.limits.sinkOf!(bytes(`{"id":1,"ok":`))).toBe(sink);
  expect(cap.limits.sinkOf!(bytes(`{"event":"stream","id":1,`))).toBeNull();
  expect(cap.limits.sinkOf!(bytes(`{"id":2,"ok":`))).toBeNull();
  expect(cap.limits.sinkOf!(bytes(`{"id":9,"ok":`))).toBeNull();
  calls.failAll(() => new CxError("E_STOPPED", "done"));
  await Promise.allSettled([answer, plain]);
});

test("a line over its call's cap fails that call with E_LIMIT naming the bytes and what to do; a line naming no call, or a runaway, ends the host once", async () => {
  const { calls, cap, ended } = table();
  const answer = calls.start({ kind: "invoke" }, "tool 't'", { readCap: 8192 });
  cap.limits.onOverflow(bytes(`{"id":1,"ok":`), 9000, 8192);
  const error = (await answer.then(() => null, (e: unknown) => e)) as CxError;
  expect(error.code).toBe("E_LIMIT");
  expect(error.message).toBe("plugin 'p': tool 't' answered more than the read cap of 8192 bytes (9000 bytes had arrived); the call failed, and the rest of its answer is dropped as it arrives");
  expect(error.hint).toBe("ask the tool for less (a page, a filter), or raise the cap for this call or plugin (readCapBytes in config.json, at most 64 MiB)");
  expect(error.details).toEqual({ cap: 8192, bytesRead: 9000 });
  cap.limits.onOverflow(bytes(`{"id":1,"ok":`), 9000, 8192); // nobody waits any more: dropped
  expect([cap.broken, ended()]).toEqual([null, 0]);

  cap.limits.onRunaway!(LINE_CAP + 1);
  expect(cap.broken?.message).toBe(`plugin 'p': its plugin host wrote a protocol line of over ${LINE_CAP + 1} bytes, longer than any line its writer writes (${LINE_CAP} bytes); the stream cannot be read on`);
  expect(cap.broken?.code).toBe("E_LIMIT");
  cap.limits.onOverflow(bytes(`garbage`), 5000, 4096); // the first reason stays, the host is ended once
  expect(cap.broken?.message).toContain("a protocol line of over");
  expect(ended()).toBe(1);
  expect(cap.limits.runawayAt).toBe(LINE_CAP);

  const other = table();
  other.cap.limits.onOverflow(bytes(`garbage`), 5000, 4096);
  expect(other.cap.broken?.message).toBe("plugin 'p': its plugin host wrote 5000 bytes on its protocol channel past the read cap of 4096 bytes, in a line that names no call; the stream cannot be read on");
  expect(other.ended()).toBe(1);
});
