/**
 * The Cloudflare Workers entry of this repository (`npm run dev`, `wrangler deploy`): the shipped
 * environments through the same factory a project uses (`envworker/workers`).
 */
import { environments } from "../envs/index.ts";
import { createWorker } from "./workers/index.ts";

const worker = createWorker(environments);

export const Episode = worker.Episode;

export default { fetch: worker.fetch };
