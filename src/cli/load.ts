/**
 * Environment specs: what `envworker serve|eval|validate|list` accept to say which environments.
 *
 *   wordle                 a shipped environment (envs/)
 *   ./src/index.ts         a module (.ts, .mts, .js, .mjs; a folder's index) default-exporting one
 *                          environment or an array of them; TypeScript is loaded through tsx
 *   my-env-package         an installed npm package whose entry default-exports the same
 *   my-env                 the name of an environment of the project's config
 *   ./env.py, ./my-env/    a Python environment (Node only, src/python/): a .py file, a folder that
 *                          is a Python package, holds env.py, or has a pyproject.toml naming its package
 *   my_env_package         a Python module ENVWORKER_PYTHON's interpreter imports (after npm packages)
 *   reasoning-gym[:a,b]    a catalog of the envworker Python package (src/python/catalogs.ts)
 *
 * With no spec, the project's config lists them: `envworker.config.{ts,mts,js,mjs}` default-exporting
 * `{ environments: [spec, ...] }`, or package.json's `"envworker": { "environments": [...] }`
 * (specs relative to the file); without a config, every shipped environment.
 *
 * Every module is loaded through importEnvironments, which tags each environment with its module
 * URL (src/env/source.ts): code that runs environments elsewhere (threads) re-imports them by it.
 */
import { didYouMean } from "../server/did-you-mean.ts";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { resolve as resolveModule } from "import-meta-resolve";
import { datasetProblems, type Environment } from "../env/environment.ts";
import { importEnvironments } from "../env/source.ts";
import { prepareImport } from "../node/typescript-loader.ts";
import { envworkerRoot } from "./version.ts";
import { isPythonModule, pythonFolderTarget, pythonModuleUrl } from "../node/python-envs/load.ts";
import { catalogSpec, selectCatalog } from "../node/python-envs/catalogs.ts";
import { readSetting } from "../settings/settings.ts";

export class SpecError extends Error {}

export const CONFIG_FILES = ["envworker.config.ts", "envworker.config.mts", "envworker.config.js", "envworker.config.mjs"] as const;
const MODULE_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"];
/** What a folder given as a spec may hold, in this order. */
const FOLDER_ENTRIES = ["index.ts", "index.mts", "index.js", "index.mjs", "src/index.ts", "src/index.js"];

/** The module listing the shipped environments: TypeScript in this repository, JavaScript in dist/. */
export function shippedModuleUrl(): string {
  return new URL(import.meta.url.endsWith(".ts") ? "../../envs/index.ts" : "../../envs/index.js", import.meta.url).href;
}

export function shippedEnvironments(): Promise<Environment[]> {
  return importEnvironments(shippedModuleUrl());
}

export interface ProjectConfig {
  /** The file the specs came from (envworker.config.* or package.json). */
  file: string;
  specs: string[];
}

/** The project's list of environment specs in `dir`, if it has one. */
export async function findProjectConfig(dir: string): Promise<ProjectConfig | undefined> {
  for (const name of CONFIG_FILES) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    let mod: { default?: unknown };
    try {
      const url = pathToFileURL(file).href;
      await prepareImport(url);
      mod = (await import(url)) as { default?: unknown };
    } catch (err) {
      throw new SpecError(`${file}: ${describeLoadError(err, file)}`);
    }
    return { file, specs: specsOf(mod.default, file, "its default export") };
  }
  const pkgFile = join(dir, "package.json");
  if (existsSync(pkgFile)) {
    let pkg: { envworker?: unknown };
    try {
      pkg = JSON.parse(readFileSync(pkgFile, "utf8")) as { envworker?: unknown };
    } catch (err) {
      throw new SpecError(`${pkgFile}: ${(err as Error).message}`);
    }
    if (pkg.envworker !== undefined) return { file: pkgFile, specs: specsOf(pkg.envworker, pkgFile, 'its "envworker" field') };
  }
  return undefined;
}

function specsOf(value: unknown, file: string, what: string): string[] {
  const list = (value as { environments?: unknown } | undefined)?.environments;
  if (!Array.isArray(list) || list.length === 0 || !list.every((s) => typeof s === "string" && s !== "")) {
    throw new SpecError(`${file}: ${what} must be { environments: ["./src/index.ts", "wordle", ...] } (environment specs, at least one)`);
  }
  return list as string[];
}

/** `./x`, `/x`, or a file name (`env.ts`) that exists; `chart.js` that does not exist may be a package. */
function looksLikePath(spec: string, base: string): boolean {
  if (spec.startsWith(".") || isAbsolute(spec)) return true;
  return [...MODULE_EXTENSIONS, ".py"].some((e) => spec.endsWith(e)) && existsSync(resolvePath(base, spec));
}

/** A path spec that names a Python environment: the target its worker loads (a file or a package folder). */
function pythonPathTarget(spec: string, base: string): string | undefined {
  const path = resolvePath(base, spec);
  if (!existsSync(path)) return undefined;
  if (!statSync(path).isDirectory()) return path.endsWith(".py") ? path : undefined;
  if (FOLDER_ENTRIES.some((entry) => existsSync(join(path, entry)))) return undefined;
  return pythonFolderTarget(path);
}

/** A path spec as a module file: the file itself, or a folder's index. */
function moduleFile(spec: string, base: string): string {
  const path = resolvePath(base, spec);
  if (!existsSync(path)) throw new SpecError(`${spec}: no such file (looked for ${path})`);
  if (!statSync(path).isDirectory()) return path;
  for (const entry of FOLDER_ENTRIES) {
    const candidate = join(path, entry);
    if (existsSync(candidate)) return candidate;
  }
  throw new SpecError(`${spec}: a folder without ${FOLDER_ENTRIES.join(", ")}`);
}

/** The entry module of an installed package, resolved as Node would import it from `base`. */
function packageEntry(spec: string, base: string): string | undefined {
  try {
    return resolveModule(spec, pathToFileURL(join(base, "noop.js")).href);
  } catch {
    return undefined;
  }
}

export interface Loaded {
  environments: Environment[];
  /** Module files loaded (for `serve --watch`): the modules and the config file, not node_modules. */
  files: string[];
}

interface Context {
  base: string;
  config: ProjectConfig | undefined;
  configEnvs?: Environment[];
  shipped?: Environment[];
}

/** Where envworker's own code is (its sources, its build, its command): frames there are not the author's. */
const OWN_ROOT = envworkerRoot();
const OWN_CODE = OWN_ROOT === undefined ? [] : ["src", "dist", "bin"].map((d) => `${OWN_ROOT}/${d}/`);

/**
 * A module that failed to load, in its author's terms: the error (its class when it is not a plain
 * Error: `SyntaxError: Expected property name ...`) and where in the author's code it was thrown,
 * the stack frames outside envworker and node_modules (`at /path/env.ts:3:20`), or else the module
 * file itself. A TypeScript syntax error's message already names the file, line and column.
 */
export function describeLoadError(err: unknown, moduleFile: string | undefined): string {
  if (!(err instanceof Error)) return String(err);
  const head = err.name && err.name !== "Error" && !err.message.startsWith(err.name) ? `${err.name}: ${err.message}` : err.message;
  if (/:\d+:\d+: ERROR: /.test(err.message)) return head; // esbuild's transform error: the location is in it
  const frames: string[] = [];
  for (const line of (err.stack ?? "").split("\n").slice(1)) {
    const m = /^\s*at (?:.*? \()?((?:file:\/\/)?\/[^()]*?):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith("file://")) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    if (file.includes("/node_modules/") || OWN_CODE.some((dir) => file.startsWith(dir))) continue;
    frames.push(`    at ${file}:${m[2]}:${m[3]}`);
    if (frames.length === 5) break;
  }
  if (frames.length === 0 && moduleFile !== undefined) frames.push(`    in ${moduleFile}`);
  return [head, ...frames].join("\n");
}

async function importModule(url: string, spec: string): Promise<Environment[]> {
  let envs: Environment[];
  try {
    envs = await importEnvironments(url);
  } catch (err) {
    // A Python target's module (src/python/served.ts?target=...) is not the author's: its error says where.
    const file = url.startsWith("file:") && !new URL(url).searchParams.has("target") ? fileURLToPath(url) : undefined;
    throw new SpecError(`${spec}: ${describeLoadError(err, file)}`);
  }
  // An author's module: what would fail every reset (an empty dataset) is said now, not to the first client.
  const problems = envs.flatMap(datasetProblems);
  if (problems.length > 0) throw new SpecError(`${spec}: ${problems.join("; ")}`);
  return envs;
}

async function loadSpec(spec: string, ctx: Context, files: string[]): Promise<Environment[]> {
  if (looksLikePath(spec, ctx.base)) {
    const python = pythonPathTarget(spec, ctx.base);
    if (python) {
      files.push(python);
      return importModule(pythonModuleUrl(python), spec);
    }
    const file = moduleFile(spec, ctx.base);
    files.push(file);
    return importModule(pathToFileURL(file).href, spec);
  }
  // A bare name: an environment of the project's config, a shipped one, or an installed package.
  let configError: unknown;
  if (ctx.config) {
    try {
      ctx.configEnvs ??= await loadAll(ctx.config.specs, { base: dirname(ctx.config.file), config: undefined }, files);
      const env = ctx.configEnvs.find((e) => e.name === spec);
      if (env) return [env];
    } catch (err) {
      // A broken project module must not stop `serve wordle`; it is reported if nothing else matches.
      configError = err;
    }
  }
  ctx.shipped ??= await shippedEnvironments();
  const shipped = ctx.shipped.find((e) => e.name === spec);
  if (shipped) return [shipped];
  let catalog;
  try {
    catalog = catalogSpec(spec);
  } catch (err) {
    throw new SpecError((err as Error).message);
  }
  if (catalog) {
    const envs = await importModule(pythonModuleUrl(catalog.module), spec);
    try {
      return selectCatalog(catalog, envs);
    } catch (err) {
      throw new SpecError((err as Error).message);
    }
  }
  const entry = packageEntry(spec, ctx.base);
  if (entry) {
    if (entry.startsWith("file:") && !fileURLToPath(entry).includes("/node_modules/")) files.push(fileURLToPath(entry));
    return importModule(entry, spec);
  }
  if (isPythonModule(spec)) return importModule(pythonModuleUrl(spec), spec);
  if (configError) throw configError;
  const known = [...(ctx.configEnvs ?? []), ...ctx.shipped].map((e) => e.name);
  throw new SpecError(
    `unknown environment ${JSON.stringify(spec)}${didYouMean(spec, known)}: not ${ctx.config ? "in " + ctx.config.file + ", not " : ""}a shipped environment, not a file, not an installed package (npm, or a Python module of ${readSetting("ENVWORKER_PYTHON") || "python3"}); known: ${known.join(", ")}`,
  );
}

export { didYouMean };

async function loadAll(specs: readonly string[], ctx: Context, files: string[]): Promise<Environment[]> {
  const out: Environment[] = [];
  for (const spec of specs) out.push(...(await loadSpec(spec, ctx, files)));
  return out;
}

/**
 * The environments `specs` name (see the top of this file), relative to `cwd`; with no spec, the
 * project config's, or every shipped environment. Two environments of one name are an error.
 */
export async function loadEnvironments(specs: readonly string[], cwd: string = process.cwd()): Promise<Loaded> {
  const config = await findProjectConfig(cwd);
  const files: string[] = [];
  let environments: Environment[];
  if (specs.length > 0) environments = await loadAll(specs, { base: cwd, config }, files);
  else if (config) environments = await loadAll(config.specs, { base: dirname(config.file), config: undefined }, files);
  else environments = await shippedEnvironments();
  if (config) files.push(config.file);
  const seen = new Set<string>();
  const unique: Environment[] = [];
  for (const env of environments) {
    if (seen.has(env.name)) {
      // The same environment named twice (a config name and its path) is one environment.
      if (unique.some((e) => e === env)) continue;
      throw new SpecError(`two different environments are named ${JSON.stringify(env.name)}`);
    }
    seen.add(env.name);
    unique.push(env);
  }
  return { environments: unique, files: [...new Set(files)] };
}
