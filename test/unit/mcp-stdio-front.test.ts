/**
 * The stdio front's reading of `initialize` (src/mcp/stdio-front.ts): what it accepts it reads as
 * the SDK's schema reads it; anything the SDK would refuse, or reads otherwise, it leaves to the SDK.
 */
import { describe, expect, test } from "bun:test";
import { InitializeRequestParamsSchema, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { initializeParams, PROTOCOL_VERSIONS } from "../../src/mcp/stdio-front.ts";

const info = { name: "client", version: "1.0" };
const params = (capabilities: unknown, clientInfo: unknown = info, extra: object = {}) => ({ protocolVersion: "2025-06-18", capabilities, clientInfo, ...extra });

describe("initializeParams", () => {
  test("the protocol versions are the SDK's, newest first", () => {
    expect([...PROTOCOL_VERSIONS]).toEqual([...SUPPORTED_PROTOCOL_VERSIONS]);
    expect(PROTOCOL_VERSIONS[0]).toBe(LATEST_PROTOCOL_VERSION);
  });

  test("what it accepts, it reads as the SDK does (an empty elicitation means forms)", () => {
    const accepted = [
      params({}),
      params({ elicitation: {} }),
      params({ elicitation: { form: {} } }),
      params({ elicitation: { form: { applyDefaults: true }, url: {} } }),
      params({ elicitation: { url: {} } }),
      params({ roots: { listChanged: true }, sampling: {} }),
      params({ sampling: { context: {}, tools: {} }, experimental: { x: {} }, extensions: { "io.example/y": {} } }),
      params({}, { ...info, title: "A client" }),
      params({ roots: {} }),
      params({ roots: { listChanged: false } }),
      params({ sampling: { context: {} } }),
      params({ sampling: { tools: {} } }),
      params({ experimental: {}, extensions: {} }),
      params({ elicitation: { form: { applyDefaults: false } } }),
    ];
    for (const p of accepted) {
      const mine = initializeParams(p);
      expect(mine).not.toBeNull();
      const sdk = InitializeRequestParamsSchema.parse(p);
      expect(mine!.capabilities).toEqual(sdk.capabilities);
      expect(mine!.clientInfo).toEqual(sdk.clientInfo);
    }
  });

  test("anything out of the ordinary is the SDK's, including all it refuses", () => {
    const left = [
      params([]),
      params(null),
      params({ tasks: {} }),
      params({ somethingNew: {} }),
      params({ roots: { listChanged: "yes" } }),
      params({ roots: true }),
      params({ elicitation: { form: { applyDefaults: 1 } } }),
      params({ elicitation: { form: [] } }),
      params({ elicitation: { other: {} } }),
      params({ sampling: { context: 1 } }),
      params({ experimental: { x: 1 } }),
      params({ experimental: { x: {}, y: null } }),
      params({ extensions: { x: [] } }),
      params({ roots: { listChanged: true, other: true } }),
      params({ sampling: { other: {} } }),
      params({ sampling: { tools: 1 } }),
      params({ sampling: { context: {}, tools: [] } }),
      params({ sampling: [] }),
      params({ elicitation: { url: 1 } }),
      params({ elicitation: { url: {}, form: 1 } }),
      params({ elicitation: { form: { other: true } } }),
      params({ elicitation: { form: { applyDefaults: true, other: true } } }),
      params({ elicitation: null }),
      params({ roots: {}, tasks: {} }),
      params({}, []),
      params({}, null),
      params({}, { version: "1" }),
      params({}, { name: "client", version: 1 }),
      params({}, { name: "client" }),
      params({}, { name: 1, version: "1" }),
      params({}, { ...info, icons: [] }),
      params({}, { ...info, title: 3 }),
      params({}, info, { _meta: {} }),
      { capabilities: {}, clientInfo: info },
      { ...params({}), protocolVersion: 20250618 },
    ];
    for (const p of left) expect(initializeParams(p as Record<string, unknown>)).toBeNull();
  });
});
