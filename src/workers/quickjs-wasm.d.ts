/** `#quickjs/sync.wasm` (package.json "imports"): wrangler bundles a `.wasm` import as a compiled WebAssembly module. */
declare module "#quickjs/sync.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
