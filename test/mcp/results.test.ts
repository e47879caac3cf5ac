/**
 * Large results in cxagent mcp (issue 41): 100 KiB by default, the client's size hint in `_meta`,
 * a resource_link and a `_meta` entry for a spilled result, and cxagent_read_result paging through
 * it exactly; compact JSON on the wire.
 */
import { expect, test } from "bun:test";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createHash } from "node:crypto";
import { fixture, tempDir, until } from "../helpers.ts";
import { approvedState, connect } from "./_mcp.ts";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const letters = (bytes: number, tag = 0) => Array.from({ length: bytes }, (_, i) => String.fromCharCode(97 + ((tag + i) % 26))).join("");

test("a 300 KB result: 100 KiB of text, a resource_link and _meta; cxagent_read_result appears and pages through it exactly", async () => {
  using dir = tempDir();
  const state = await approvedState(dir.path, ["big-reply"]);
  await using server = await connect([fixture("big-reply")], { state });
  let changed = 0;
  server.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["big_reply"]);
  const small = await server.client.callTool({ name: "big_reply", arguments: { bytes: 1000 } });
  expect(small.content).toHaveLength(1);

  const full = letters(300_000, 2);
  const ref = `cxref:sha256-${sha(full)}`;
  const result: any = await server.client.callTool({ name: "big_reply", arguments: { bytes: 300_000, tag: 2 } });
  expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(100 * 1024);
  expect(result.content[0].text).toContain(`The whole result is ${ref}`);
  expect(result.content[1]).toMatchObject({ type: "resource_link", uri: ref, name: `sha256-${sha(full)}`, mimeType: "text/plain", size: 300_000 });
  expect(result._meta["cxagent/result"]).toEqual({ truncated: true, bytes: 300_000, sha256: sha(full), ref });
  // Never both in full: a tool without an outputSchema gets no structured copy (issue 42), one with it the same preview.
  expect(result.structuredContent).toBeUndefined();

  await until(() => changed > 0, 10_000, "tools/list_changed");
  expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["big_reply", "cxagent_read_result"]);
  let joined = "";
  let offset: number | null = 0;
  let pages = 0;
  while (offset !== null) {
    const page: any = await server.client.callTool({ name: "cxagent_read_result", arguments: { ref, offset } });
    expect(page.isError).toBe(false);
    expect(page.structuredContent.length).toBeLessThanOrEqual(100 * 1024);
    joined += full.slice(page.structuredContent.offset, page.structuredContent.offset + page.structuredContent.length);
    expect(page.content[0].text.startsWith(full.slice(page.structuredContent.offset, page.structuredContent.offset + page.structuredContent.length))).toBe(true);
    offset = page.structuredContent.next;
    pages++;
  }
  expect(pages).toBe(3);
  expect(joined).toBe(full);
  const some: any = await server.client.callTool({ name: "cxagent_read_result", arguments: { ref, offset: 299_990, length: 50 } });
  expect(some.content[0].text).toBe(full.slice(299_990));
  expect(some.structuredContent).toMatchObject({ offset: 299_990, length: 10, next: null, bytes: 300_000, plugin: "big-reply", tool: "big_reply" });
  const unknown: any = await server.client.callTool({ name: "cxagent_read_result", arguments: { ref: `cxref:sha256-${"2".repeat(64)}` } });
  expect(unknown.isError).toBe(true);
  expect(unknown._meta["cxagent/error"]).toBe("E_NOT_FOUND");
}, 60_000);

test("the client's size hint in the call's _meta sets the cap", async () => {
  using dir = tempDir();
  const state = await approvedState(dir.path, ["big-reply"]);
  await using server = await connect([fixture("big-reply")], { state });
  const result: any = await server.client.callTool({ name: "big_reply", arguments: { bytes: 300_000 }, _meta: { "anthropic/maxResultSizeChars": 5000 } });
  expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(5000);
  expect(result._meta["cxagent/result"].bytes).toBe(300_000);
  const whole: any = await server.client.callTool({ name: "big_reply", arguments: { bytes: 150_000 }, _meta: { "cxagent/maxOutputBytes": 200_000 } });
  expect(whole.content[0].text).toHaveLength(150_000);
  expect(whole._meta["cxagent/result"]).toBeUndefined();
}, 60_000);
