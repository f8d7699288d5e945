/**
 * What the QuickJS zygote (qjs_engine.py) is started with: the guest prelude (guest.ts) and the
 * host's helpers (tools.ts: sucrase's type stripping and the last-expression candidates) bundled
 * into one script for QuickJS. Built once per process with esbuild (~0.3 s).
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { GUEST_PRELUDE } from "../../guest.ts";

export interface ZygoteAssets {
  prelude: string;
  /** A script defining `var __envworkerZygote = { strip, candidates }` (evaluated inside a function). */
  bundle: string;
}

let built: Promise<ZygoteAssets> | undefined;

export function zygoteAssets(): Promise<ZygoteAssets> {
  built ??= (async () => {
    const { build } = await import("esbuild");
    const out = await build({
      // tools.ts here, tools.js in a built package (dist/).
      entryPoints: [[".ts", ".js"].map((ext) => fileURLToPath(new URL(`./tools${ext}`, import.meta.url))).find((f) => existsSync(f))!],
      bundle: true,
      format: "iife",
      globalName: "__envworkerZygote",
      platform: "neutral",
      mainFields: ["module", "main"],
      target: "es2022",
      minify: true,
      write: false,
      logLevel: "silent",
    });
    return { prelude: GUEST_PRELUDE, bundle: out.outputFiles[0]!.text };
  })();
  return built;
}
