/**
 * `cxagent command` and `cxagent watch` as a person and a pipeline use them.
 */
import { beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { approve, cli, fixture, ROOT } from "../helpers.ts";

const SCHEDULER = join(ROOT, "examples/scheduler");
beforeAll(async () => {
  await approve(SCHEDULER);
  await approve(fixture("commands"));
  await approve(fixture("echo"));
});

test("command: everything after the name is one string; the message is the output", async () => {
  const r = await cli(["command", fixture("commands"), "echo", "hello,", "wide", "world", "--", "--not-a-flag"]);
  expect(r).toMatchObject({ code: 0, stdout: "hello, wide world --not-a-flag\n" });
  const json = await cli(["command", fixture("commands"), "/echo", "ünïcödé", "--json"]);
  expect(json.json()).toEqual({ message: "ünïcödé", status: "reported" });
});

test("command: refused exits 1; an undeclared name exits 3 naming the commands there are", async () => {
  const refused = await cli(["command", fixture("commands"), "refuse"]);
  expect(refused).toMatchObject({ code: 1, stdout: "not today\n" });
  const unknown = await cli(["command", fixture("commands"), "nope", "--json"]);
  expect(unknown.code).toBe(3);
  expect(unknown.json().error).toMatchObject({ code: "E_UNKNOWN_COMMAND", hint: "its commands: echo, refuse, change, silent, bad_status, reports" });
});

test("watch: the scheduler's reminder arrives as its goal on a line; with --jsonl as a JSON line", async () => {
  const r = await cli(["watch", SCHEDULER, "--command", "remind in 1s run the tests", "--count", "1", "--for", "10000"]);
  expect(r).toMatchObject({ code: 0, stdout: "run the tests\n" });
  expect(r.stderr).toContain("/remind: changed: I will remind the agent to run the tests in 1s.");
  expect(r.stderr).toContain("watched scheduler: 1 submit");
  const lines = await cli(["watch", SCHEDULER, "--command", "remind in 1s run the tests", "--count", "1", "--for", "10000", "--jsonl"]);
  expect(lines.code).toBe(0);
  expect(lines.stdout.trimEnd().split("\n").map((l) => JSON.parse(l))).toEqual([{ plugin: "scheduler", goal: "run the tests", wantResult: false }]);
});

test("watch --json: exactly one document, also when nothing was submitted", async () => {
  const none = await cli(["watch", SCHEDULER, "--for", "200", "--json"]);
  expect(none.code).toBe(0);
  expect(none.json()).toEqual({ plugin: "scheduler", command: null, submits: [], interrupted: false });
  const one = await cli(["watch", SCHEDULER, "--command", "remind in 1s run the tests", "--count", "1", "--for", "10000", "--json"]);
  expect(one.json()).toEqual({
    plugin: "scheduler",
    command: { name: "remind", status: "changed", message: "I will remind the agent to run the tests in 1s." },
    submits: [{ plugin: "scheduler", goal: "run the tests", wantResult: false }],
    interrupted: false,
  });
  const both = await cli(["watch", SCHEDULER, "--json", "--jsonl"]);
  expect(both.code).toBe(2);
  expect(both.json().error.code).toBe("E_USAGE");
});

test("watch: a malformed reminder is refused; a plugin that is not a client is refused", async () => {
  const bad = await cli(["watch", SCHEDULER, "--command", "remind soon-ish do it", "--for", "300"]);
  expect(bad.code).toBe(0);
  expect(bad.stderr).toContain("/remind: refused: Usage: /remind in <number><s|m|h> <goal>");
  const notClient = await cli(["watch", fixture("echo"), "--for", "100", "--json"]);
  expect(notClient.code).toBe(3);
  expect(notClient.json().error.message).toContain("is not a client");
});
