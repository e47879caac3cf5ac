import { expect, test } from "bun:test";
import { parseConfig } from "../../src/discovery/config.ts";
import { withoutBoundEnv } from "../../src/secrets/broker.ts";
import { describeBinding } from "../../src/secrets/resolve.ts";
import { markerAt } from "../../src/secrets/echo.ts";

const entry = (secrets: unknown) => ({ plugins: { gh: { file: "gh.so", secrets } } });

test("a binding is a file, a command or an environment variable; anything else is refused by its path", () => {
  const config = parseConfig(entry({ "github.token": { file: "~/t" }, "a.b": { command: ["secret-tool", "lookup", "x y"] }, ci: { env: "GH_TOKEN" } }), "/c/config.json");
  expect(config.plugins.get("gh")!.secrets).toEqual({ "github.token": { file: "~/t" }, "a.b": { command: ["secret-tool", "lookup", "x y"] }, ci: { env: "GH_TOKEN" } });
  const bad = (secrets: unknown) => {
    try {
      parseConfig(entry(secrets), "/c/config.json");
      return "accepted";
    } catch (error) {
      return (error as Error).message;
    }
  };
  expect(bad({ "github.token": { value: "hunter22hunter" } })).toContain(`plugins.gh.secrets["github.token"]: must be one of {"file": "~/path"}, {"command": ["program", "arg", …]} or {"env": "NAME"}`);
  expect(bad({ "github.token": { command: [] } })).toContain("plugins.gh.secrets");
  expect(bad({ GitHub: { env: "X" } })).toContain(`"GitHub" is not a secret name`);
  expect(bad({ t: { env: "not a name" } })).toContain("plugins.gh.secrets.t");
});

test("a binding is shown in words, never a value", () => {
  expect(describeBinding({ file: "~/t" })).toBe("file ~/t");
  expect(describeBinding({ command: ["secret-tool", "lookup", "a b"] })).toBe(`command secret-tool lookup "a b"`);
  expect(describeBinding({ env: "GH_TOKEN" })).toBe("environment variable GH_TOKEN");
});

test("variables a secret is bound to leave a plugin host's environment; others stay", () => {
  const config = parseConfig(entry({ ci: { env: "GH_TOKEN" } }), "/c/config.json");
  expect(withoutBoundEnv({ GH_TOKEN: "x", HOME: "/h" }, config)).toEqual({ HOME: "/h" });
  const none = parseConfig({ plugins: {} }, "/c/config.json");
  const env = { GH_TOKEN: "x" };
  expect(withoutBoundEnv(env, none)).toBe(env);
});

test("the marker is found in any string or key of the arguments, with its path", () => {
  expect(markerAt({ a: [1, { b: "x [REDACTED:t] y" }] })).toBe("a[1].b");
  expect(markerAt({ "[REDACTED:t]": 1 })).toBe("[REDACTED:t] (its key)");
  expect(markerAt("[REDACTED:t]")).toBe("(the whole argument)");
  expect(markerAt({ a: "REDACTED", b: "[REDACTED" })).toBeNull();
});
