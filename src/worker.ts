/**
 * The Cloudflare Workers entry of this repository (`npm run dev`, `wrangler deploy`): the shipped
 * environments through the same factory a project uses (`envworker/workers`).
 */
import { environments, NODE_ONLY_ENVIRONMENTS } from "../envs/index.ts";
import { createWorker } from "./workers/index.ts";

// Pyodide does not fit a Worker: environments that need the Python sandbox are Node-only.
const worker = createWorker(
  environments.filter((e) => !NODE_ONLY_ENVIRONMENTS.has(e.name)),
  { unavailable: Object.fromEntries([...NODE_ONLY_ENVIRONMENTS].map((name) => [name, "it runs Python (Pyodide), which does not fit a Worker: Node only (envworker serve)"])) },
);

export const Episode = worker.Episode;

export default { fetch: worker.fetch };
