/**
 * The checks of `cxagent mcp --http` that run before a request reaches the SDK, each at its edge
 * (src/mcp/http.ts): which addresses are loopback, what --http accepts, the Host and Origin a
 * request may name, the bearer token compared, and where the token comes from (the environment,
 * a file of the user's own that nobody else can read, or made now). The served endpoint itself is
 * test/integration/mcp-http-serve.test.ts; the CLI's, test/mcp/http.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CxError } from "../../src/index.ts";
import { bearerToken, isLoopback, loopbackHosts, parseListen, refusal } from "../../src/mcp/http.ts";
import { tempDir } from "../helpers.ts";

const usage = (f: () => unknown): CxError => {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(CxError);
    expect((error as CxError).code).toBe("E_USAGE");
    return error as CxError;
  }
  throw new Error("expected an E_USAGE refusal");
};

describe("loopback addresses", () => {
  test("localhost, ::1 (bracketed or not) and all of 127.0.0.0/8; nothing else", () => {
    for (const host of ["localhost", "::1", "[::1]", "[localhost]", "127.0.0.1", "127.255.255.254", "[127.0.0.1]"]) expect(isLoopback(host)).toBe(true);
    for (const host of ["128.0.0.1", "::2", "0.0.0.0", "127.0.0.1.nip.io", "127.example.com", "localhost.", "xlocalhost", "1.127.0.0", "::ffff:127.0.0.1"]) {
      expect(isLoopback(host)).toBe(false);
    }
    // brackets only at the ends are stripped
    for (const host of [":[:1", "::]1", "[::1", "::1]", "[[::1]]"]) expect(isLoopback(host)).toBe(host === "[::1" || host === "::1]");
  });

  test("the Host values a loopback listener answers to, on its port, lowercase", () => {
    expect(loopbackHosts("127.0.0.1", 8765)).toEqual(new Set(["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]));
    expect(loopbackHosts("::1", 80)).toEqual(new Set(["127.0.0.1:80", "localhost:80", "[::1]:80"]));
    expect(loopbackHosts("127.0.0.5", 1)).toEqual(new Set(["127.0.0.1:1", "localhost:1", "[::1]:1", "127.0.0.5:1"]));
    expect(loopbackHosts("LOCALHOST", 2)).toEqual(new Set(["127.0.0.1:2", "localhost:2", "[::1]:2"]));
  });
});

describe("--http", () => {
  test("the port's edges: 0 and 65535 are ports, 65536 and six digits are not", () => {
    expect(parseListen("0", false)).toEqual({ host: "127.0.0.1", port: 0, loopback: true });
    expect(parseListen("65535", false).port).toBe(65535);
    expect(parseListen("127.0.0.1:00080", false).port).toBe(80);
    for (const bad of ["65536", "127.0.0.1:65536", "100000", "127.0.0.1:123456", "-1", "8a", "a8", "127.0.0.1:", "1 2"]) {
      const error = usage(() => parseListen(bad, false));
      expect(error.message).toBe(`--http '${bad}' is not HOST:PORT`);
      expect(error.hint).toBe("e.g. --http 127.0.0.1:8765 (port 0 picks a free one)");
    }
  });

  test("spaces around are ignored; a bracketed IPv6 address, and only bracketed, takes a port", () => {
    expect(parseListen("  127.0.0.1:80\n", false)).toEqual({ host: "127.0.0.1", port: 80, loopback: true });
    expect(parseListen("[::1]:1", false)).toEqual({ host: "::1", port: 1, loopback: true });
    expect(parseListen("[fe80::1]:80", true)).toEqual({ host: "fe80::1", port: 80, loopback: false });
    expect(parseListen("my-host.example:80", true)).toEqual({ host: "my-host.example", port: 80, loopback: false });
    for (const bad of ["::1:80", "[::1]", "[]:80", "[::1]x:80", "x[::1]:80", "a]:80", "[a:80", "[a]b]:80"]) usage(() => parseListen(bad, true));
  });

  test("a non-loopback address without --allow-remote: refused, saying why and what to do", () => {
    const error = usage(() => parseListen("[fe80::1]:80", false));
    expect(error.message).toBe("refusing to serve MCP on [fe80::1], which is not a loopback address: anyone who can reach it could run your plugins");
    expect(error.hint).toBe("serve on 127.0.0.1, or pass --allow-remote to serve there anyway (clients must then send the bearer token printed at start)");
    expect(usage(() => parseListen("10.0.0.1:80", false)).message).toStartWith("refusing to serve MCP on 10.0.0.1,");
  });
});

describe("the request guard", () => {
  const hosts = loopbackHosts("127.0.0.1", 8765);
  const h = (headers: Record<string, string>) => new Headers(headers);

  test("a foreign Host is 403 naming it; no Host at all is 403 naming none", () => {
    expect(refusal(h({ host: "EVIL.example:8765" }), { hosts, token: null })).toEqual({ status: 403, message: "Forbidden: Host 'evil.example:8765' is not this server's loopback address" });
    expect(refusal(h({}), { hosts, token: null })).toEqual({ status: 403, message: "Forbidden: Host '' is not this server's loopback address" });
    expect(refusal(h({ host: "[::1]:8765" }), { hosts, token: null })).toBeNull();
  });

  test("an Origin: http or https naming this server passes; any other scheme, host or text is 403 naming it", () => {
    const ok = { host: "127.0.0.1:8765" };
    for (const origin of ["http://localhost:8765", "https://LOCALHOST:8765", "http://[::1]:8765", "http://127.0.0.1:8765/"]) expect(refusal(h({ ...ok, origin }), { hosts, token: null })).toBeNull();
    for (const origin of ["ftp://localhost:8765", "ws://localhost:8765", "localhost:8765", "http://localhost:8766", "null", ""]) {
      expect(refusal(h({ ...ok, origin }), { hosts, token: null })).toEqual({ status: 403, message: `Forbidden: Origin '${origin}' is not this server` });
    }
  });

  test("remote mode (no Host list): any Host passes, an Origin must name that Host; no Host and an Origin is 403", () => {
    const remote = { hosts: null, token: null };
    expect(refusal(h({ host: "my.host:80" }), remote)).toBeNull();
    expect(refusal(h({}), remote)).toBeNull();
    expect(refusal(h({ host: "My.Host:80", origin: "https://my.host:80" }), remote)).toBeNull();
    expect(refusal(h({ host: "my.host:80", origin: "http://my.host:81" }), remote)?.status).toBe(403);
    expect(refusal(h({ origin: "http://my.host:80" }), remote)).toEqual({ status: 403, message: "Forbidden: Origin 'http://my.host:80' is not this server" });
    expect(refusal(h({ host: "my.host:80", origin: "file://" }), remote)?.status).toBe(403);
  });

  test("the token: exactly 'Bearer <token>', after Host and Origin; 401 saying what to send", () => {
    const policy = { hosts, token: "s3cret" };
    const unauthorized = { status: 401, message: "Unauthorized: send the header 'Authorization: Bearer <token>' with the token cxagent mcp printed at start" };
    expect(refusal(h({ host: "127.0.0.1:8765", authorization: "Bearer s3cret" }), policy)).toBeNull();
    for (const authorization of ["Bearer s3cre", "Bearer s3creT", "Bearer  s3cret", "Bearer s3cret\u00a0", "s3cret"]) expect(refusal(h({ host: "127.0.0.1:8765", authorization }), policy)).toEqual(unauthorized);
    expect(refusal(h({ host: "127.0.0.1:8765" }), policy)).toEqual(unauthorized);
    // a foreign Host is named before a missing token
    expect(refusal(h({ host: "evil:8765" }), policy)?.status).toBe(403);
    expect(refusal(h({ host: "127.0.0.1:8765", origin: "http://evil" }), policy)?.status).toBe(403);
    expect(refusal(h({ host: "x", authorization: "Bearer t" }), { hosts: null, token: "t" })).toBeNull();
    expect(refusal(h({ host: "x", authorization: "Bearer u" }), { hosts: null, token: "t" })).toEqual(unauthorized);
  });
});

describe("the bearer token", () => {
  test("$CXAGENT_MCP_TOKEN first, spaces around it dropped; blank is unset; else a fresh one of 24 random bytes", () => {
    using dir = tempDir("cxagent-token-");
    const file = join(dir.path, "token");
    writeFileSync(file, "from-the-file-0123456789\n", { mode: 0o600 });
    expect(bearerToken({ CXAGENT_MCP_TOKEN: "  from-env \n" }, file)).toEqual({ token: "from-env", source: "env" });
    expect(bearerToken({ CXAGENT_MCP_TOKEN: " \t" }, file)).toEqual({ token: "from-the-file-0123456789", source: "file" });
    expect(bearerToken({}, file)).toEqual({ token: "from-the-file-0123456789", source: "file" });
    const fresh = bearerToken({ CXAGENT_MCP_TOKEN: "" });
    expect(fresh.source).toBe("fresh");
    expect(fresh.token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(bearerToken({}).token).not.toBe(fresh.token);
  });

  test("--token-file: the token alone, 16 printable ASCII characters or more, spaces around it dropped", () => {
    using dir = tempDir("cxagent-token-");
    const read = (content: string | Buffer) => {
      const file = join(dir.path, "t");
      writeFileSync(file, content, { mode: 0o600 });
      chmodSync(file, 0o600);
      return () => bearerToken({}, file).token;
    };
    expect(read("  0123456789abcdef \n")()).toBe("0123456789abcdef");
    expect(read("!~!~!~!~!~!~!~!~")()).toBe("!~!~!~!~!~!~!~!~");
    // exactly 4096 bytes
    expect(read("0123456789abcdef" + " ".repeat(4080))()).toBe("0123456789abcdef");
    const notAToken = "it does not hold a token (at least 16 printable characters, no spaces)";
    for (const bad of ["0123456789abcde", "0123456789abcdef 0123456789abcdef", "short 0123456789abcdef", "0123456789abcdef short", "0123456789abcdef\x7f", "0123456789abcdéf", "", "0123456789abcdef\u0000"]) {
      const error = usage(read(bad));
      expect(error.message).toEndWith(`: ${notAToken}`);
      expect(error.hint).toBe("write only the token into it: openssl rand -base64 32 > FILE");
    }
    const big = usage(read("0123456789abcdef" + " ".repeat(4081)));
    expect(big.message).toEndWith(": it is larger than 4 KiB; it should hold the token alone");
    expect(big.hint).toBe("write only the token into it");
  });

  test("--token-file: only a regular file of this user's that nobody else may read or write, never a link; each refusal names the file", () => {
    using dir = tempDir("cxagent-token-");
    const file = join(dir.path, "token");
    writeFileSync(file, "0123456789abcdef\n", { mode: 0o600 });
    const refused = (path: string, why: string, hint: string) => {
      const error = usage(() => bearerToken({}, path));
      expect(error.message).toBe(`--token-file ${path}: ${why}`);
      expect(error.hint).toBe(hint);
    };
    for (const [mode, shown] of [[0o640, "0640"], [0o604, "0604"], [0o620, "0620"], [0o602, "0602"], [0o060, "0060"], [0o4610, "0610"]] as const) {
      chmodSync(file, mode);
      refused(file, `other users may read or write it (mode ${shown})`, `chmod 600 ${file}`);
    }
    chmodSync(file, 0o400);
    expect(bearerToken({}, file).token).toBe("0123456789abcdef");
    chmodSync(file, 0o700);
    expect(bearerToken({}, file).token).toBe("0123456789abcdef");
    chmodSync(file, 0o600);
    symlinkSync(file, join(dir.path, "link"));
    refused(join(dir.path, "link"), "it is a symbolic link", "give the file itself");
    mkdirSync(join(dir.path, "folder"), { mode: 0o700 });
    refused(join(dir.path, "folder"), "it is not a regular file", "write the token into a regular file");
    // a FIFO with no writer: opened without waiting for one, and refused
    const fifo = join(dir.path, "fifo");
    expect(Bun.spawnSync(["mkfifo", "-m", "600", fifo]).exitCode).toBe(0);
    refused(fifo, "it is not a regular file", "write the token into a regular file");
    const missing = join(dir.path, "missing");
    const error = usage(() => bearerToken({}, missing));
    expect(error.message).toStartWith(`--token-file ${missing}: it cannot be read (ENOENT`);
    expect(error.hint).toBe("write the token into a file only you can read: umask 077; openssl rand -base64 32 > FILE");
  });

  test.skipIf(process.getuid?.() !== 0)("--token-file: a file of another user is refused, naming the owner", () => {
    using dir = tempDir("cxagent-token-");
    const file = join(dir.path, "token");
    writeFileSync(file, "0123456789abcdef\n", { mode: 0o600 });
    chownSync(file, 65534, 65534);
    const error = usage(() => bearerToken({}, file));
    expect(error.message).toBe(`--token-file ${file}: it belongs to uid 65534, not to you`);
    expect(error.hint).toBe("use a token file of your own");
  });

  test("--token-file leaves no descriptor open, read or refused", () => {
    using dir = tempDir("cxagent-token-");
    const good = join(dir.path, "good");
    const open = join(dir.path, "open");
    writeFileSync(good, "0123456789abcdef\n", { mode: 0o600 });
    writeFileSync(open, "0123456789abcdef\n", { mode: 0o644 });
    chmodSync(open, 0o644);
    const onFiles = () => readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return require("node:fs").readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir.path);
      } catch {
        return false;
      }
    });
    for (let i = 0; i < 3; i++) {
      bearerToken({}, good);
      usage(() => bearerToken({}, open));
    }
    expect(onFiles()).toEqual([]);
  });
});
