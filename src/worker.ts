/**
 * The Cloudflare Workers entry of this repository (`npm run dev`, `wrangler deploy`): the shipped
 * environments through the same factory a project uses (`envworker/workers`).
 */
import { environments, NODE_ONLY_ENVIRONMENTS } from "../envs/index.ts";
import { createWorker } from "./workers/index.ts";

// The Python sandbox forks a process per run (a Worker has no processes): environments that need it are Node-only.
const worker = createWorker(
  environments.filter((e) => !NODE_ONLY_ENVIRONMENTS.has(e.name)),
  { unavailable: Object.fromEntries([...NODE_ONLY_ENVIRONMENTS].map((name) => [name, "it runs Python, whose sandbox forks a process per run, which a Worker cannot: Node only (envworker serve)"])) },
);

export const Episode = worker.Episode;

export default { fetch: worker.fetch };
