/**
 * `envworker build [--if-stale | --check]`: build envworker's dist/ in the checkout this command
 * runs from (what a package made by `envworker init` from a checkout imports in its tests, type
 * checks and Worker). The scaffold runs `envworker build --if-stale` before `npm test`, `npm run
 * typecheck` and wrangler's bundling, so its package never runs a dist/ older than its checkout
 * (src/node/dist-stamp.ts). From an installed envworker there is nothing to build.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { distState, staleMessage } from "../node/dist-stamp.ts";
import { envworkerRoot, envworkerVersion } from "./version.ts";

export const BUILD_USAGE = `usage: envworker build [--if-stale | --check]

Build envworker's dist/ (npm run build) in the checkout this envworker runs from: what a package
made by \`envworker init\` from a checkout imports in its tests, type checks and Worker.
  --if-stale   only when dist/ is missing or older than the checkout's sources (a package's
               pretest, pretypecheck and wrangler build command run this)
  --check      build nothing: exit 0 when dist/ is the build of the sources, 1 (saying what
               changed) when it is not
From an installed envworker (the registry, a tarball) there is nothing to build: exit 0.`;

export async function buildCommand(argv: string[]): Promise<number> {
  let values: { "if-stale"?: boolean | undefined; check?: boolean | undefined; help?: boolean | undefined };
  try {
    ({ values } = parseArgs({ args: argv, options: { "if-stale": { type: "boolean" }, check: { type: "boolean" }, help: { type: "boolean", short: "h" } } }));
  } catch (err) {
    console.error(`envworker build: ${(err as Error).message}\n\n${BUILD_USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(BUILD_USAGE);
    return 0;
  }
  const root = envworkerRoot();
  const state = root === undefined ? ({ state: "installed" } as const) : distState(root);
  if (state.state === "installed") {
    if (!values["if-stale"]) console.log(`envworker build: envworker ${envworkerVersion()} is an installed package: its dist/ is what was published; nothing to build`);
    return 0;
  }
  const why = staleMessage(state);
  if (values.check) {
    if (why) {
      console.error(`envworker build: ${why}`);
      return 1;
    }
    console.log(`envworker build: dist/ in ${root} is the build of its sources`);
    return 0;
  }
  if (values["if-stale"] && !why) return 0;
  console.error(`envworker build: ${why ? why.replace(/: run `npx envworker build`.*$/, "") : "building"}; building dist/ in ${root} (npm run build)`);
  try {
    execFileSync(process.execPath, [join(root!, "scripts", "build.mjs")], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
  } catch {
    console.error(`envworker build: the build failed (above); fix it, or run \`npm run build\` in ${root}`);
    return 1;
  }
  return 0;
}
