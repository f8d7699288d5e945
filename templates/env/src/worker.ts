/** Cloudflare Workers entry (`npx wrangler dev`, `npx wrangler deploy`): each episode in its own Durable Object. */
import { createWorker } from "envworker/workers";
import env from "./index.ts";

const worker = createWorker([env]);

export const Episode = worker.Episode;

export default { fetch: worker.fetch };
