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
 * Node needs `--no-node-snapshot` for the default isolated-vm sandbox (or ENVWORKER_SANDBOX=quickjs).
 */
export { startServer, type RunningServer, type NodeAppOptions } from "../node.ts";
export { configFromEnv, judgeSettingsFromEnv, type JudgeSettings, type ServerConfig } from "../server/config.ts";
export { createLogger, logLevelFromEnv, setLogger, type Logger, type LogLevel } from "../server/log.ts";
