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

export const INIT_USAGE = `usage: envworker init NAME [--dir DIR] [--dependency SPEC]
       envworker init --python NAME [--dir DIR] [--dependency SPEC]

Create a standalone environment package NAME (lower-case kebab-case: the environment's name) in
DIR (default ./NAME, which must not exist or be empty): src/index.ts (a small multi-turn game),
test/env.test.ts (vitest, envworker/testing), README.md, src/worker.ts + wrangler.toml (Cloudflare
Workers), package.json depending on envworker:
  run from a checkout of envworker: "file:CHECKOUT" (npm links the package to the checkout; its
                                    tests, type checks and Worker use the checkout's dist/, which
                                    \`npm test\` and the others build first when it is missing or
                                    older than the checkout: \`envworker build --if-stale\`)
  run from an installed envworker:  "^VERSION" (the npm registry)
  --dependency SPEC                 anything npm takes instead, e.g. a tarball from \`npm pack\`:
                                    --dependency file:../envworker-0.1.0.tgz
Then:

  cd NAME && npm install
  npm test                      # unit tests
  npx envworker serve           # http://127.0.0.1:8000/envs/NAME
  npx envworker validate        # checks it as openenv validate does, and plays an episode
  npx envworker eval -m MODEL -b URL   # evaluate a model
  npx wrangler dev              # the same in local workerd

--python: a Python environment package instead (Node only), from templates/python-env: NAME_/env.py
(the same game, envworker's Python authoring API), tests/test_env.py (unittest; pytest runs it too),
README.md, pyproject.toml, and a package.json that installs the envworker server (depending on envworker
as above). Then:

  cd NAME && npm install            # the envworker server that serves it
  pip install CLIENT                # the envworker Python package (init prints CLIENT), for the tests
  python -m unittest                # unit tests
  npx envworker validate .          # serves it (a Python worker per thread) and plays an episode`;

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** templates/NAME: at the repository's root, or the package's (src/cli or dist/src/cli below it). */
function templateDir(name = "env"): string {
  for (const up of [`../../templates/${name}`, `../../../templates/${name}`]) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(dir, "README.md"))) return dir;
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

/**
 * What the new package's package.json says for envworker: the checkout it was made from (until
 * envworker is on the npm registry, that is how a package made from a clone installs), else the
 * registry's version range.
 */
export function dependencySpec(root: string | undefined = envworkerRoot(), version = envworkerVersion()): string {
  return root !== undefined && isCheckout(root) ? `file:${root}` : `^${version}`;
}

/** A checkout has the TypeScript sources; the installed package only dist/. */
const isCheckout = (root: string) => existsSync(join(root, "src", "index.ts"));

/**
 * The package.json `allowScripts` key that lets envworker's install script run. npm matches a
 * registry package by its name, but any other dependency (a `file:` folder or tarball, a URL, git)
 * by its spec, exactly: a bare "envworker" key does not cover `file:/path/to/checkout`, and npm
 * warned that envworker's install script was not covered.
 */
export function allowScriptsKey(dependency: string): string {
  return /^(npm:)?[\^~<>=*\d]/.test(dependency) || dependency === "latest" || dependency === "" ? "envworker" : dependency;
}

/**
 * Writes template `dir` into `target` (which must not exist or be empty), each file's text through
 * `text`, each path through `path` (`_gitignore` is `.gitignore`: npm pack drops .gitignore files).
 * Returns the paths written, relative to `target`.
 */
function writeTemplate(name: string, dir: string, target: string, text: (rel: string, content: string) => string, path: (rel: string) => string = (rel) => rel): string[] {
  if (!NAME.test(name)) throw new Error(`NAME must be lower-case kebab-case (it is the environment's name), got ${JSON.stringify(name)}`);
  if (existsSync(target) && readdirSync(target).length > 0) throw new Error(`${target} exists and is not empty`);
  const written: string[] = [];
  for (const rel of templateFiles(dir)) {
    const out = join(target, path(rel === "_gitignore" ? ".gitignore" : rel));
    mkdirSync(join(out, ".."), { recursive: true });
    writeFileSync(out, text(rel, readFileSync(join(dir, rel), "utf8").replaceAll("__NAME__", name)));
    written.push(relative(target, out));
  }
  return written;
}

/**
 * A template's file with envworker's version in it; its package.json depending on envworker by
 * `dependency`, whose install script is allowed under the key npm matches it by.
 */
function withDependency(rel: string, content: string, dependency: string): string {
  const text = content.replaceAll("__ENVWORKER_VERSION__", envworkerVersion());
  if (rel !== "package.json") return text;
  const pkg = JSON.parse(text) as { dependencies: Record<string, string>; allowScripts: Record<string, boolean> };
  pkg.dependencies.envworker = dependency;
  const { envworker: allowed, ...others } = pkg.allowScripts;
  pkg.allowScripts = { [allowScriptsKey(dependency)]: allowed ?? true, ...others };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

export function scaffold(name: string, target: string, dependency = dependencySpec()): string[] {
  return writeTemplate(name, templateDir(), target, (rel, content) => withDependency(rel, content, dependency));
}

/** What `pip install` takes for envworker's Python package: this checkout's (or package's) clients/python, else the name. */
export function pythonClientSpec(root: string | undefined = envworkerRoot()): string {
  return root !== undefined && existsSync(join(root, "clients", "python", "pyproject.toml")) ? join(root, "clients", "python") : "envworker";
}

/**
 * `envworker init --python NAME`: templates/python-env with NAME, its module name (NAME with
 * underscores: the package folder, `__MODULE__`) and the envworker Python package to install.
 */
/**
 * Its package.json installs the envworker server that serves it (`npm install`, then `npx envworker
 * serve .` in the package's directory), by `dependency` as for a TypeScript package: without it,
 * `npx envworker` there asked npm's registry, which answers 404.
 */
export function scaffoldPython(name: string, target: string, client = pythonClientSpec(), dependency = dependencySpec()): string[] {
  const module = name.replaceAll("-", "_");
  return writeTemplate(
    name,
    templateDir("python-env"),
    target,
    (rel, content) => withDependency(rel, content.replaceAll("__MODULE__", module).replaceAll("__ENVWORKER_CLIENT__", client), dependency),
    (rel) => rel.replaceAll("__MODULE__", module),
  );
}

export async function initCommand(argv: string[]): Promise<number> {
  let values: { dir?: string | undefined; dependency?: string | undefined; python?: boolean | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { dir: { type: "string" }, dependency: { type: "string" }, python: { type: "boolean" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
    }));
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
  if (values.python) return initPython(name, target, values.dependency ?? dependencySpec());
  const root = envworkerRoot();
  const dependency = values.dependency ?? dependencySpec(root);
  let files: string[];
  try {
    files = scaffold(name, target, dependency);
  } catch (err) {
    console.error(`envworker init: ${(err as Error).message}`);
    return 2;
  }
  const shown = relative(process.cwd(), target) || ".";
  // Linked to a checkout: its tests and its Worker import envworker's compiled dist/, which
  // `npm test` (its pretest: envworker build --if-stale) builds when it is missing or stale.
  const linked = root !== undefined && dependency === `file:${root}`;
  const steps = [`cd ${shown}`, "npm install", `npm test${linked ? "                  # first builds the checkout's dist/ when it is missing or older than the checkout" : ""}`, "npx envworker serve"];
  console.log(`created ${shown}/: ${files.join(", ")}\nenvworker dependency: ${dependency}${linked ? " (this checkout)" : ""}\n\nnext:\n${steps.map((s) => `  ${s}`).join("\n")}`);
  return 0;
}

function initPython(name: string, target: string, dependency: string): number {
  const client = pythonClientSpec();
  let files: string[];
  try {
    files = scaffoldPython(name, target, client, dependency);
  } catch (err) {
    console.error(`envworker init: ${(err as Error).message}`);
    return 2;
  }
  const shown = relative(process.cwd(), target) || ".";
  const steps = [`cd ${shown}`, "npm install                  # the envworker server that serves it", `pip install ${client}   # envworker's Python package, for the tests`, "python -m unittest", "npx envworker validate .", "npx envworker serve ."];
  console.log(`created ${shown}/: ${files.join(", ")}\n\nnext:\n${steps.map((s) => `  ${s}`).join("\n")}`);
  return 0;
}
