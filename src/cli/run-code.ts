/**
 * `envworker run-code [--lang javascript|python] [--backend B] [--timeout-ms N] [--memory-mb N] [--ts] [--stdin TEXT|@FILE] [FILE]`
 *
 * Runs FILE (or stdin) in the sandbox and prints the RunResult as one JSON line. Exit status 0
 * when the run succeeded, 1 when it failed (`ok: false`: a guest error, a limit), 2 on usage errors.
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { resolveLimits, SANDBOX_KINDS, sandboxKindFromEnv, type SandboxKind } from "../sandbox/index.ts";
import { createLocalSandboxes } from "../sandbox/local.ts";
import { stripTypes } from "../sandbox/typescript.ts";
import type { RunResult } from "../sandbox/types.ts";

export const RUN_CODE_USAGE = `usage: envworker run-code [--lang javascript|python] [--backend quickjs|isolated-vm] [--timeout-ms N] [--memory-mb N] [--ts] [--stdin TEXT|@FILE] [FILE]

Runs JavaScript (TypeScript with --ts or a .ts/.mts/.cts FILE) from FILE, or stdin when FILE is
absent or "-", in the sandbox and prints the result as one JSON line:
  {"ok":true,"result":...,"stdout":"...","stderr":"...","elapsedMs":...}
The result is the value of the script's last expression (awaited if it is a promise); with
top-level await, the value it returns. Exit status: 0 when the run succeeded, 1 when it failed
(ok: false: an error in the code, a time or memory limit), 2 on usage errors.

--lang python runs Python 3 (a .py FILE implies it) in the Python sandbox: the result is the value
of the last expression statement; --memory-mb counts above the idle interpreter (~30 MiB).
--stdin gives the program's standard input (Python: sys.stdin; JavaScript: the global \`stdin\`);
@FILE reads it from a file.

--backend (default $ENVWORKER_SANDBOX, else quickjs): quickjs runs every run in a fresh process
forked for it (QuickJS-NG in wasmtime); isolated-vm runs V8, faster on heavy code.

environment: ENVWORKER_SANDBOX (quickjs | isolated-vm; default quickjs)`;

class UsageError extends Error {}

function positiveInt(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n <= 0) throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function runCodeCommand(argv: string[]): Promise<number> {
  let lang: "javascript" | "python";
  let stdinArg: string | undefined;
  let backend: SandboxKind;
  let timeoutMs: number | undefined;
  let memoryMb: number | undefined;
  let ts: boolean;
  let file: string | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: {
        backend: { type: "string" },
        "timeout-ms": { type: "string" },
        "memory-mb": { type: "string" },
        ts: { type: "boolean", default: false },
        lang: { type: "string" },
        stdin: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      console.log(RUN_CODE_USAGE);
      return 0;
    }
    if (positionals.length > 1) throw new UsageError(`expected at most one FILE, got ${positionals.length}`);
    file = positionals[0] === "-" ? undefined : positionals[0];
    if (values.backend !== undefined && !(SANDBOX_KINDS as readonly string[]).includes(values.backend)) {
      throw new UsageError(`--backend must be one of ${SANDBOX_KINDS.join(", ")}, got ${JSON.stringify(values.backend)}`);
    }
    backend = (values.backend as SandboxKind | undefined) ?? sandboxKindFromEnv();
    timeoutMs = positiveInt("--timeout-ms", values["timeout-ms"]);
    memoryMb = positiveInt("--memory-mb", values["memory-mb"]);
    resolveLimits({ timeoutMs, memoryMb }); // range check now: a bad limit is a usage error
    ts = values.ts || (file !== undefined && /\.[mc]?ts$/.test(file));
    if (values.lang !== undefined && values.lang !== "javascript" && values.lang !== "python") {
      throw new UsageError(`--lang must be javascript or python, got ${JSON.stringify(values.lang)}`);
    }
    lang = (values.lang as "javascript" | "python" | undefined) ?? (file !== undefined && file.endsWith(".py") ? "python" : "javascript");
    if (lang === "python" && (values.ts || values.backend !== undefined)) throw new UsageError("--ts and --backend are for JavaScript; drop them with --lang python");
    stdinArg = values.stdin;
  } catch (err) {
    if (err instanceof UsageError || err instanceof RangeError || isParseArgsError(err) || isEnvError(err)) {
      console.error(`envworker run-code: ${(err as Error).message}\n\n${RUN_CODE_USAGE}`);
      return 2;
    }
    throw err;
  }

  let code: string;
  try {
    code = file === undefined ? await readStdin() : await readFile(file, "utf8");
  } catch (err) {
    console.error(`envworker run-code: cannot read ${file ?? "stdin"}: ${(err as Error).message}`);
    return 2;
  }

  let stdin: string | undefined;
  if (stdinArg !== undefined) {
    try {
      stdin = stdinArg.startsWith("@") ? await readFile(stdinArg.slice(1), "utf8") : stdinArg;
    } catch (err) {
      console.error(`envworker run-code: cannot read ${stdinArg.slice(1)}: ${(err as Error).message}`);
      return 2;
    }
  }

  // The sandboxes a server on this machine has (src/sandbox/local.ts), one run at a time; only the
  // one the run uses starts. Disposing stops their processes, so nothing keeps this one alive.
  const local = createLocalSandboxes({ kind: backend, maxConcurrency: 1 });
  const sandbox = lang === "python" ? local.python : local.sandbox;

  try {
    const result = await sandbox.run(code, { ...(lang === "python" ? {} : { ts }), ...(stdin !== undefined ? { stdin } : {}), ...(timeoutMs ? { timeoutMs } : {}), ...(memoryMb ? { memoryMb } : {}) });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    if (lang === "javascript" && !ts && looksLikeTypeScript(code, result)) {
      console.error("envworker run-code: hint: this looks like TypeScript (it parses once its types are stripped): add --ts, or name the file .ts");
    }
    return result.ok ? 0 : 1;
  } finally {
    await Promise.all(local.owned.map((s) => s.dispose()));
  }
}

/**
 * A SyntaxError from JavaScript whose code changes, and no longer fails the same way, once types
 * are stripped: TypeScript run without --ts.
 */
function looksLikeTypeScript(code: string, result: RunResult): boolean {
  if (result.ok || result.error?.name !== "SyntaxError") return false;
  const stripped = stripTypes(code);
  return stripped.ok && stripped.code.trim() !== code.trim();
}

function isParseArgsError(err: unknown): boolean {
  return err instanceof Error && "code" in err && String((err as { code: unknown }).code).startsWith("ERR_PARSE_ARGS");
}

function isEnvError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith("ENVWORKER_SANDBOX");
}
