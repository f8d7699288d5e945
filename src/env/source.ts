/**
 * Where an environment came from. An Environment is code (functions), so it cannot be sent to a
 * worker thread; what can be sent is the module it was loaded from. Anything that loads
 * environments from a module (the CLI's spec loader, envs/index.ts's list) tags them here, and a
 * thread pool that runs environment code off the main event loop imports the same module there.
 */
import type { Environment } from "./environment.ts";

const sources = new WeakMap<Environment, string>();

/** What a module's source URL carries: the fingerprint of its folder's files when it was loaded (src/node/source-files.ts). */
const STAMP = "#envworker-files=";

/**
 * src/node/source-files.ts and src/node/typescript-loader.ts, Node only (they read files, register
 * a loader): imported by a computed name, so that a Worker's bundle, which has this module
 * (episode.ts names an environment's source) but never imports an environment from a URL, does not
 * take node:fs with it.
 */
interface SourceFiles {
  filesStamp(moduleUrl: string): string | undefined;
  checkStamp(moduleUrl: string, stamp: string): void;
}
interface TypeScriptLoader {
  prepareImport(url: string): Promise<void>;
}
async function nodeModule<T>(name: string): Promise<T> {
  const here = (import.meta as { url: string }).url;
  return (await import(/* @vite-ignore */ new URL(`../node/${name}${here.endsWith(".ts") ? ".ts" : ".js"}`, here).href)) as T;
}

/** The module URL `env` was loaded from, if it was loaded through importEnvironments (with its fingerprint, see src/node/source-files.ts). */
export function environmentSource(env: Environment): string | undefined {
  return sources.get(env);
}

/**
 * A TypeScript syntax error (tsx's esbuild: "Transform failed with 1 error:\n/path/env.ts:3:5:
 * ERROR: ...") with its location on the first line: where only one line is shown (a thread that
 * cannot load, answered as a 500), it was "Transform failed with 1 error:" and no more.
 */
function withLocationFirst(err: unknown): unknown {
  if (!(err instanceof Error) || !/^Transform failed with \d+ errors?:\n/.test(err.message)) return err;
  const located = new Error(err.message.split("\n").slice(1).filter((l) => l.trim() !== "").join("; "), { cause: err });
  located.name = "SyntaxError";
  return located;
}

function isEnvironment(value: unknown): value is Environment {
  return typeof value === "object" && value !== null && "name" in value && "rubric" in value && "parseArgs" in value;
}

/**
 * The environments a module default-exports (one environment or an array of them), each tagged
 * with the module's URL (and the fingerprint of its folder's files: see src/node/source-files.ts). Throws a
 * plain Error naming the module when it exports neither.
 */
export async function importEnvironments(moduleUrl: string): Promise<Environment[]> {
  // Loaded again (an environment thread): only if its files are still what the server loaded.
  const at = moduleUrl.indexOf(STAMP);
  const url = at === -1 ? moduleUrl : moduleUrl.slice(0, at);
  let source = moduleUrl;
  if (url.startsWith("file:")) {
    const files = await nodeModule<SourceFiles>("source-files");
    if (at !== -1) files.checkStamp(url, moduleUrl.slice(at + STAMP.length));
    else {
      const stamp = files.filesStamp(url);
      if (stamp !== undefined) source = `${url}${STAMP}${stamp}`;
    }
    await (await nodeModule<TypeScriptLoader>("typescript-loader")).prepareImport(url);
  }
  let mod: { default?: unknown };
  try {
    mod = (await import(/* @vite-ignore */ url)) as { default?: unknown };
  } catch (err) {
    throw withLocationFirst(err);
  }
  const exported = mod.default;
  const list = Array.isArray(exported) ? exported : [exported];
  if (list.length === 0 || !list.every(isEnvironment)) {
    throw new Error(`${url} must default-export an environment made by defineEnvironment, or an array of them`);
  }
  for (const env of list) sources.set(env, source);
  return list;
}
