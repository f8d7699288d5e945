/**
 * The `envworker` command: serve, list. Argument parsing is node:util's parseArgs: no dependency
 * for a handful of flags.
 */
import { parseArgs } from "node:util";
import { configFromEnv } from "../server/config.ts";
import { importEnvironments } from "../env/source.ts";
import type { Environment } from "../env/environment.ts";

const USAGE = `usage: envworker <command> [options]

commands:
  serve [--host 127.0.0.1] [--port 8000] [ENV ...]   serve environments (all by default)
  list                                              list the environments
  validate [--url ORIGIN] [ENV ...]                 the checks of \`openenv validate\`, per environment
  run-code [--backend isolated-vm|quickjs] [--timeout-ms N] [--memory-mb N] [--ts] [FILE]
                                                    run code in the sandbox, print the result as JSON
  eval ENV [-m MODEL] [-b URL] [-n N] [-r N] [--url URL] ...   evaluate ENV with an OpenAI-compatible model (eval --help)
  view [DIR] [--host 127.0.0.1] [--port 8001]       browse saved eval runs (default DIR outputs/evals) in a web page

environment: PORT, HOST, ENVWORKER_TOKEN, ENVWORKER_MAX_EPISODES (10000),
             ENVWORKER_IDLE_TIMEOUT_S (600), ENVWORKER_MAX_BODY_BYTES (1048576),
             ENVWORKER_MAX_WS_MESSAGE_BYTES (1048576), ENVWORKER_SHUTDOWN_GRACE_S (10),
             ENVWORKER_MAX_STEPS (1000), ENVWORKER_MAX_EPISODE_CHARS (1000000), ENVWORKER_SANDBOX (isolated-vm | quickjs),
             ENVWORKER_SANDBOX_CONCURRENCY (0 = one per CPU), ENVWORKER_ENV_TIMEOUT_S (30),
             ENVWORKER_MAX_MEMORY_MB (1024)`;

class UsageError extends Error {}

/**
 * The shipped environments, loaded through importEnvironments so that each knows its module and
 * the server can host it in worker threads.
 */
const environments = await importEnvironments(new URL("../../envs/index.ts", import.meta.url).href);

function select(names: string[]): Environment[] {
  if (names.length === 0) return [...environments];
  return names.map((n) => {
    const env = environments.find((e) => e.name === n);
    if (!env) throw new UsageError(`unknown environment ${JSON.stringify(n)}; known: ${environments.map((e) => e.name).join(", ")}`);
    return env;
  });
}

async function serveCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { host: { type: "string" }, port: { type: "string" } },
    allowPositionals: true,
  });
  const config = configFromEnv(process.env);
  if (values.host) config.host = values.host;
  if (values.port) {
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0-65535, got ${values.port}`);
    config.port = port;
  }
  const envs = select(positionals);
  const { startServer } = await import("../node.ts");
  const server = await startServer(envs, config);
  console.log(`envworker serving ${envs.length} environment(s) on ${server.url}`);
  for (const e of envs) console.log(`  ${server.url}/envs/${e.name}  ${e.description}`);
  // A signal to the process group reaches this process twice (directly, and forwarded by the
  // bin shim): stopping is idempotent, so the second one does not cut in-flight requests short.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`envworker: ${signal}: finishing in-flight requests, then exiting`);
    void server.close().then(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

function listCommand(): void {
  for (const e of environments) console.log(`${e.name.padEnd(16)} ${e.version.padEnd(8)} ${e.description}`);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "serve":
        await serveCommand(rest);
        return 0;
      case "list":
        listCommand();
        return 0;
      case "validate": {
        const { validateCommand } = await import("./validate.ts");
        return await validateCommand(rest);
      }
      case "run-code": {
        const { runCodeCommand } = await import("./run-code.ts");
        return await runCodeCommand(rest);
      }
      case "eval": {
        // Loaded on demand: serve and list never pay for the openai SDK.
        const { evalCommand } = await import("../eval/command.ts");
        return await evalCommand(rest);
      }
      case "view": {
        const { viewCommand } = await import("./view.ts");
        return await viewCommand(rest);
      }
      case undefined:
      case "-h":
      case "--help":
      case "help":
        console.log(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
    if (err instanceof UsageError || (err instanceof Error && "code" in err && String(err.code).startsWith("ERR_PARSE_ARGS"))) {
      console.error(`envworker: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
}
