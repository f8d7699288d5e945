/**
 * `envworker view [DIR]`: serve the saved eval runs under DIR (default outputs/evals) as web
 * pages. DIR may also be one run's directory (what `envworker eval -s` prints): then its
 * evals directory is served and the run's page is the URL printed.
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { listenErrorMessage } from "./listen-error.ts";
import { isLoopbackListen } from "../server/browser-guards.ts";

export const VIEW_USAGE = `usage: envworker view [DIR] [--host 127.0.0.1] [--port 8001]

Serve the eval runs saved under DIR (default outputs/evals; a run's own directory works too)
as web pages: the runs, each run's rewards and transcripts, comparisons. Prints the URL.`;

export interface ViewIO {
  stdout?: { write(s: string): unknown };
  stderr?: { write(s: string): unknown };
}

export interface RunningViewer {
  url: string;
  close(): Promise<void>;
}

/** Start the viewer; resolves once it listens. */
export async function startViewer(dirArg: string, opts: { host?: string; port?: number } = {}): Promise<RunningViewer & { root: string; path: string }> {
  const { createViewerApp } = await import("../web/viewer/app.tsx");
  const dir = resolve(dirArg);
  // One run's directory: serve its evals root and point at the run.
  const isRun = existsSync(join(dir, "results.jsonl")) || existsSync(join(dir, "metadata.json"));
  const root = isRun ? dirname(dirname(dir)) : dir;
  const path = isRun ? `/runs/${encodeURIComponent(basename(dirname(dir)))}/${encodeURIComponent(basename(dir))}` : "/";
  const host = opts.host ?? "127.0.0.1";
  const app = createViewerApp(root, { loopbackOnly: isLoopbackListen(host) });
  const server = await new Promise<ReturnType<typeof serve>>((ok, fail) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: opts.port ?? 8001 }, () => ok(s));
    s.once("error", fail);
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
  return {
    url: `http://${shownHost}:${port}`,
    root,
    path,
    close: () =>
      new Promise<void>((done) => {
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => done());
      }),
  };
}

export async function viewCommand(argv: string[], io: ViewIO = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let values: { host?: string | undefined; port?: string | undefined; help?: boolean | undefined };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: { host: { type: "string" }, port: { type: "string" }, help: { type: "boolean", short: "h" } }, allowPositionals: true }));
  } catch (err) {
    stderr.write(`envworker view: ${(err as Error).message}\n\n${VIEW_USAGE}\n`);
    return 2;
  }
  if (values.help) {
    stdout.write(`${VIEW_USAGE}\n`);
    return 0;
  }
  if (positionals.length > 1) {
    stderr.write(`envworker view: one directory at a time, got ${positionals.join(", ")}\n\n${VIEW_USAGE}\n`);
    return 2;
  }
  const port = values.port === undefined ? 8001 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    stderr.write(`envworker view: --port must be 0-65535, got ${values.port}\n\n${VIEW_USAGE}\n`);
    return 2;
  }
  const dir = positionals[0] ?? join("outputs", "evals");
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) {
    stderr.write(`envworker view: ${dir} is not a directory (save runs with envworker eval ... -s)\n`);
    return 1;
  }
  let viewer;
  try {
    viewer = await startViewer(dir, { host: values.host ?? "127.0.0.1", port });
  } catch (err) {
    stderr.write(`envworker view: ${listenErrorMessage(err, values.host ?? "127.0.0.1", port) ?? `cannot listen: ${(err as Error).message}`}\n`);
    return 1;
  }
  stdout.write(`envworker view: runs under ${viewer.root}\n${viewer.url}${viewer.path}\n`);
  // The bin shim forwards a signal that the process group also got: stop once.
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void viewer.close().then(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return 0;
}
