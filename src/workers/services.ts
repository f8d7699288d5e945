/**
 * What environment code sees on Workers: the isolate's QuickJS sandbox, and the operator's judge
 * when wrangler's vars and secrets name one (ENVWORKER_JUDGE_URL, _MODEL, _API_KEY, ...), asked
 * through `fetch` and shared by the Worker and every Durable Object of the isolate.
 */
import type { ServerConfig } from "../server/config.ts";
import type { ScopeServices } from "../server/engine.ts";
import { sharedJudgeClient } from "../server/judge-client.ts";
import { workersSandbox } from "./sandbox.ts";

export function workerServices(config: ServerConfig): ScopeServices {
  const judge = config.judge ? sharedJudgeClient(config.judge) : undefined;
  return (scope) => ({ sandbox: workersSandbox(), judge: judge?.forScope({ key: scope.client ?? scope.key, signal: scope.signal }) });
}
