// Where a server bundles its sandbox hosts (src/wall/confine.ts `bundleDirectory`): beside the
// packages, in node_modules/.cache, and what killed servers left there is removed by the next one,
// once it is over an hour old and its server's pid is gone; nothing of a live server is touched.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, utimesSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const CACHE = join(ROOT, "node_modules", ".cache");
const made: string[] = [];

function bundleDir(pid: number, ageMs: number): string {
  const dir = join(CACHE, `envworker-hosts-${pid}-test${made.length}`);
  mkdirSync(join(dir, "quickjs"), { recursive: true });
  const then = new Date(Date.now() - ageMs);
  utimesSync(dir, then, then);
  made.push(dir);
  return dir;
}

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

it("a new server removes bundles that killed servers left (over an hour old, pid gone), and only those", () => {
  // A pid that is not running: the first free one from the top of the usual range.
  let gone = 4_000_000;
  for (;;) {
    try {
      process.kill(gone, 0);
      gone--;
    } catch {
      break;
    }
  }
  const abandoned = bundleDir(gone, 2 * 60 * 60 * 1000);
  const young = bundleDir(gone, 60 * 1000);
  const live = bundleDir(process.pid, 2 * 60 * 60 * 1000);
  const script = `
    const { createIsolatedVmProcessSandbox } = await import(${JSON.stringify(join(ROOT, "src/sandbox/engines/isolated-vm/isolated-vm-process.ts"))});
    const sandbox = createIsolatedVmProcessSandbox({ maxConcurrency: 1 });
    const r = await sandbox.run("1 + 1");
    await sandbox.dispose();
    console.log(JSON.stringify(r.result));
  `;
  const child = spawnSync(process.execPath, ["--no-node-snapshot", "--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  expect(child.stderr).toBe("");
  expect(child.stdout.trim()).toBe("2");
  expect(existsSync(abandoned)).toBe(false);
  expect(existsSync(young)).toBe(true);
  expect(existsSync(live)).toBe(true);
});
