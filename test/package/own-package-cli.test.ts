/**
 * The command in a package made by `envworker init`, run from its directory: `serve --watch`
 * through every kind of save (a rename-style save, as sed -i and vim make, then saves in place),
 * a module that throws when it is imported (named with its file and line), a misspelt
 * environment's name (a suggestion), and environment threads that never run code other than the
 * server's.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { didYouMean } from "../../src/cli/load.ts";
import { environmentSource, importEnvironments } from "../../src/env/source.ts";
import { freePort } from "../helpers/serve-process.ts";
import { cleanEnv, makeOwnPackage, ROOT, type OwnPackage } from "../helpers/own-package.ts";

let pkg: OwnPackage;

beforeAll(async () => {
  pkg = await makeOwnPackage("my-env");
}, 60_000);

afterAll(() => pkg?.remove());

/** What GET /envs says of the package's environment. */
async function description(url: string): Promise<string> {
  try {
    const res = await fetch(`${url}/envs`);
    return ((await res.json()) as { envs: { description: string }[] }).envs[0]!.description;
  } catch {
    return "";
  }
}

/** Polls until the server describes its environment as `text` (each restart takes a second or two). */
async function served(url: string, text: string): Promise<string> {
  let now = "";
  for (let i = 0; i < 600 && now !== text; i++) {
    await new Promise((r) => setTimeout(r, 100));
    now = await description(url);
  }
  return now;
}

describe("serve --watch in the package", { timeout: 180_000 }, () => {
  it("restarts on every save, however the editor writes: renamed over, then written in place, then touched", async () => {
    const file = join(pkg.dir, "src/index.ts");
    const original = readFileSync(file, "utf8");
    const describe = (text: string) => original.replace(/description: "[^"]*"/, `description: ${JSON.stringify(text)}`);
    const port = await freePort();
    const serve = pkg.spawn(["serve", "--watch", "--port", String(port)]);
    try {
      await serve.waitFor(/serving \d+ environment\(s\) on (http:\/\/\S+)/);
      const url = `http://127.0.0.1:${port}`;
      const restarts = () => (serve.stderr().match(/changed; restarting the server/g) ?? []).length;

      // 1. sed -i: a new file renamed over the old one.
      execFileSync("sed", ["-i", `s/description: "[^"]*"/description: "one"/`, file]);
      expect(await served(url, "one")).toBe("one");
      // 2. In place (echo >>, an editor that writes the file itself): a comment at the end, then a new description.
      const afterRename = restarts();
      appendFileSync(file, "\n// appended in place\n");
      writeFileSync(file, describe("two"));
      expect(await served(url, "two")).toBe("two");
      expect(restarts()).toBeGreaterThan(afterRename);
      // 3. vim's way again (write a new file, rename it over), then an in-place write once more.
      writeFileSync(`${file}.tmp`, describe("three"));
      renameSync(`${file}.tmp`, file);
      expect(await served(url, "three")).toBe("three");
      writeFileSync(file, describe("four"));
      expect(await served(url, "four")).toBe("four");
      // 4. A new folder of the package's, and a file written in it: watched too.
      const beforeNew = restarts();
      mkdirSync(join(pkg.dir, "src/lib"));
      await new Promise((r) => setTimeout(r, 500));
      writeFileSync(join(pkg.dir, "src/lib/words.ts"), "export const WORDS = ['a'];\n");
      for (let i = 0; i < 100 && restarts() === beforeNew; i++) await new Promise((r) => setTimeout(r, 100));
      expect(serve.stderr()).toMatch(/src\/lib(\/words\.ts)? changed; restarting the server/);
      // 5. touch: a save that changes nothing still restarts.
      const beforeTouch = restarts();
      const now = new Date();
      utimesSync(file, now, now);
      for (let i = 0; i < 100 && restarts() === beforeTouch; i++) await new Promise((r) => setTimeout(r, 100));
      expect(restarts()).toBeGreaterThan(beforeTouch);
      expect(await served(url, "four")).toBe("four");
      // 6. A syntax error: the restart fails saying where (file:line:column), and the next save serves again.
      writeFileSync(file, describe("five").replace("const args = z", "const args = = z"));
      for (let i = 0; i < 300 && !/waiting for a change to restart it/.test(serve.stderr()); i++) await new Promise((r) => setTimeout(r, 100));
      expect(serve.stderr()).toMatch(/src\/index\.ts:\d+:\d+: ERROR: Unexpected "="/);
      expect(serve.stderr()).toMatch(/the server exited \(code 2\); waiting for a change to restart it/);
      writeFileSync(file, describe("six"));
      expect(await served(url, "six")).toBe("six");
    } finally {
      await serve.stop();
      writeFileSync(file, original);
    }
  });
});

describe("errors in the author's terms", { timeout: 60_000 }, () => {
  it("a module that throws at import is named with its file and line", async () => {
    mkdirSync(join(pkg.dir, "bad"), { recursive: true });
    writeFileSync(
      join(pkg.dir, "bad/import-throws.ts"),
      `import { defineEnvironment } from "envworker";\n\n// A bad literal.\nconst table = JSON.parse("{'a': 1}");\n\nexport default defineEnvironment({ name: "x", description: "x", version: "1", dataset: () => [{ prompt: "p" }], maxTurns: 1, rubric: [{ name: "r", fn: () => table.a }] });\n`,
    );
    const r = await pkg.run(["list", "./bad/import-throws.ts"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^envworker: \.\/bad\/import-throws\.ts: SyntaxError: Expected property name or '}' in JSON at position 1\n {4}at \S+\/bad\/import-throws\.ts:4:\d+$/m);
  });

  it("a syntax error is one line that starts with its file, line and column (what a thread that cannot load shows)", async () => {
    mkdirSync(join(pkg.dir, "bad"), { recursive: true });
    writeFileSync(join(pkg.dir, "bad/syntax.ts"), `import { defineEnvironment } from "envworker";
const x = = 1;
export default defineEnvironment({} as never);
`);
    const r = await pkg.run(["list", "./bad/syntax.ts"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^envworker: \.\/bad\/syntax\.ts: SyntaxError: \S+\/bad\/syntax\.ts:2:\d+: ERROR: Unexpected "="$/);
  });

  it("a misspelt environment gets a suggestion: a shipped one, and the package's own", async () => {
    const shipped = await pkg.run(["serve", "revers-text"]);
    expect(shipped.code).toBe(2);
    expect(shipped.stderr).toMatch(/unknown environment "revers-text" \(did you mean "reverse-text"\?\)/);
    const own = await pkg.run(["list", "my-en"]);
    expect(own.stderr).toMatch(/unknown environment "my-en" \(did you mean "my-env"\?\)/);
    expect(didYouMean("zzzz", ["reverse-text", "wordle"])).toBe("");
    expect(didYouMean("math", ["math-tools", "math-tools-python", "wordle"])).toBe(' (did you mean "math-tools" or "math-tools-python"?)');
  });
});

describe("the README's first screen", { timeout: 120_000 }, () => {
  it("its third paragraph gives the init command, and that command works from the checkout", async () => {
    // Paragraphs of prose: the title, code blocks and rules are not paragraphs.
    const text = readFileSync(join(ROOT, "README.md"), "utf8").split("\n---\n")[0]!.replace(/```[\s\S]*?```/g, "");
    const paragraphs = text.split(/\n\s*\n/).map((p) => p.trim()).filter((p) => p && !p.startsWith("#"));
    const third = paragraphs[2]!;
    const command = /`(npx envworker init my-env --dir \.\.\/my-env)`/.exec(third)?.[1];
    expect(command, third).toBeDefined();
    expect(third).toMatch(/from this\s+checkout/);
    // Run as written, from the checkout (its own bin: no registry), into a folder of our own.
    const dir = join(pkg.tmp, "readme");
    mkdirSync(dir);
    const args = command!.split(" ").slice(1).map((a) => (a === "../my-env" ? join(dir, "my-env") : a));
    const out = execFileSync("npx", ["--offline", ...args], { cwd: ROOT, env: cleanEnv(), encoding: "utf8" });
    expect(out).toMatch(/^created /);
    expect(JSON.parse(readFileSync(join(dir, "my-env/package.json"), "utf8")).dependencies.envworker).toBe(`file:${ROOT}`);
  });
});

describe("environment threads run the server's code", () => {
  it("a module loaded again after its files changed refuses to load, naming it", async () => {
    const dir = join(pkg.tmp, "threads");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "env.ts");
    const source = (word: string) =>
      `import { defineEnvironment } from ${JSON.stringify(pathToFileURL(join(pkg.dir, "node_modules/envworker/src/index.ts")).href)};\nexport default defineEnvironment({ name: "t", description: ${JSON.stringify(word)}, version: "1", dataset: () => [{ prompt: "p" }], maxTurns: 1, rubric: [{ name: "r", fn: () => 1 }] });\n`;
    writeFileSync(file, source("first"));
    const [env] = await importEnvironments(pathToFileURL(file).href);
    // What an environment thread is given: the module's URL and the server's fingerprint of its folder.
    const url = environmentSource(env!)!;
    expect(url).toMatch(/^file:.*\/env\.ts#envworker-files=[0-9a-f]{32}$/);
    // Unchanged: it loads.
    expect((await importEnvironments(url))[0]!.description).toBe("first");
    // Edited since: a thread would run other code than the server: it refuses, saying why.
    writeFileSync(file, source("second"));
    await expect(importEnvironments(url)).rejects.toThrow(/env\.ts: the environment's files \(under .*threads\) changed since the server loaded them; .*restart the server \(envworker serve --watch restarts it on every change\)/);
    // A file beside it counts too (a module the environment imports).
    writeFileSync(file, source("first"));
    expect((await importEnvironments(url))[0]!.description).toBe("first");
    writeFileSync(join(dir, "words.json"), "[]");
    await expect(importEnvironments(url)).rejects.toThrow(/changed since the server loaded them/);
  });
});
