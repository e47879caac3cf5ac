/** How a connection names a request and a host's refusal, in its messages (connection.ts). */
import type { ErrorCode } from "../errors.ts";
import type { EXPORT_OF, Notice, Request } from "../protocol/wire.ts";

type AnyBody = Request extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;
export type RequestBody = Exclude<AnyBody, { kind: Notice["kind"] }>;

export function describeRequest(body: RequestBody, names: typeof EXPORT_OF): string {
  if (body.kind === "invoke" || body.kind === "gate") return `${names[body.kind]} of ${body.tool}`;
  if (body.kind === "command") return `${names.command} '${body.name}'`;
  return names[body.kind];
}

export function codeForRefusal(reason: string | undefined): ErrorCode {
  switch (reason) {
    case "handshake":
      return "E_HANDSHAKE";
    case "manifest":
      return "E_MANIFEST";
    default:
      return "E_LOAD";
  }
}
