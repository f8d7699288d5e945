/**
 * A package made by `envworker init` from a checkout, installed with npm as its user installs it
 * (offline: its dependencies taken from this repository's node_modules), then its own `npm test`
 * and `npm run typecheck`. The checkout is a copy of this one in a temporary folder, so that its
 * dist/ (built here, then made stale by an edit) is nobody else's.
 *
 * It answered: npm's "1 package has install scripts not yet covered by allowScripts:
 * envworker@0.1.0" (the key was the registry name, not the `file:` spec npm matches a local
 * dependency by); `npm test` failing on a checkout without dist/, or passing on a dist/ older than
 * the checkout; `respond: async ({ sandbox }) => sandbox.run(...)` failing tsc (sandbox possibly
 * undefined); `e.step(undefined)` crashing inside dist/ (`reading 'content'`); and vitest's 5 s
 * timeout for a test that runs code.
 */
import { execFile } from "node:child_process";
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepopulate } from "../helpers/offline-install.ts";
import { cleanEnv, ROOT } from "../helpers/own-package.ts";

let tmp: string;
let checkout: string;
let project: string;
let installOutput = "";

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((res) =>
    execFile(cmd, args, { cwd, env: cleanEnv({ CI: "true", WRANGLER_SEND_METRICS: "false" }), maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      res({ code: err ? ((err as { code?: number }).code ?? -1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}

/** An environment that runs the model's code, written as docs/authoring.md shows. */
const CODE_ENV = `import { defineEnvironment, extractTag } from "envworker";

export default defineEnvironment({
  name: "run-it",
  description: "Write code; the environment runs it and says what it gave.",
  version: "0.1.0",
  dataset: () => [{ prompt: "Compute 6 * 7 in a <code> block.", answer: "42" }],
  maxTurns: 2,
  respond: async ({ sandbox, lastText, turn }) => {
    const r = await sandbox.run(extractTag(lastText, "code") ?? "", { timeoutMs: 2000 });
    return { messages: r.ok ? \`Result: \${JSON.stringify(r.result)}\` : \`\${r.error!.name}: \${r.error!.message}\`, done: turn >= 2 };
  },
  rubric: [
    {
      name: "right",
      fn: async ({ completion, sandbox, answer }) => {
        const code = extractTag(completion.find((m) => m.role === "assistant")?.content ?? "", "code") ?? "";
        return String((await sandbox.run(code)).result) === answer;
      },
    },
  ],
});
`;

const CODE_TEST = `import { describe, expect, it } from "vitest";
import { playEpisode, startEpisode } from "envworker/testing";
import env from "../src/code.ts";

describe("run-it", () => {
  it("runs the model's code in the sandbox", async () => {
    const episode = await playEpisode(env, { actions: ["<code>6 * 7</code>", "done"] });
    expect(episode.completion[1]!.content).toBe("Result: 42");
    expect(episode.reward).toBe(1);
  });

  it("a turn that is not one is a clear error", async () => {
    const e = await startEpisode(env);
    await expect(e.step(undefined as never)).rejects.toThrow(/run-it: step\\(\\) got undefined: a turn is the model's text \\(a string\\) or an action/);
    await e.close();
  });
});
`;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "envworker-install-"));
  // As a home folder is: the sandbox's processes run as a user of their own (as root, the server
  // confines them so) and must reach their code under the checkout (mkdtemp makes 0700).
  chmodSync(tmp, 0o755);
  checkout = join(tmp, "envworker");
  mkdirSync(checkout);
  for (const f of ["src", "zygote", "envs", "bin", "scripts", "templates", "package.json", "tsconfig.json", "tsconfig.build.json", "tsconfig.build-worker.json", "tsconfig.worker.json", "README.md"]) {
    cpSync(join(ROOT, f), join(checkout, f), { recursive: true, filter: (p) => !p.includes("/dist/") });
  }
  symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"));
  project = join(tmp, "my-env");
  const init = await run(process.execPath, [join(checkout, "bin/envworker.js"), "init", "my-env", "--dir", project], tmp);
  expect(init.code, init.out).toBe(0);
  writeFileSync(join(project, "src/code.ts"), CODE_ENV);
  writeFileSync(join(project, "test/code.test.ts"), CODE_TEST);
  const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
  await prepopulate(ROOT, project, Object.keys(pkg.devDependencies));
  const installed = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--cache", join(tmp, "npm-cache")], project);
  installOutput = installed.out;
  expect(installed.code, installed.out).toBe(0);
}, 600_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("a package made by init from a checkout, installed with npm", () => {
  it("npm install links the checkout, with envworker's install script allowed by the key npm matches", () => {
    expect(lstatSync(join(project, "node_modules/envworker")).isSymbolicLink()).toBe(true);
    expect(realpathSync(join(project, "node_modules/envworker"))).toBe(realpathSync(checkout));
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(pkg.allowScripts[`file:${checkout}`]).toBe(true);
    expect(installOutput).not.toMatch(/not yet covered by allowScripts/);
  });

  it("npm test builds the checkout's missing dist/ first, then passes (a code environment included)", async () => {
    expect(existsSync(join(checkout, "dist"))).toBe(false);
    const r = await run("npm", ["test"], project);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/envworker build: envworker's dist\/ in .* is not built; building dist\/ in /);
    expect(r.out).toMatch(/Tests\s+8 passed/);
    expect(existsSync(join(checkout, "dist/build-stamp.json"))).toBe(true);
  }, 900_000);

  it("npm run typecheck: respond: async ({ sandbox }) => sandbox.run(...) compiles; dist/ is fresh, not built again", async () => {
    const r = await run("npm", ["run", "typecheck"], project);
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toMatch(/building dist/);
  }, 300_000);

  it("npx envworker runs the checkout's dist/ while it is the build of the sources, and the sources once they change", async () => {
    // Which code runs shows in --version: each copy of envworkerVersion is made to name itself.
    const mark = (file: string, label: string) => {
      const before = readFileSync(file, "utf8");
      const after = before.replace(/export function envworkerVersion\(\)(: string)? \{/, (m) => `${m} return "${label}";`);
      expect(after).not.toBe(before);
      writeFileSync(file, after);
      return () => writeFileSync(file, before);
    };
    const version = async () => (await run(process.execPath, [join(project, "node_modules/.bin/envworker"), "--version"], project)).out.trim();
    const unmarkDist = mark(join(checkout, "dist/src/cli/version.js"), "compiled");
    try {
      // dist/ is fresh (the test above built it; its stamp covers the sources, not dist/ itself).
      expect(await version()).toBe("compiled");
      const unmarkSource = mark(join(checkout, "src/cli/version.ts"), "sources");
      try {
        // A source changed (a git pull, an edit): its dist/ is older, so the sources run, through tsx.
        expect(await version()).toBe("sources");
      } finally {
        unmarkSource();
      }
      expect(await version()).toBe("compiled");
    } finally {
      unmarkDist();
    }
  }, 300_000);

  it("once the checkout changes, its stale dist/ is refused, naming what changed; build --check says so", async () => {
    const file = join(checkout, "src/env/messages.ts");
    const before = readFileSync(file, "utf8");
    writeFileSync(file, `${before}\n// a git pull\n`);
    try {
      const check = await run(process.execPath, [join(project, "node_modules/.bin/envworker"), "build", "--check"], project);
      expect(check.code).toBe(1);
      expect(check.out).toMatch(/is older than its sources \(changed since it was built: src\/env\/messages\.ts\)/);
      // vitest run directly (no pretest): envworker/testing refuses to load the older code.
      const direct = await run(process.execPath, [join(project, "node_modules/vitest/vitest.mjs"), "run", "test/env.test.ts"], project);
      expect(direct.code).not.toBe(0);
      expect(direct.out).toMatch(/envworker's dist\/ in .* is older than its sources \(changed since it was built: src\/env\/messages\.ts\): run `npx envworker build`/);
    } finally {
      writeFileSync(file, before);
    }
    const again = await run(process.execPath, [join(project, "node_modules/.bin/envworker"), "build", "--check"], project);
    expect(again.code, again.out).toBe(0);
  }, 300_000);
});
