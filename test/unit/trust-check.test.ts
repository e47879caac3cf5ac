/**
 * src/trust/check.ts alone: what a load that is not approved is told (E_NOT_APPROVED, naming why,
 * what changed and how to approve), a person's no (E_DENIED), and a yes. The prompt and the CLI
 * around it are driven for real in test/integration/trust.test.ts and test/e2e/trust-cli.test.ts.
 */
import { expect, test } from "bun:test";
import { CxError } from "../../src/errors.ts";
import { confirmTrusted, describeChanges, notApproved, otherFolderSentence, type TrustRequest } from "../../src/trust/check.ts";

const request = (over: Partial<TrustRequest> = {}): TrustRequest =>
  ({
    name: "calc",
    manifest: {},
    kind: "native",
    cortex: null,
    library: "/p/calc.so",
    folder: "/p",
    realFolder: "/real/p",
    hash: "sha256:abc",
    state: "new",
    changes: null,
    approvedElsewhere: [],
    sharesWith: [],
    settings: null,
    ships: [],
    ...over,
  }) as TrustRequest;

async function refused(promise: Promise<unknown>): Promise<CxError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CxError) return error;
    throw error;
  }
  throw new Error("it was not refused");
}

test("what changed: each kind named with its files, inert, in a fixed order; nothing listed, or no list kept, said so", () => {
  expect(describeChanges({ modified: ["a.so", "b\u202e.txt"], added: ["new\n.so"], removed: ["old.so"] })).toBe("modified: a.so, b\\u202e.txt; added: new\\n.so; removed: old.so");
  expect(describeChanges({ modified: [], added: [], removed: ["gone.so"] })).toBe("removed: gone.so");
  expect(describeChanges({ modified: ["m"], added: [], removed: [] })).toBe("modified: m");
  expect(describeChanges({ modified: [], added: [], removed: [] })).toBe("no file, but the hash differs");
  expect(describeChanges(null)).toBe("which ones is not known: the earlier approval was made by an older cxagent, which kept no file list");
});

test("another folder's same-named plugin: every folder and this one named, inert", () => {
  expect(otherFolderSentence("calc\u001b", ["/a", "/b\n"], "/here\t")).toBe("another plugin named calc\\x1b is approved from /a, /b\\n; this one is at /here\\t");
});

test("approved already: no one is asked", async () => {
  let asked = 0;
  expect(await confirmTrusted(request({ state: "approved" }), { approveCommand: "x", confirm: () => (asked++, false) })).toBe("already");
  expect(asked).toBe(0);
});

test("nobody to ask: E_NOT_APPROVED, with the hash, the command to approve it and what is known", async () => {
  const error = await refused(confirmTrusted(request(), { approveCommand: "cxagent approve /p" }));
  expect(error.code).toBe("E_NOT_APPROVED");
  expect(error.message).toBe("plugin 'calc' was not loaded: it has not been approved (hash sha256:abc)");
  expect(error.hint).toBe("review its files, then approve exactly these: a person at a prompt, or by pinning this hash");
  expect(error.next).toEqual({ do: "approve", ref: "cxagent approve /p", hash: "sha256:abc" });
  expect(error.details).toEqual({ plugin: "calc", hash: "sha256:abc", folder: "/real/p", state: "new", changes: null, approvedElsewhere: [] });
});

test("why it is not approved: changed files, or a same-named plugin approved elsewhere", () => {
  const changes = { modified: ["calc.so"], added: [], removed: [] };
  const changed = notApproved(request({ state: "changed", changes, approvedElsewhere: ["/other"] }), "a");
  expect(changed.message).toBe("plugin 'calc' was not loaded: its files changed since it was approved (modified: calc.so) (hash sha256:abc)");
  expect(changed.details).toEqual({ plugin: "calc", hash: "sha256:abc", folder: "/real/p", state: "changed", changes, approvedElsewhere: ["/other"] });
  expect(notApproved(request({ approvedElsewhere: ["/other", "/more"] }), "a").message).toBe(
    "plugin 'calc' was not loaded: it has not been approved: another plugin named calc is approved from /other, /more; this one is at /real/p (hash sha256:abc)",
  );
});

test("a person asked: yes approves it now; no is E_DENIED; both see the request as built", async () => {
  const seen: TrustRequest[] = [];
  const r = request({ state: "changed", changes: { modified: [], added: ["x"], removed: [] } });
  expect(await confirmTrusted(r, { approveCommand: "a", confirm: async (q) => (seen.push(q), true) })).toBe("now");
  const error = await refused(confirmTrusted(r, { approveCommand: "a", confirm: (q) => (seen.push(q), false) }));
  expect(error.code).toBe("E_DENIED");
  expect(error.message).toBe("plugin 'calc' was not approved, so it was not loaded");
  expect(seen).toEqual([r, r]);
});
