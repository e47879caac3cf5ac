/**
 * A result's media attachments as MCP content (mcp/media.ts): readable images and audio inline,
 * other files, files past the limit and remote URLs as resource links, an unreadable file as text.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MEDIA_INLINE_BYTES, mediaContent } from "../../src/mcp/media.ts";
import { tempDir } from "../helpers.ts";

const attachment = (media_type: string, mime_type: string, url: string, caption: string | null = null) => ({ media_type, mime_type, url, caption, size: null });

test("each kind of attachment as the content an MCP client reads", () => {
  using dir = tempDir();
  const png = join(dir.path, "dot.png");
  const wav = join(dir.path, "beep.wav");
  const mp4 = join(dir.path, "clip.mp4");
  const big = join(dir.path, "big.png");
  writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  writeFileSync(wav, "RIFF");
  writeFileSync(mp4, "ftyp");
  // past the delivery cap once in base64
  writeFileSync(big, Buffer.alloc(Math.floor((MEDIA_INLINE_BYTES * 3) / 4)));
  const content = mediaContent([
    attachment("image", "image/png", png, "a dot"),
    attachment("audio", "audio/wav", `file://${wav}`),
    attachment("video", "video/mp4", "clip.mp4"),
    attachment("image", "image/png", big),
    attachment("file", "application/pdf", "https://example.org/a.pdf", "the paper"),
    attachment("image", "image/png", join(dir.path, "missing.png")),
    { not: "an attachment" },
  ], dir.path);
  expect(content).toEqual([
    { type: "image", data: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString("base64"), mimeType: "image/png" },
    { type: "audio", data: Buffer.from("RIFF").toString("base64"), mimeType: "audio/wav" },
    { type: "resource_link", uri: `file://${mp4}`, name: mp4, mimeType: "video/mp4", size: 4 },
    { type: "resource_link", uri: `file://${big}`, name: big, mimeType: "image/png", size: Math.floor((MEDIA_INLINE_BYTES * 3) / 4) },
    { type: "resource_link", uri: "https://example.org/a.pdf", name: "the paper", mimeType: "application/pdf", description: "the paper" },
    { type: "text", text: expect.stringContaining(`[attachment ${join(dir.path, "missing.png")} could not be read: ENOENT`) },
  ]);
  expect(mediaContent(undefined)).toEqual([]);
  expect(mediaContent([])).toEqual([]);
});
