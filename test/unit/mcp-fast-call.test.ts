/**
 * Which `tools/call` requests the stdio fast path serves (src/mcp/fast-call.ts): only plainly
 * well-formed ones; anything else goes to the SDK, which checks it in full and answers its errors.
 */
import { describe, expect, test } from "bun:test";
import { cancelledId, fastCallOf } from "../../src/mcp/fast-call.ts";

const call = (params: unknown, extra: object = {}) => ({ jsonrpc: "2.0", id: 3, method: "tools/call", params, ...extra });

describe("fastCallOf", () => {
  test("a name with object arguments, none, or a progress token is served", () => {
    expect(fastCallOf(call({ name: "calc_add", arguments: { a: 1 } }))).toEqual(call({ name: "calc_add", arguments: { a: 1 } }) as never);
    expect(fastCallOf(call({ name: "calc_add" }))).not.toBeNull();
    expect(fastCallOf(call({ name: "calc_add", arguments: {}, _meta: { progressToken: "t" } }))).not.toBeNull();
    expect(fastCallOf({ ...call({ name: "x" }), id: "abc" })).not.toBeNull();
  });

  test("anything else is left to the SDK", () => {
    for (const params of [undefined, null, {}, { name: 3 }, { name: "x", arguments: "{}" }, { name: "x", arguments: [1] }, { name: "x", arguments: null }, { name: "x", task: { ttl: 1 } }, { name: "x", _meta: { progressToken: "t", other: 1 } }, { name: "x", _meta: { progressToken: 1.5 } }]) {
      expect(fastCallOf(call(params))).toBeNull();
    }
    expect(fastCallOf({ ...call({ name: "x" }), method: "tools/list" })).toBeNull();
    expect(fastCallOf({ ...call({ name: "x" }), jsonrpc: "1.0" })).toBeNull();
    expect(fastCallOf({ ...call({ name: "x" }), id: null })).toBeNull();
    expect(fastCallOf({ ...call({ name: "x" }), id: 1.5 })).toBeNull();
    expect(fastCallOf(call({ name: "x" }, { extra: true }))).toBeNull();
    expect(fastCallOf([call({ name: "x" })])).toBeNull();
  });

  test("a cancellation names its request", () => {
    expect(cancelledId({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3, reason: "r" } })).toEqual({ id: 3, reason: "r" });
    expect(cancelledId({ jsonrpc: "2.0", method: "notifications/cancelled", params: {} })).toBeNull();
    expect(cancelledId(call({ name: "x" }))).toBeNull();
  });
});
