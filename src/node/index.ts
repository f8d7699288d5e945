/**
 * `envworker/node`: serve environments from Node.
 *
 *   import { startServer } from "envworker/node";
 *   import myEnv from "./index.ts";
 *   const server = await startServer([myEnv], { port: 8000 });
 *   console.log(server.url); // http://127.0.0.1:8000, the environment at /envs/{name}
 *   await server.close();
 *
 * The settings are those of `envworker serve` (configFromEnv reads them from the environment).
 * Every sandbox runs in child processes started with the flags they need: the server's own Node
 * needs none for them (isolated-vm needs `--no-node-snapshot` only in the process that loads it).
 */
import { assertDistFresh } from "./dist-stamp.ts";

// Compiled, in a checkout whose sources changed since: refuse, rather than serve older code (dist-stamp.ts).
assertDistFresh(import.meta.url);

export { startServer, type RunningServer, type NodeAppOptions } from "./server.ts";
export { configFromEnv, judgeSettingsFromEnv, type JudgeSettings, type ServerConfig } from "../server/config.ts";
export { createLogger, logLevelFromEnv, setLogger, type Logger, type LogLevel } from "../server/log.ts";
// Rollouts against an OpenAI-compatible model, what `envworker eval` is built on (docs/eval.md "From code").
export {
  InProcessDriver,
  planJobs,
  RemoteDriver,
  runRollout,
  runRollouts,
  type EpisodeDriver,
  type ModelSettings,
  type RolloutJob,
  type RolloutOptions,
  type RolloutResult,
  type RunOptions as RolloutRunOptions,
} from "../eval/rollout.ts";
