/** Where are we running? Decides default backends and the QuickJS deadline strategy. */

/** Cloudflare Workers (workerd) identify themselves this way, with or without nodejs_compat. */
export function isCloudflareWorkers(): boolean {
  const nav = (globalThis as { navigator?: { userAgent?: unknown } }).navigator;
  return nav?.userAgent === "Cloudflare-Workers";
}

/** Real Node.js (workerd with nodejs_compat also defines `process.versions.node`). */
export function isNode(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: unknown } } }).process;
  return !isCloudflareWorkers() && typeof proc?.versions?.node === "string";
}

