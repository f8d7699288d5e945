/**
 * The entry module beside a module, source or compiled: what a confined host's profile (confine.ts) and
 * every worker thread (src/node/ts-worker.ts) are started on.
 */
/** `./name.ts` next to `base` when `base` is TypeScript source, else `./name.js` (compiled output). */
export function siblingModule(name: string, base: string): URL {
  return new URL(base.endsWith(".ts") ? `./${name}.ts` : `./${name}.js`, base);
}
