/**
 * A module plugin's Workers are inside its load set (issue 36, point 2): the loader hook applies
 * in every Worker it starts (`new Worker` and `node:worker_threads`, nested ones too), a Worker
 * whose entry is outside the plugin's folder is refused unless the user listed that folder in the
 * plugin's "workerFolders", and a package another local user planted where resolution walks —
 * `/tmp/node_modules`, or a node_modules in a folder above the snapshot — never runs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateFolderProblem } from "../../src/host/private-folder.ts";
import type { Session } from "../../src/index.ts";
import { cli, openSession, RUNTIME_DIR, tempDir, writeModule } from "../helpers.ts";
import { LOCAL_USER, localUser, type LocalUser } from "../local-user.ts";

const PACKAGE = `cxagent-planted-${process.pid}`;
const PLANTED = "the planted package ran, as the user who loaded the plugin";

/** A module whose tool `work` starts a Worker (`how`) from `entry` and answers what it posted. */
function workerPlugin(dir: string, name: string, how: "web" | "threads", entry = `new URL("./worker.ts", import.meta.url).href`): string {
  const start =
    how === "web"
      ? `const w = new Worker(${entry}); w.onmessage = (e) => resolve(e.data); w.onerror = (e) => resolve("worker error: " + e.message); return w;`
      : `const { Worker } = await import("node:worker_threads"); const w = new Worker(${entry}.startsWith("file:") ? new URL(${entry}) : ${entry}); w.on("message", resolve); w.on("error", (e) => resolve("worker error: " + e.message)); return w;`;
  const folder = writeModule(
    dir,
    name,
    `export default { start() {}, stop() {}, async invoke() {
  let worker;
  const posted = await new Promise(async (resolve) => {
    try { worker = await (async () => { ${start} })(); } catch (e) { resolve("refused: " + e.message); }
  });
  await worker?.terminate();
  return { success: true, output: { posted } };
} };`,
  );
  // The Worker: an approved import, then the optional dependency the plugin does not ship, probed
  // the usual way; it posts what it got.
  const post = how === "web" ? "postMessage" : `(await import("node:worker_threads")).parentPort.postMessage`;
  writeFileSync(
    join(folder, "worker.ts"),
    `import { helper } from "./helper.ts";
const optional = await import(${JSON.stringify(PACKAGE)}).then((m) => m.default, (e) => "import failed: " + e.message);
${post}(helper + " | " + optional);
`,
  );
  writeFileSync(join(folder, "helper.ts"), `export const helper = "approved helper";`);
  return folder;
}

/** Writes the planted package into `nodeModules` as `user`. */
function plant(user: LocalUser, nodeModules: string) {
  const r = user.run(["sh", "-c", `mkdir -p "$1/${PACKAGE}" && printf '%s\\n' "export default ${JSON.stringify(PLANTED).replaceAll('"', '\\"')};" > "$1/${PACKAGE}/index.js"`, "plant", nodeModules]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(existsSync(join(nodeModules, PACKAGE, "index.js"))).toBe(true);
}

async function invoke(session: Session, folder: string): Promise<string> {
  const plugin = await session.load(folder);
  try {
    return ((await plugin.invoke("work", {})).output as { posted: string }).posted;
  } finally {
    await session.unload(plugin.name);
  }
}

describe.skipIf(!LOCAL_USER)("a second local user plants a package where a module plugin's Worker would resolve it", () => {
  let user: LocalUser;
  let madeTmpModules = false;
  beforeAll(() => {
    const cleanup = [join("/tmp/node_modules", PACKAGE)];
    user = localUser(cleanup);
    madeTmpModules = !existsSync("/tmp/node_modules");
    if (madeTmpModules) {
      cleanup.push("/tmp/node_modules");
      mkdirSync("/tmp/node_modules", { mode: 0o755 });
      chownSync("/tmp/node_modules", user.uid, user.gid); // as if the other user had made it (removed with the user)
    }
  });
  afterAll(() => user?.[Symbol.dispose]());

  test("in /tmp/node_modules: the snapshot is not under /tmp, so neither the Worker nor the plugin finds it; it never runs", async () => {
    if (!madeTmpModules) {
      // someone else's: the other user writes into it only if it may
      if (user.run(["test", "-w", "/tmp/node_modules"]).code !== 0) return console.error("skipping the /tmp/node_modules attack: /tmp/node_modules exists already, and the other user cannot write it");
    }
    plant(user, "/tmp/node_modules");
    using dir = tempDir();
    await using session = await openSession();
    for (const how of ["web", "threads"] as const) {
      const posted = await invoke(session, workerPlugin(dir.path, `tmp-${how}`, how));
      expect(posted).toStartWith(`approved helper | import failed: Cannot find package '${PACKAGE}'`);
      expect(posted).not.toContain(PLANTED);
    }
  });

  test("in a node_modules above the snapshot: the Worker's import is refused by the plugin's loader, naming the file, in new Worker, worker_threads and a Worker's Worker", async () => {
    // A folder on the walk from the snapshot that the other user can write (as on a machine whose
    // snapshots' folder were shared): the loader hook in the Worker is what refuses it.
    // (Under /run, not in this user's 0700 home, so that the other user can reach it.)
    if (!existsSync("/run") || privateFolderProblem("/run/x") !== null) return console.error("skipping the node_modules-above-the-snapshot attack: /run is missing, or not root's alone");
    const base = mkdtempSync("/run/cxagent-walk-");
    chmodSync(base, 0o711);
    try {
      const nodeModules = join(base, "node_modules");
      mkdirSync(nodeModules, { mode: 0o755 });
      chownSync(nodeModules, user.uid, user.gid);
      plant(user, nodeModules);
      using dir = tempDir();
      await using session = await openSession({ snapshotDir: join(base, "snapshots") });
      const refused = `import failed: the plugin imports ${join(nodeModules, PACKAGE, "index.js")}, which is outside its folder`;
      for (const how of ["web", "threads"] as const) {
        const posted = await invoke(session, workerPlugin(dir.path, `walk-${how}`, how));
        expect(posted).toStartWith(`approved helper | ${refused}`);
      }
      // A Worker started by a Worker: the preload wraps the constructors there too.
      const nested = workerPlugin(dir.path, "walk-nested", "web");
      writeFileSync(join(nested, "outer.ts"), `const w = new Worker(new URL("./worker.ts", import.meta.url).href); w.onmessage = (e) => { postMessage("nested: " + e.data); w.terminate(); };`);
      writeFileSync(join(nested, "walk-nested.ts"), (await Bun.file(join(nested, "walk-nested.ts")).text()).replace("./worker.ts", "./outer.ts"));
      expect(await invoke(session, nested)).toStartWith(`nested: approved helper | ${refused}`);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("a Worker's entry", () => {
  test("outside the plugin's folder is refused when the Worker is made, naming it; under a folder of its \"workerFolders\" it runs, read from disk", async () => {
    using dir = tempDir();
    const outside = join(dir.path, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "w.ts"), `postMessage("outside worker ran");`);
    const plugins = join(dir.path, "plugins");
    mkdirSync(plugins);
    const entry = JSON.stringify(join(outside, "w.ts"));
    workerPlugin(plugins, "starter", "web", entry);
    workerPlugin(plugins, "threads-starter", "threads", entry);
    const configDir = join(dir.path, "config");
    mkdirSync(configDir);
    const config = (allowed: string[]) =>
      writeFileSync(join(configDir, "config.json"), JSON.stringify({ pluginPaths: [plugins], plugins: { starter: { file: "starter.ts", workerFolders: allowed }, "threads-starter": { file: "threads-starter.ts", workerFolders: allowed } } }));
    config([]);
    {
      await using session = await openSession({ configDir });
      for (const name of ["starter", "threads-starter"]) {
        expect(await invoke(session, name)).toBe(
          `refused: the plugin starts a Worker from ${join(outside, "w.ts")}, which is outside its folder ${join(plugins, name)}: a module plugin's Workers may run only its approved files, or files under a folder listed in the plugin's "workerFolders" in your config.json`,
        );
      }
    }
    config([outside]);
    {
      await using session = await openSession({ configDir });
      for (const name of ["starter", "threads-starter"]) expect(await invoke(session, name)).toBe("outside worker ran");
    }
  });

  test("a project's config cannot list workerFolders: the whole file is refused", async () => {
    using dir = tempDir();
    mkdirSync(join(dir.path, ".cxagent"));
    writeFileSync(join(dir.path, ".cxagent", "config.json"), JSON.stringify({ plugins: { starter: { workerFolders: ["/"] } } }));
    const error = await openSession({ cwd: dir.path }).then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).toContain("workerFolders");
    expect(readdirSync(dir.path)).toEqual([".cxagent"]);
  });
});

describe.skipIf(!LOCAL_USER)("a second local user races the snapshot sweep", () => {
  test("planting snapshot-named folders and links, where snapshots are and where they used to be, while the user's sessions start and reap: refused, and nothing of the user's is removed", async () => {
    const dead = Bun.spawn(["true"]);
    await dead.exited;
    const start = readFileSync(`/proc/${process.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19]!;
    const name = `cxagent-module-${dead.pid}.${start}-evil${process.pid}`;
    const snapshots = join(RUNTIME_DIR, "cxagent");
    mkdirSync(snapshots, { recursive: true, mode: 0o700 });
    const victim = mkdtempSync(join(RUNTIME_DIR, "victim-"));
    writeFileSync(join(victim, "keep.txt"), "the user's own file");
    const planted = [join(snapshots, name), join("/tmp", name)];
    using user = localUser(planted);
    // The other user plants, in a loop, until told to stop: a folder, then a link to the victim, in each place.
    const stop = join("/tmp", `cxagent-race-stop-${process.pid}`);
    const script = `n=0; while [ ! -e "$1" ] && [ $n -lt 2000 ]; do for p in "$2" "$3"; do mkdir "$p" && rmdir "$p"; ln -s "$4" "$p" && rm -f "$p"; done; n=$((n+1)); done; mkdir "$3"; ln -s "$4" "$3/inner"`;
    const attacker = user.spawn(["sh", "-c", script, "race", stop, planted[0]!, planted[1]!, victim]);
    try {
      using dir = tempDir();
      const folder = writeModule(dir.path, "raced", `export default { start() {}, stop() {}, invoke() { return { success: true, output: {} }; } };`);
      for (let i = 0; i < 5; i++) {
        await using session = await openSession();
        const plugin = await session.load(folder);
        expect((await plugin.invoke("work", {})).success).toBe(true);
        expect((await cli(["reap", "--json"])).code).toBe(0);
      }
    } finally {
      writeFileSync(stop, "");
      await attacker.exited;
      rmSync(stop, { force: true });
    }
    const said = [...new Set((await new Response(attacker.stderr).text()).trim().split("\n"))];
    // every attempt at the snapshots' folder was refused (the other user cannot even reach it), and only those
    expect(said.sort()).toEqual([`ln: failed to create symbolic link '${planted[0]}': Permission denied`, `mkdir: cannot create directory '${planted[0]}': Permission denied`]);
    expect(existsSync(planted[0]!)).toBe(false);
    // what it left in /tmp is neither read nor removed by cxagent, and the victim is whole
    expect(existsSync(join(planted[1]!, "inner"))).toBe(true);
    expect(readFileSync(join(victim, "keep.txt"), "utf8")).toBe("the user's own file");
    rmSync(victim, { recursive: true, force: true });
  }, 60_000);
});
