/**
 * The playground's routes on the protocol app (Node and Workers alike): `GET /` → `/web`, the
 * environment list at `/web`, one environment's playground at `/web/{name}` (also reached from
 * `/envs/{name}/web`, where OpenEnv has it), and its script and stylesheet under `/web/assets/`. They sit behind the same token check as every other route;
 * a page reached under `/t/{token}/` builds all its links and API calls under that prefix, and a
 * `?token=` visit is redirected there, so the browser never needs to send a header.
 */
import type { Context, Hono } from "hono";
import type { Environment } from "../env/environment.ts";
import PLAYGROUND_JS from "./generated/playground-client.ts";
import { PAGE_HEADERS } from "./ui/layout.tsx";
import { STYLE_CSS } from "./ui/style.ts";
import { EnvListPage, NotFoundPage, PlaygroundPage, type Paths } from "./playground/pages.tsx";

const ASSETS: Record<string, { body: string; type: string }> = {
  "playground.js": { body: PLAYGROUND_JS, type: "text/javascript; charset=utf-8" },
  "style.css": { body: STYLE_CSS, type: "text/css; charset=utf-8" },
};

function pathsOf(c: Context): Paths {
  const m = /^\/t\/[^/]+/.exec(c.req.path);
  return { prefix: m ? m[0] : "", shownPrefix: m ? "/t/***" : "" };
}

/** A `?token=` visit moves to the `/t/{token}/` form, which relative links and fetches keep. */
function redirectToken(c: Context, tokens: boolean): Response | undefined {
  const token = c.req.query("token");
  if (!tokens || token === undefined || c.req.path.startsWith("/t/")) return undefined;
  const url = new URL(c.req.url);
  url.searchParams.delete("token");
  const path = url.pathname === "/" ? "/web" : url.pathname;
  return c.redirect(`/t/${encodeURIComponent(token)}${path}${url.search}`, 302);
}

function html(c: Context, page: ReturnType<typeof EnvListPage>, status = 200) {
  return c.html(page, status as 200, PAGE_HEADERS);
}

/** `tokens`: the server requires a token (so the /t/{token}/ routes exist). */
export function mountWeb(app: Hono<any>, opts: { envs: readonly Environment[]; tokens: boolean }): void {
  const byName = new Map(opts.envs.map((e) => [e.name, e]));
  const tokenRedirect = (c: Context) => redirectToken(c, opts.tokens);
  app.get("/", (c) => tokenRedirect(c) ?? c.redirect(`${pathsOf(c).prefix}/web`, 302));
  app.get("/web", (c) => tokenRedirect(c) ?? html(c, EnvListPage({ envs: opts.envs, paths: pathsOf(c) })));
  app.get("/web/", (c) => tokenRedirect(c) ?? c.redirect(`${pathsOf(c).prefix}/web`, 302));
  // An OpenEnv server has its playground at {base}/web: so does each environment here.
  app.get("/envs/:name/web", (c) => tokenRedirect(c) ?? c.redirect(`${pathsOf(c).prefix}/web/${encodeURIComponent(c.req.param("name"))}`, 302));
  app.get("/web/assets/:file", (c) => {
    const asset = ASSETS[c.req.param("file")];
    if (!asset) return c.json({ error: { code: "NOT_FOUND", message: `no asset ${c.req.param("file")}` } }, 404);
    return c.body(asset.body, 200, { ...PAGE_HEADERS, "content-type": asset.type, "cache-control": "no-cache" });
  });
  app.get("/web/:name", (c) => {
    const redirect = tokenRedirect(c);
    if (redirect) return redirect;
    const env = byName.get(c.req.param("name"));
    if (!env) return html(c, NotFoundPage({ name: c.req.param("name"), paths: pathsOf(c) }), 404);
    return html(c, PlaygroundPage({ env, envs: opts.envs, paths: pathsOf(c) }));
  });
}
