/**
 * Environment specs on the command line, shared by the commands that take them (serve, list,
 * validate): their help text, and what a spec that names nothing loadable becomes (a usage error).
 */
import type { Environment } from "../env/environment.ts";
import { loadEnvironments, SpecError } from "./load.ts";

export const SPECS_HELP = `ENV (environment specs; default: the project's config, else every shipped environment):
  wordle               a shipped environment (envworker list)
  ./src/index.ts       a module (.ts, .mts, .js, .mjs, or a folder's index) default-exporting
                       defineEnvironment(...) or an array of them
  my-env-package       an installed npm package whose entry exports the same
  my-env               an environment of the project's config: envworker.config.ts (or .js)
                       default-exporting { environments: ["./src/index.ts", ...] }, or
                       package.json "envworker": { "environments": [...] }`;

export class UsageError extends Error {}
/** A spec that names nothing loadable: the message says why; the usage text would only bury it. */
export class SpecUsageError extends UsageError {}

/** Specs → environments; a bad spec is a usage error (exit 2), not a crash. */
export async function environmentsFor(specs: readonly string[]): Promise<{ environments: Environment[]; files: string[] }> {
  try {
    return await loadEnvironments(specs);
  } catch (err) {
    if (err instanceof SpecError) throw new SpecUsageError(err.message);
    throw err;
  }
}
