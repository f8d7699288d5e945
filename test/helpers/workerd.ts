/**
 * Runs the deployable Worker bundle in workerd through Miniflare: the bundle is what
 * `wrangler deploy --dry-run` produces, so the tests exercise exactly what would be deployed.
 */
import { execFile } from "node:child_process";
import { readdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");

export interface Bundle {
  dir: string;
  rawBytes: number;
  gzipBytes: number;
}

/**
 * `wrangler deploy --dry-run` of the project's Worker (or of another wrangler.toml, for test workers).
 * `nodeEnv`: the NODE_ENV wrangler bundles with ("production" as `wrangler deploy` does when none is
 * set, "development" as `wrangler dev` does); default: the test process's own.
 */
export async function buildWorkerBundle(outDir: string, config = join(ROOT, "wrangler.toml"), nodeEnv?: string): Promise<Bundle> {
  await run(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outDir, "--config", config], {
    cwd: ROOT,
    env: { ...process.env, ...(nodeEnv === undefined ? {} : { NODE_ENV: nodeEnv }), WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    maxBuffer: 16 << 20,
  });
  let rawBytes = 0;
  let gzipBytes = 0;
  for (const f of await readdir(outDir)) {
    if (f.endsWith(".map") || !(await stat(join(outDir, f))).isFile()) continue;
    const data = await readFile(join(outDir, f));
    rawBytes += data.length;
    gzipBytes += gzipSync(data, { level: 9 }).length;
  }
  return { dir: outDir, rawBytes, gzipBytes };
}

export interface WorkerdServer {
  url: string;
  mf: Miniflare;
  dispose(): Promise<void>;
}

/** Serve a bundle from workerd; `persistDir` undefined = a Worker without Durable Objects. */
export async function startWorkerd(bundle: Bundle, persistDir: string | undefined, vars: Record<string, string> = {}): Promise<WorkerdServer> {
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(bundle.dir, "worker.js"),
    modulesRoot: bundle.dir,
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-04-20",
    ...(persistDir === undefined
      ? {}
      : { durableObjects: { EPISODES: { className: "Episode", useSQLite: true } }, durableObjectsPersist: persistDir }),
    bindings: vars,
    host: "127.0.0.1",
    port: 0,
  });
  const url = (await mf.ready).toString().replace(/\/$/, "");
  return { url, mf, dispose: () => mf.dispose() };
}
