/**
 * What a plugin host is given to run with: an allow-list of the parent's environment
 * (src/session/host-env.ts), what CXAGENT_PASS_ENV names, and what a script passes itself —
 * never a secret of the parent's, never a loader setting.
 */
import { afterEach, expect, test } from "bun:test";
import { approve, cli, fixture, openSession } from "../helpers.ts";

const saved = { ...process.env };
afterEach(() => {
  for (const key of ["CXAGENT_SECRET_FOR_TEST", "LD_LIBRARY_PATH", "NODE_OPTIONS"]) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

test("a plugin sees PATH and HOME, what the script passes, and no secret or loader setting of the parent's", async () => {
  process.env.CXAGENT_SECRET_FOR_TEST = "s3cret";
  process.env.LD_LIBRARY_PATH = "/nonexistent-cxagent-test-folder";
  process.env.NODE_OPTIONS = "--max-old-space-size=64";
  await using session = await openSession({ env: { CXAGENT_PASSED_FOR_TEST: "given" } });
  const plugin = await session.load(fixture("reports-environment"));
  const { env } = (await plugin.invoke("reports_environment")).output as { env: Record<string, string | null> };
  expect(env.PATH).toBe(process.env.PATH!);
  expect(env.HOME).toBe(process.env.HOME!);
  expect(env.CXAGENT_PASSED_FOR_TEST).toBe("given");
  expect(env.CXAGENT_SECRET_FOR_TEST).toBeNull();
  expect(env.LD_LIBRARY_PATH).toBeNull();
  expect(env.NODE_OPTIONS).toBeNull();
});

test("CXAGENT_PASS_ENV names more variables to pass, but never a loader setting", async () => {
  await approve(fixture("reports-environment"));
  const r = await cli(["invoke", fixture("reports-environment"), "reports_environment", "--json"], {
    env: {
      CXAGENT_SECRET_FOR_TEST: "s3cret",
      CXAGENT_PASSED_FOR_TEST: "named",
      LD_LIBRARY_PATH: "/nonexistent-cxagent-test-folder",
      CXAGENT_PASS_ENV: "CXAGENT_PASSED_FOR_TEST,LD_LIBRARY_PATH",
    },
  });
  expect(r.code).toBe(0);
  const env = r.json().result.output.env;
  expect(env).toMatchObject({ CXAGENT_PASSED_FOR_TEST: "named", CXAGENT_SECRET_FOR_TEST: null, LD_LIBRARY_PATH: null });
});
