/**
 * `envworker init NAME`: a standalone environment package in ./NAME, from templates/env: a
 * multi-turn example environment, its unit tests (envworker/testing, vitest), a README, and a
 * Worker entry + wrangler.toml (envworker/workers). `npm install` there, and `npm test`,
 * `npx envworker serve|validate|eval` and `npx wrangler dev` work as they are.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { envworkerRoot, envworkerVersion } from "./version.ts";

export const INIT_USAGE = `usage: envworker init NAME [--dir DIR]

Create a standalone environment package NAME (lower-case kebab-case: the environment's name) in
DIR (default ./NAME, which must not exist or be empty): src/index.ts (a small multi-turn game),
test/env.test.ts (vitest, envworker/testing), README.md, src/worker.ts + wrangler.toml (Cloudflare
Workers), package.json depending on envworker. Then:

  cd NAME && npm install
  npm test                      # unit tests
  npx envworker serve           # http://127.0.0.1:8000/envs/NAME
  npx envworker validate        # checks it as openenv validate does, and plays an episode
  npx envworker eval -m MODEL -b URL   # evaluate a model
  npx wrangler dev              # the same in local workerd`;

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** templates/env: at the repository's root, or the package's (src/cli or dist/src/cli below it). */
function templateDir(): string {
  for (const up of ["../../templates/env", "../../../templates/env"]) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(dir, "package.json"))) return dir;
  }
  throw new Error("envworker init: the templates folder is missing from this installation");
}

/** Template files, relative paths. `_gitignore` becomes `.gitignore` (npm pack drops .gitignore files). */
function templateFiles(dir: string, sub = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, sub)).sort()) {
    const rel = sub ? `${sub}/${name}` : name;
    if (statSync(join(dir, rel)).isDirectory()) out.push(...templateFiles(dir, rel));
    else out.push(rel);
  }
  return out;
}

export function scaffold(name: string, target: string): string[] {
  if (!NAME.test(name)) throw new Error(`NAME must be lower-case kebab-case (it is the environment's name), got ${JSON.stringify(name)}`);
  if (existsSync(target) && readdirSync(target).length > 0) throw new Error(`${target} exists and is not empty`);
  const dir = templateDir();
  const version = envworkerVersion();
  const written: string[] = [];
  for (const rel of templateFiles(dir)) {
    const text = readFileSync(join(dir, rel), "utf8").replaceAll("__NAME__", name).replaceAll("__ENVWORKER_VERSION__", version);
    const out = join(target, rel === "_gitignore" ? ".gitignore" : rel);
    mkdirSync(join(out, ".."), { recursive: true });
    writeFileSync(out, text);
    written.push(relative(target, out));
  }
  return written;
}

export async function initCommand(argv: string[]): Promise<number> {
  let values: { dir?: string | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: { dir: { type: "string" }, help: { type: "boolean", short: "h" } }, allowPositionals: true }));
  } catch (err) {
    console.error(`envworker init: ${(err as Error).message}\n\n${INIT_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(INIT_USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    console.error(`envworker init: give one NAME\n\n${INIT_USAGE}`);
    return 2;
  }
  const name = positionals[0]!;
  const target = resolve(values.dir ?? name);
  let files: string[];
  try {
    files = scaffold(name, target);
  } catch (err) {
    console.error(`envworker init: ${(err as Error).message}`);
    return 2;
  }
  const shown = relative(process.cwd(), target) || ".";
  console.log(`created ${shown}/: ${files.join(", ")}\n\nnext:\n  cd ${shown}\n  npm install\n  npm test\n  npx envworker serve`);
  return 0;
}
