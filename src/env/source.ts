/**
 * Where an environment came from. An Environment is code (functions), so it cannot be sent to a
 * worker thread; what can be sent is the module it was loaded from. Anything that loads
 * environments from a module (the CLI's spec loader, envs/index.ts's list) tags them here, and a
 * thread pool that runs environment code off the main event loop imports the same module there.
 */
import type { Environment } from "./environment.ts";

const sources = new WeakMap<Environment, string>();

/** The module URL `env` was loaded from, if it was loaded through importEnvironments. */
export function environmentSource(env: Environment): string | undefined {
  return sources.get(env);
}

function isEnvironment(value: unknown): value is Environment {
  return typeof value === "object" && value !== null && "name" in value && "rubric" in value && "parseArgs" in value;
}

/**
 * The environments a module default-exports (one environment or an array of them), each tagged
 * with the module's URL. Throws a plain Error naming the module when it exports neither.
 */
export async function importEnvironments(moduleUrl: string): Promise<Environment[]> {
  const mod = (await import(/* @vite-ignore */ moduleUrl)) as { default?: unknown };
  const exported = mod.default;
  const list = Array.isArray(exported) ? exported : [exported];
  if (list.length === 0 || !list.every(isEnvironment)) {
    throw new Error(`${moduleUrl} must default-export an environment made by defineEnvironment, or an array of them`);
  }
  for (const env of list) sources.set(env, moduleUrl);
  return list;
}
