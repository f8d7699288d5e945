/**
 * envworker as a library, end to end, as a new user meets it: build and `npm pack` envworker,
 * `envworker init` a package in a temporary folder, install the tarball there offline, add a
 * second environment (and a deliberately broken module), then the package's own `npm test`,
 * `envworker list|serve|validate|eval`, an OpenEnv-style WebSocket client playing an episode
 * to its reward, and the package's Worker in workerd. Nothing here imports envworker's src/.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fixtures/fake-openai.ts";
import { get, post } from "../helpers/http.ts";
import { installOffline, prepopulate } from "../helpers/offline-install.ts";
import { startWorkerd, type WorkerdServer } from "../helpers/workerd.ts";
import { OpenEnvWsClient } from "../helpers/ws-client.ts";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");

/** The README example of the scaffold (seed 7, secret 42): bisection's guesses and the reward. */
const GUESSES = [50, 25, 37, 43, 40, 42].map((n) => `<guess>${n}</guess>`);
const README_REWARD = 1.0833333333333333;

const SECOND_ENV = `import { defineEnvironment, parseAnswer, z } from "envworker";

const SENTENCES = ["the cat sat on the mat", "a b c", "envworker serves environments", "one"];

export default defineEnvironment({
  name: "count-words",
  description: "Count the words of a sentence.",
  version: "0.1.0",
  args: z.object({}).strict(),
  dataset: () => SENTENCES.map((s, i) => ({ prompt: s, answer: String(s.split(" ").length), id: i })),
  systemPrompt: "How many words? Answer in <answer></answer> tags.",
  maxTurns: 1,
  rubric: [{ name: "exact", weight: 1, fn: ({ completion, answer }) => parseAnswer(completion, "answer") === answer }],
});
`;

const BROKEN_ENVS = `import { defineEnvironment } from "envworker";

const base = {
  description: "Broken on purpose.",
  version: "0.1.0",
  generate: () => ({ prompt: "say something", answer: "x" }),
  maxTurns: 3,
};

export default [
  defineEnvironment({
    ...base,
    name: "broken-respond",
    respond: () => {
      throw new Error("boom in respond");
    },
    rubric: [{ name: "one", fn: () => 1 }],
  }),
  defineEnvironment({
    ...base,
    name: "broken-reward",
    maxTurns: 1,
    rubric: [
      {
        name: "parse",
        fn: ({ completion }) => {
          throw new TypeError("reward cannot parse " + completion.length);
        },
      },
    ],
  }),
  defineEnvironment({
    ...base,
    name: "broken-state",
    initialState: () => ({ started: new Date(0) }) as never,
    rubric: [{ name: "one", fn: () => 1 }],
  }),
];
`;

/** The environment without vitest's variables, so the project's own vitest starts as from a terminal. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("VITEST") && k !== "NODE_OPTIONS" && k !== "TINYPOOL_WORKER_ID") env[k] = v;
  return { ...env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1", ...extra };
}

let tmp: string;
let project: string;
let bin: string;

async function envworker(args: string[], extraEnv: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: project, env: cleanEnv(extraEnv), maxBuffer: 16 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** `envworker serve --port 0 ...` in the project; resolves with the URL it prints. */
function serve(args: string[], env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stderr: () => string }> {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], { cwd: project, env: cleanEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += String(d)));
  return new Promise((resolveUrl, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /serving \d+ environment\(s\) on (http:\/\/\S+)/.exec(out);
      if (m) resolveUrl({ url: m[1]!, child, stderr: () => err });
    });
    child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${out}\n${err}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

// Each step spawns npm, node or wrangler on a machine other tests keep busy: generous limits.
describe("envworker as a library: init, install the packed tarball offline, test, serve, validate, eval, workerd", { timeout: 240_000 }, () => {
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "envworker-e2e-"));
    // The package as npm would publish it. dist/ is already the build of the sources (vitest's
    // globalSetup, test/global-setup.ts), so prepack's build (npm run build) is skipped: it would
    // delete and rewrite dist/ under the servers other test files are starting from it.
    // own-package-install.test.ts runs the build itself, in a copy of the checkout.
    const packed = await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", tmp], { cwd: ROOT, env: cleanEnv(), maxBuffer: 64 << 20 });
    const tarball = join(tmp, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);

    project = join(tmp, "my-env");
    const init = await run(process.execPath, [join(ROOT, "bin/envworker.js"), "init", "my-env", "--dir", project], { env: cleanEnv() });
    expect(init.stdout).toMatch(/created/);

    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const envworkerDeps = Object.keys((JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> }).dependencies);
    await prepopulate(ROOT, project, [...envworkerDeps, ...Object.keys(pkg.devDependencies)]);
    await installOffline(project, tarball, join(tmp, "npm-cache"), cleanEnv());
    bin = join(project, "node_modules/envworker/bin/envworker.js");

    // The user's additions: a second environment listed in package.json, and a broken module.
    writeFileSync(join(project, "src/count-words.ts"), SECOND_ENV);
    writeFileSync(join(project, "src/broken.ts"), BROKEN_ENVS);
    const withSecond = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { envworker: { environments: string[] } };
    withSecond.envworker.environments.push("./src/count-words.ts");
    writeFileSync(join(project, "package.json"), JSON.stringify(withSecond, null, 2));
  }, 600_000);

  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("installed envworker from the tarball: dist, no TypeScript sources, no tsx needed by importers", async () => {
    const installed = join(project, "node_modules/envworker");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining([".", "./node", "./workers", "./testing", "./envs/*"]));
    // Plain node (no loader) imports the public API and a shipped environment.
    const script = `import("envworker").then(async (m) => { const w = (await import("envworker/envs/wordle")).default; console.log(typeof m.defineEnvironment, typeof m.sequenceRatio, typeof m.PyRandom, w.name); })`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: project, env: cleanEnv() });
    expect(stdout.trim()).toBe("function function function wordle");
    // The installed command finds its templates (dist/ layout): init works from the package too.
    const probe = await envworker(["init", "probe-env", "--dir", join(tmp, "probe-env")]);
    expect(probe.code).toBe(0);
    expect(readFileSync(join(tmp, "probe-env/src/index.ts"), "utf8")).toMatch(/name: "probe-env"/);
    expect(JSON.parse(readFileSync(join(tmp, "probe-env/package.json"), "utf8")).dependencies.envworker).toBe(`^${JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version}`);
  });

  it("the package's own unit tests pass (npm test: vitest with envworker/testing), and it type-checks against envworker's .d.ts", async () => {
    const { stdout } = await run("npm", ["test"], { cwd: project, env: cleanEnv(), maxBuffer: 16 << 20 });
    expect(stdout).toMatch(/Tests\s+\d+ passed/);
    // tsc exits non-zero on any type error (the second environment and the broken module included).
    await run("npm", ["run", "typecheck"], { cwd: project, env: cleanEnv(), maxBuffer: 16 << 20 });
  });

  it("lists the project's environments from package.json", async () => {
    const r = await envworker(["list"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^my-env\s/m);
    expect(r.stdout).toMatch(/^count-words\s/m);
    expect(r.stdout).not.toMatch(/wordle/);
  });

  it("serves them; an OpenEnv WebSocket client plays my-env to its reward; a throwing respond is 422 and logged with its stack", async () => {
    const server = await serve(["my-env", "count-words", "./src/broken.ts"], { ENVWORKER_LOG: "info" });
    try {
      const ws = await OpenEnvWsClient.connect(`${server.url}/envs/my-env`);
      const reset = await ws.reset({ seed: 7 });
      expect(reset.type).toBe("observation");
      expect(reset.data.observation.messages.at(-1).content).toMatch(/between 1 and 100/);
      let last = reset;
      for (const guess of GUESSES) last = await ws.step({ content: guess });
      expect(last.data.done).toBe(true);
      expect(last.data.reward).toBe(README_REWARD);
      ws.close();

      const r = await post(`${server.url}/envs/count-words/reset`, { index: 0 });
      const s = await post(`${server.url}/envs/count-words/step`, { episode_id: r.body.episode_id, action: { content: "<answer>6</answer>" } });
      expect(s.body).toMatchObject({ done: true, reward: 1 });

      const b = await post(`${server.url}/envs/broken-respond/reset`, { seed: 1 });
      const bad = await post(`${server.url}/envs/broken-respond/step`, { episode_id: b.body.episode_id, action: { content: "hi" } });
      expect(bad.status).toBe(422);
      expect(bad.body.error).toMatchObject({ code: "EXECUTION_ERROR" });
      expect(bad.body.error.message).toMatch(/respond failed: boom in respond/);
      // The episode is kept as it was: the client may step again.
      expect((await get(`${server.url}/envs/broken-respond/state?episode_id=${b.body.episode_id}`)).body.step_count).toBe(0);
      await new Promise((r) => setTimeout(r, 100));
      const log = server.stderr();
      expect(log).toMatch(new RegExp(`error step failed: broken-respond: respond failed: boom in respond env=broken-respond episode=${b.body.episode_id}`));
      expect(log).toMatch(/Error: boom in respond\n\s+at .*broken\.ts/);
      // ENVWORKER_LOG=info: one line per request.
      expect(log).toMatch(/ info POST \/envs\/count-words\/step 200 ms=/);
    } finally {
      await stop(server.child);
    }
  });

  it("validates: PASS for the project (in process and --url with an environment's URL), FAIL with the errors and exit 1 for the broken module", async () => {
    const ok = await envworker(["validate"]);
    expect(ok.stdout).toMatch(/^PASS my-env$/m);
    expect(ok.stdout).toMatch(/^PASS count-words$/m);
    expect(ok.code).toBe(0);

    const server = await serve([]);
    try {
      const remote = await envworker(["validate", "--url", `${server.url}/envs/my-env`]);
      expect(remote.stdout).toMatch(/^PASS my-env$/m);
      expect(remote.stdout).not.toMatch(/count-words/);
      expect(remote.code).toBe(0);
    } finally {
      await stop(server.child);
    }

    const bad = await envworker(["validate", "./src/broken.ts"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^FAIL broken-respond$/m);
    expect(bad.stdout).toMatch(/step 1: HTTP 422 EXECUTION_ERROR: broken-respond: respond failed: boom in respond/);
    expect(bad.stdout).toMatch(/^FAIL broken-reward$/m);
    expect(bad.stdout).toMatch(/reward function parse failed: TypeError: reward cannot parse 1/);
    expect(bad.stdout).toMatch(/^FAIL broken-state$/m);
    expect(bad.stdout).toMatch(/state\.started: Date is not JSON/);

    const unreachable = await envworker(["validate", "--url", "http://127.0.0.1:9/envs/my-env"]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr.trim().split("\n")).toHaveLength(1);
    expect(unreachable.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  it("evaluates a model on the project's environment (envworker eval, a fake OpenAI-compatible model)", async () => {
    const fake: FakeOpenAI = await startFakeOpenAI(() => ({ message: { content: "<guess>0</guess>" } }));
    try {
      const r = await envworker(["eval", "my-env", "-m", "fake", "-b", fake.baseURL, "-n", "2", "-r", "1", "-a", '{"max_guesses": 2}']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/reward: avg - /);
      // Two examples, two guesses each: the args reached the environment (maxTurns from args).
      expect(fake.requests.length).toBe(4);
    } finally {
      await fake.close();
    }
  });

  describe("the package's Worker (envworker/workers) in workerd", () => {
    let worker: WorkerdServer;
    beforeAll(async () => {
      // The user serves the second environment from Workers too.
      writeFileSync(
        join(project, "src/worker.ts"),
        readFileSync(join(project, "src/worker.ts"), "utf8")
          .replace('import env from "./index.ts";', 'import env from "./index.ts";\nimport countWords from "./count-words.ts";')
          .replace("createWorker([env])", "createWorker([env, countWords])"),
      );
      const out = join(tmp, "worker-bundle");
      await run(join(project, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out], { cwd: project, env: cleanEnv(), maxBuffer: 16 << 20 });
      worker = await startWorkerd({ dir: out, rawBytes: 0, gzipBytes: 0 }, join(tmp, "do-state"));
    }, 180_000);
    afterAll(async () => {
      await worker?.dispose();
    });

    it("plays my-env to the README's reward over HTTP and count-words over WebSocket", async () => {
      const envs = (await get(`${worker.url}/envs`)).body.envs.map((e: { name: string }) => e.name);
      expect(envs).toEqual(["my-env", "count-words"]);
      const r = await post(`${worker.url}/envs/my-env/reset`, { seed: 7 });
      let last = r.body;
      for (const guess of GUESSES) last = (await post(`${worker.url}/envs/my-env/step`, { episode_id: r.body.episode_id, action: { content: guess } })).body;
      expect(last).toMatchObject({ done: true, reward: README_REWARD });

      const ws = await OpenEnvWsClient.connect(`${worker.url}/envs/count-words`);
      await ws.reset({ index: 2 });
      const step = await ws.step({ content: "<answer>3</answer>" });
      expect(step.data).toMatchObject({ done: true, reward: 1 });
      ws.close();
    });
  });
});
