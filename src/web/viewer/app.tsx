/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * `envworker view`'s web app (Node only): the pages of ./pages/ over a RunStore, the shared
 * stylesheet, the viewer's script, and Chart.js read from node_modules (nothing from a CDN).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Hono, type Context } from "hono";
import { browserGuards } from "../../server/browser-guards.ts";
import VIEWER_JS from "../generated/viewer-client.ts";
import { PAGE_HEADERS } from "../ui/layout.tsx";
import { STYLE_CSS } from "../ui/style.ts";
import { MessagePage } from "./pages/common.tsx";
import { ComparePage } from "./pages/compare.tsx";
import { RolloutPage } from "./pages/rollout.tsx";
import { RunPage, type RunView } from "./pages/run.tsx";
import { RunsPage, type RunSort } from "./pages/runs.tsx";
import { logger } from "../../server/log.ts";
import { RunStore, type Run } from "./runs.ts";
import { compareRuns, runStats, type RunStats } from "./stats.ts";

let chartJs: Promise<string> | undefined;
/** Chart.js's UMD build, from the installed package. */
function chartScript(): Promise<string> {
  const require = createRequire(import.meta.url);
  chartJs ??= readFile(join(dirname(require.resolve("chart.js")), "chart.umd.min.js"), "utf8");
  return chartJs;
}

function page(c: Context, node: ReturnType<typeof MessagePage>, status = 200) {
  return c.html(node, status as 200, { ...PAGE_HEADERS, "cache-control": "no-store" });
}

function optionalNumber(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

/** Changes whenever a run appears, goes or changes. */
const listVersion = (runs: readonly Run[]) => runs.map((r) => `${r.id}@${r.version}`).join("|");

const SORTS: RunSort[] = ["env", "model", "date", "reward", "errors"];

function sortRuns(list: { run: Run; stats: RunStats }[], sort: RunSort, dir: "asc" | "desc") {
  const key = (x: { run: Run; stats: RunStats }): string | number => {
    switch (sort) {
      case "env":
        return x.run.env;
      case "model":
        return x.run.model;
      case "reward":
        return x.stats.reward.avg;
      case "errors":
        return x.stats.errors;
      default:
        return x.run.meta.started_at ?? x.run.name;
    }
  };
  const sign = dir === "asc" ? 1 : -1;
  return [...list].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    const c = typeof ka === "number" && typeof kb === "number" ? ka - kb : String(ka).localeCompare(String(kb));
    return sign * c || (b.run.meta.started_at ?? "").localeCompare(a.run.meta.started_at ?? "");
  });
}

/**
 * `loopbackOnly`: the viewer listens on a loopback address (the default): pages of other origins,
 * and Host names that are not loopback ones (a DNS-rebound page reading the runs), are refused 403
 * (src/server/browser-guards.ts).
 */
export function createViewerApp(root: string, opts: { loopbackOnly?: boolean } = {}): Hono {
  const store = new RunStore(root);
  const app = new Hono();
  app.use("*", browserGuards({ loopbackOnly: opts.loopbackOnly }));

  app.onError((err, c) => {
    // Logged with its stack: a page that fails must be visible where the command runs.
    logger().error(`envworker view: GET ${c.req.path} failed`, undefined, err);
    const message = err instanceof Error ? err.message : String(err);
    try {
      return page(c, MessagePage({ title: "Something went wrong", message }), 500);
    } catch {
      // The page itself cannot be drawn: the message still reaches the browser.
      return c.text(`Something went wrong: ${message}`, 500);
    }
  });
  app.notFound((c) => page(c, MessagePage({ title: "Not found", message: `Nothing at ${c.req.path}.` }), 404));

  app.get("/assets/style.css", (c) => c.body(STYLE_CSS, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" }));
  app.get("/assets/viewer.js", (c) => c.body(VIEWER_JS, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" }));
  app.get("/assets/chart.umd.min.js", async (c) => c.body(await chartScript(), 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "max-age=3600" }));

  app.get("/", async (c) => {
    const sortParam = c.req.query("sort") as RunSort | undefined;
    const sort = sortParam && SORTS.includes(sortParam) ? sortParam : "date";
    const dir = c.req.query("dir") === "asc" ? "asc" : "desc";
    const list = await store.list();
    const runs = list.map((run) => ({ run, stats: runStats(run) }));
    const message = c.req.query("message");
    return page(c, RunsPage({ root, runs: sortRuns(runs, sort, dir), sort, dir, live: { url: "/api/version", version: listVersion(list) }, message }));
  });

  app.get("/api/version", async (c) => {
    return c.json({ version: listVersion(await store.list()) });
  });
  app.get("/api/runs/:group/:run/version", async (c) => {
    const run = await store.get(`${c.req.param("group")}/${c.req.param("run")}`);
    if (!run) return c.json({ error: { code: "NOT_FOUND", message: "no such run" } }, 404);
    return c.json({ version: run.version, complete: run.complete, rollouts: run.rows.length });
  });

  app.get("/runs/:group/:run", async (c) => {
    const run = await store.get(`${c.req.param("group")}/${c.req.param("run")}`);
    if (!run) return page(c, MessagePage({ title: "No such run", message: `${c.req.param("group")}/${c.req.param("run")} is not a run under ${root}.` }), 404);
    const order = c.req.query("order");
    const view: RunView = {
      filter: {
        min: optionalNumber(c.req.query("min")),
        max: optionalNumber(c.req.query("max")),
        errorsOnly: c.req.query("errors") === "1",
        minTurns: optionalNumber(c.req.query("tmin")),
        maxTurns: optionalNumber(c.req.query("tmax")),
      },
      order: order === "best" || order === "worst" ? order : "example",
      page: Math.max(1, Math.floor(optionalNumber(c.req.query("page")) ?? 1)),
    };
    const live = run.complete || run.abandoned ? undefined : { url: `/api/runs/${encodeURIComponent(run.group)}/${encodeURIComponent(run.name)}/version`, version: run.version };
    return page(c, RunPage({ run, stats: runStats(run), view, live }));
  });

  app.get("/runs/:group/:run/:example/:rollout", async (c) => {
    const run = await store.get(`${c.req.param("group")}/${c.req.param("run")}`);
    const example = Number(c.req.param("example"));
    const rollout = Number(c.req.param("rollout"));
    const row = run && Number.isInteger(example) && Number.isInteger(rollout) ? await store.row(run, example, rollout) : undefined;
    if (!run || !row) return page(c, MessagePage({ title: "No such rollout", message: `No rollout ${c.req.param("rollout")} of example ${c.req.param("example")} in that run.` }), 404);
    const at = run.rows.findIndex((r) => r.example_id === example && r.rollout === rollout);
    const pos = (i: number): [number, number] | undefined => (run.rows[i] ? [run.rows[i]!.example_id, run.rows[i]!.rollout] : undefined);
    return page(c, RolloutPage({ run, row, prev: pos(at - 1), next: pos(at + 1) }));
  });

  app.get("/compare", async (c) => {
    const ids = [...(c.req.queries("run") ?? []), ...[c.req.query("a"), c.req.query("b")].filter((x): x is string => !!x)];
    const back = (message: string) => c.redirect(`/?message=${encodeURIComponent(message)}`, 303);
    if (ids.length !== 2) return back(`Pick exactly two runs to compare (${ids.length} picked).`);
    const [a, b] = await Promise.all(ids.map((id) => store.get(id)));
    if (!a || !b) return back("One of those runs is not there any more.");
    if (a.env !== b.env) return back(`Compare runs of the same environment: ${a.env} and ${b.env} differ.`);
    // A is the earlier run, B the later one: B − A reads as "what changed since".
    const [first, second] = (a.meta.started_at ?? a.name) <= (b.meta.started_at ?? b.name) ? [a, b] : [b, a];
    const sa = runStats(first);
    const sb = runStats(second);
    return page(c, ComparePage({ a: first, b: second, sa, sb, rows: compareRuns(sa, sb) }));
  });

  return app;
}
