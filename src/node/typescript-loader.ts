/**
 * TypeScript for the modules compiled envworker imports that are not its own (Node only). Run
 * compiled (dist/, from a package or a checkout whose dist/ is fresh: bin/envworker.js), envworker
 * needs no loader for its own code, and tsx's hooks would make each of its few hundred imports
 * cost about three times as much (a server's start: 1.1 s of CPU without them, 2.8 s with, main
 * process and its environment threads together: `npm run bench -- server-start`). So tsx is
 * registered in a thread the first time that thread is about to import a module from outside
 * envworker's compiled files: a user's environment, config or environment package, whatever
 * language it is written in (as before, when tsx was always registered).
 *
 * Run from the sources (.ts), whatever loads them (tsx, registered by bin/envworker.js or a
 * thread's bootstrap, src/node/ts-worker.ts; vitest) loads a user's TypeScript too: nothing to do.
 */

/** envworker's compiled tree (dist/): its src/ and envs/. */
const OWN = new URL("../../", import.meta.url).href;
let registered: Promise<void> | undefined;

/** Makes sure `url` can be imported in this thread even if it is TypeScript. */
export function prepareImport(url: string): Promise<void> {
  if (import.meta.url.endsWith(".ts") || url.startsWith(OWN)) return Promise.resolve();
  registered ??= (async () => {
    try {
      const { register } = await import("tsx/esm/api");
      register();
    } catch {
      // No tsx: the import says what failed, as it would for a module with a syntax error.
    }
  })();
  return registered;
}
