/**
 * The parent's spin (host/reply-spin.ts): when it spins, when it stops, and the poll it spins on,
 * over a real socket pair.
 */
import { expect, test } from "bun:test";
import { closeSync, writeSync } from "node:fs";
import { parentSpinUs, ReplySpin } from "../../src/host/reply-spin.ts";
import { pollReadable, socketPair } from "../../src/host/protocol-socket.ts";

const free = () => true;
const busy = () => false;

test("the window: 50 µs by default, a lower session setting lowers it, 0 turns it off, a higher one does not raise it", () => {
  expect(parentSpinUs(null)).toBe(50);
  expect(parentSpinUs(undefined)).toBe(50);
  expect(parentSpinUs(20)).toBe(20);
  expect(parentSpinUs(0)).toBe(0);
  expect(parentSpinUs(100)).toBe(50);
});

test("it spins while replies come within the window, and not while a task waits for a CPU", () => {
  const spin = new ReplySpin(50);
  expect(spin.budgetNs).toBe(50_000);
  expect(spin.wanted(free)).toBe(true);
  expect(spin.wanted(busy)).toBe(false);
  for (let i = 0; i < 20; i++) spin.record(true);
  expect(spin.wanted(free)).toBe(true);
});

test("after three misses in eight it stops, trying one call in 32, and spins again once replies are quick", () => {
  const spin = new ReplySpin(50);
  for (let i = 0; i < 3; i++) spin.record(false);
  const tries = Array.from({ length: 64 }, () => spin.wanted(free)).filter(Boolean).length;
  expect(tries).toBe(2);
  for (let i = 0; i < 6; i++) spin.record(true);
  expect(spin.wanted(free)).toBe(true);
});

test("pollReadable: false when nothing comes within the budget, true once the other end wrote, and it reads nothing", () => {
  const pair = socketPair();
  if (!pair) return; // not Linux: there is no pair, and the parent does not spin
  try {
    const began = Bun.nanoseconds();
    expect(pollReadable(pair.parent, 2_000_000)).toBe(false);
    expect(Bun.nanoseconds() - began).toBeGreaterThanOrEqual(2_000_000);
    writeSync(pair.child, "x\n");
    expect(pollReadable(pair.parent, 2_000_000)).toBe(true);
    expect(pollReadable(pair.parent, 0)).toBe(true); // still there: nothing was read
  } finally {
    closeSync(pair.parent);
    closeSync(pair.child);
  }
});
