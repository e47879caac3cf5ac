import { expect, test } from "bun:test";
import { checkManifest, type Manifest } from "../../src/protocol/manifest.ts";
import { firstDifference } from "../../src/session/compare.ts";
import { describeSecrets } from "../../src/cli/_trust-prompt.ts";

const base = { pluginContract: 4, name: "gh", version: "1.0.0", tools: [{ name: "gh_issue" }] };

function parse(input: unknown): Manifest {
  const checked = checkManifest(input);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return checked.manifest;
}

test("a manifest declares the secrets it may ask for, with a description defaulting to empty", () => {
  const m = parse({ ...base, secrets: [{ name: "github.token", description: "a GitHub token" }, { name: "db_pass-2" }] });
  expect(m.secrets).toEqual([{ name: "github.token", description: "a GitHub token" }, { name: "db_pass-2", description: "" }]);
  expect(parse(base).secrets).toBeUndefined();
});

test("a secret name outside ^[a-z0-9][a-z0-9_.-]{0,63}$, a repeat, or an unknown key is refused by its path", () => {
  const checked = checkManifest({ ...base, secrets: [{ name: "GitHub" }, { name: ".x" }, { name: "a".repeat(65) }, { name: "ok" }, { name: "v", value: "x" }] });
  expect(checked.ok).toBe(false);
  if (checked.ok) return;
  const messages = checked.problems.map((p) => p.message).join("\n");
  expect(messages).toContain(`secrets[0].name: the string "GitHub" is not a secret name`);
  expect(messages).toContain("(secret 'GitHub')");
  expect(messages).toContain(`secrets[1].name: the string ".x" is not a secret name`);
  expect(messages).toContain("secrets[2].name");
  expect(messages).toContain("secrets[4] declares 'value'");
  const twice = checkManifest({ ...base, secrets: [{ name: "ok" }, { name: "ok" }] });
  expect(twice.ok ? [] : twice.problems.map((p) => p.message)).toEqual(["secrets[1]: secret 'ok' is declared more than once (secret 'ok')"]);
});

test("describe must declare the same secrets as the sidecar", () => {
  const sidecar = parse({ ...base, secrets: [{ name: "github.token" }] });
  expect(firstDifference(sidecar, parse(base))).toContain("the sidecar declares secrets=");
  expect(firstDifference(sidecar, parse({ ...base, secrets: [{ name: "github.token" }] }))).toBeNull();
});

test("the trust prompt says which secrets the plugin may ask for, each made inert", () => {
  expect(describeSecrets(parse(base))).toBe("asks for none");
  expect(describeSecrets(parse({ ...base, secrets: [{ name: "github.token", description: "read issues\u001b[31m" }, { name: "db" }] }))).toBe(
    "may ask for: github.token — read issues\\x1b[31m; db",
  );
});
