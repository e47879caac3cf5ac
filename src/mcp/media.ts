/**
 * A result's media attachments (a Cortex ToolResult's `media`, kept as `output.media`) as MCP
 * content (issue 43): an image or audio file that is readable here goes inline, as `image` or
 * `audio` content (base64), while the result's inline media stay within the delivery cap of a
 * result (issue 41's default, 100 KiB, counted as base64); any other file, one past that, and a
 * remote URL go as a `resource_link`; a local file that cannot be read becomes a line of text.
 *
 *   attachment {media_type, mime_type, url, caption, size}   url: a local path or a URL
 */
import { readFileSync, statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DELIVERY_CAP_DEFAULT } from "../index.ts";

/** At most this many bytes of a result's media go inline, as base64 (the delivery cap's default). */
export const MEDIA_INLINE_BYTES = DELIVERY_CAP_DEFAULT;
const base64Size = (bytes: number) => Math.ceil(bytes / 3) * 4;

export type MediaContent =
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name: string; mimeType?: string; description?: string; size?: number }
  | { type: "text"; text: string };

interface Attachment {
  media_type: string;
  mime_type: string;
  url: string;
  caption: string | null;
}

function attachmentOf(value: unknown): Attachment | null {
  if (value === null || typeof value !== "object") return null;
  const a = value as Record<string, unknown>;
  if (typeof a.url !== "string" || a.url === "") return null;
  return {
    media_type: typeof a.media_type === "string" ? a.media_type : "file",
    mime_type: typeof a.mime_type === "string" && a.mime_type ? a.mime_type : "application/octet-stream",
    url: a.url,
    caption: typeof a.caption === "string" ? a.caption : null,
  };
}

/** The MCP content of a result's `output.media` (nothing when it has none); local paths are relative to `cwd`. */
export function mediaContent(media: unknown, cwd: string = process.cwd()): MediaContent[] {
  if (!Array.isArray(media)) return [];
  const out: MediaContent[] = [];
  let inline = 0;
  for (const item of media) {
    const a = attachmentOf(item);
    if (!a) continue;
    const described = a.caption ? { description: a.caption } : {};
    if (/^[a-z][a-z0-9+.-]*:/i.test(a.url) && !a.url.startsWith("file:")) {
      out.push({ type: "resource_link", uri: a.url, name: a.caption ?? a.url, mimeType: a.mime_type, ...described });
      continue;
    }
    let path: string;
    try {
      path = a.url.startsWith("file:") ? fileURLToPath(a.url) : isAbsolute(a.url) ? a.url : resolve(cwd, a.url);
    } catch {
      out.push({ type: "text", text: `[attachment ${a.url}: not a file URL this server can read]` });
      continue;
    }
    let size: number;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) throw new Error("it is not a file");
      size = stat.size;
    } catch (error) {
      out.push({ type: "text", text: `[attachment ${a.url} could not be read: ${(error as Error).message}]` });
      continue;
    }
    const uri = pathToFileURL(path).href;
    const kind = a.media_type === "image" || a.media_type === "audio" ? a.media_type : null;
    if (kind && inline + base64Size(size) <= MEDIA_INLINE_BYTES) {
      try {
        const data = readFileSync(path);
        inline += base64Size(data.length);
        out.push({ type: kind, data: data.toString("base64"), mimeType: a.mime_type });
        continue;
      } catch (error) {
        out.push({ type: "text", text: `[attachment ${a.url} could not be read: ${(error as Error).message}]` });
        continue;
      }
    }
    out.push({ type: "resource_link", uri, name: a.caption ?? path, mimeType: a.mime_type, size, ...described });
  }
  return out;
}
