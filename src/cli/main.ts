/**
 * The `envworker` command: serve, list, validate, eval, init, run-code. Argument parsing is
 * node:util's parseArgs: no dependency for a handful of flags.
 */
import { parseArgs } from "node:util";
import { configFromEnv } from "../server/config.ts";
import { logLevelFromEnv, createLogger, setLogger } from "../server/log.ts";
import { environmentsFor, SPECS_HELP, SpecUsageError, UsageError } from "./specs.ts";
import { listenErrorMessage } from "./listen-error.ts";

const USAGE = `usage: envworker <command> [options]

commands:
  serve [--host H] [--port N] [--watch] [ENV ...]  serve environments over HTTP and WebSocket
  list [ENV ...]                                   list environments
  validate [--url URL] [ENV ...]                   check environments: openenv validate's checks and an episode
  eval [ENV] -m MODEL -b URL [-n N] [-r N] ...     evaluate an environment with an OpenAI-compatible model
  init NAME [--dir DIR]                            create a standalone environment package
  build [--if-stale | --check]                     build dist/ in this envworker's checkout (for packages linked to it)
  run-code [--lang javascript|python] [--backend B] [--ts] [--stdin TEXT|@FILE] [FILE]
                                                   run code in the sandbox, print the result as JSON
  view [DIR] [--host 127.0.0.1] [--port 8001]      browse saved eval runs (default DIR outputs/evals)
  --version                                        print envworker's version

\`envworker <command> --help\` says more.

${SPECS_HELP}

environment: PORT, HOST, ENVWORKER_LOG (info | warn | error; default warn), ENVWORKER_TOKEN,
             ENVWORKER_MAX_EPISODES (10000), ENVWORKER_IDLE_TIMEOUT_S (600),
             ENVWORKER_MAX_BODY_BYTES (1048576), ENVWORKER_MAX_WS_MESSAGE_BYTES (1048576),
             ENVWORKER_SHUTDOWN_GRACE_S (10), ENVWORKER_MAX_STEPS (1000),
             ENVWORKER_MAX_EPISODE_CHARS (1000000), ENVWORKER_SANDBOX (quickjs | isolated-vm;
             default quickjs: a fresh process forked for every run),
             ENVWORKER_SANDBOX_CONCURRENCY (0 = one per CPU),
             ENVWORKER_SANDBOX_AFFINITY (unset: every run in a process no earlier run touched,
             isolated-vm included; client | episode | off reuse isolated-vm processes: an
             escaped guest then reaches later runs of its client, episode, or anyone's),
             ENVWORKER_ENV_TIMEOUT_S (30),
             ENVWORKER_ENV_THREADS (one per CPU; 0 = on the event loop), ENVWORKER_MAX_MEMORY_MB (1024)`;

const SERVE_USAGE = `usage: envworker serve [--host 127.0.0.1] [--port 8000] [--watch] [ENV ...]

Serve environments on http://HOST:PORT/envs/{name} (OpenEnv HTTP and WebSocket, /score, /mcp).
  --host H      interface to listen on (default $HOST or 127.0.0.1)
  --port N      port (default $PORT or 8000; 0 picks a free one)
  --watch       restart the server when a loaded module (or the config) changes
  -h, --help

${SPECS_HELP}

ENVWORKER_LOG=info logs one line per request (to stderr).`;

const LIST_USAGE = `usage: envworker list [ENV ...]

Print name, version and description of each environment.

${SPECS_HELP}`;

async function serveCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { host: { type: "string" }, port: { type: "string" }, watch: { type: "boolean" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(SERVE_USAGE);
    return 0;
  }
  const config = configFromEnv(process.env);
  if (values.host) config.host = values.host;
  if (values.port) {
    const port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be 0-65535, got ${values.port}`);
    config.port = port;
  }
  const { environments: envs, files } = await environmentsFor(positionals);
  if (values.watch) {
    const { superviseServe } = await import("./watch.ts");
    return superviseServe(argv.filter((a) => a !== "--watch"), files);
  }
  const { startServer } = await import("../node/server.ts");
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(envs, config);
  } catch (err) {
    const message = listenErrorMessage(err, config.host, config.port);
    if (message === undefined) throw err;
    console.error(`envworker serve: ${message}`);
    return 1;
  }
  console.log(`envworker serving ${envs.length} environment(s) on ${server.url}`);
  // Say now if this machine weakens the sandbox hosts' confinement (tried before the port was bound: startServer).
  const { warnIfWeaklyConfined } = await import("../wall/confine.ts");
  warnIfWeaklyConfined();
  for (const e of envs) console.log(`  ${server.url}/envs/${e.name}  ${e.description}`);
  // The playground; with a token, the form a browser can open (it cannot send the header).
  console.log(`playground: ${server.url}${config.token ? "/t/<ENVWORKER_TOKEN>/web" : "/web"}`);
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
  return 0;
}

async function listCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { help: { type: "boolean", short: "h" } }, allowPositionals: true });
  if (values.help) {
    console.log(LIST_USAGE);
    return 0;
  }
  const { environments } = await environmentsFor(positionals);
  for (const e of environments) console.log(`${e.name.padEnd(16)} ${e.version.padEnd(8)} ${e.description}`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    setLogger(createLogger(logLevelFromEnv(process.env)));
  } catch (err) {
    console.error(`envworker: ${(err as Error).message}`);
    return 2;
  }
  try {
    switch (command) {
      case "serve":
        return await serveCommand(rest);
      case "list":
        return await listCommand(rest);
      case "validate": {
        const { validateCommand } = await import("./validate.ts");
        return await validateCommand(rest);
      }
      case "build": {
        const { buildCommand } = await import("./build.ts");
        return await buildCommand(rest);
      }
      case "init": {
        const { initCommand } = await import("./init.ts");
        return await initCommand(rest);
      }
      case "run-code": {
        const { runCodeCommand } = await import("./run-code.ts");
        return await runCodeCommand(rest);
      }
      case "eval": {
        // Loaded on demand: serve and list never pay for the openai SDK.
        const { evalCommand } = await import("./eval.ts");
        return await evalCommand(rest);
      }
      case "view": {
        const { viewCommand } = await import("./view.ts");
        return await viewCommand(rest);
      }
      case "-v":
      case "--version":
      case "version": {
        const { envworkerVersion } = await import("./version.ts");
        console.log(envworkerVersion());
        return 0;
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
      const usage = err instanceof SpecUsageError ? "" : `\n\n${command === "serve" ? SERVE_USAGE : command === "list" ? LIST_USAGE : USAGE}`;
      console.error(`envworker: ${err.message}${usage}`);
      return 2;
    }
    throw err;
  }
}
