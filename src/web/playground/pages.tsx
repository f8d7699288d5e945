/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The playground's server-rendered pages: the list of environments, and the page of one
 * environment (its description, then the client app from ./client mounts into #app).
 */
import { defaultMaxTurns, type Environment } from "../../env/environment.ts";
import { Page } from "../ui/layout.tsx";
import type { Boot } from "./boot.ts";

export interface Paths {
  /** "" or "/t/{token}": what every URL of the page starts with. */
  prefix: string;
  /** The same with the token masked, for display. */
  shownPrefix: string;
}

const css = (p: Paths) => `${p.prefix}/web/assets/style.css`;

export function EnvListPage(props: { envs: readonly Environment[]; paths: Paths }) {
  const { paths } = props;
  return (
    <Page title="envworker playground" home={`${paths.prefix}/web`} css={css(paths)} product="playground">
      <h1>Environments</h1>
      <p class="lede">
        Pick an environment, reset an episode and play the model's side by hand: the page shows the prompt, your turns, the environment's replies and the reward, and every
        request it sends (the same HTTP routes a trainer uses, at <code>{paths.shownPrefix}/envs/&#123;name&#125;</code>).
      </p>
      <ul class="grid-cards" style="list-style:none;padding:0;margin:1rem 0 0">
        {props.envs.map((e) => (
          <li class="card env-card" data-env={e.name}>
            <h2>
              <a href={`${paths.prefix}/web/${encodeURIComponent(e.name)}`}>{e.name}</a>
            </h2>
            <p class="muted" style="margin:0">
              {e.description}
            </p>
            <div class="meta">
              <span class="pill">v{e.version}</span>
              <span class="pill">
                {turnsPill(e)}
              </span>
              {e.tools.length ? toolsPill(e) : null}
              <span class="pill">{e.splits.join(" · ")}</span>
            </div>
          </li>
        ))}
      </ul>
    </Page>
  );
}

/** "1 turn", "≤ 6 turns": the limit of an episode with the default args. */
function turnsPill(env: Environment): string {
  const n = defaultMaxTurns(env);
  return n === null ? "turns depend on the args" : n === 1 ? "1 turn" : `≤ ${n} turns`;
}

/** The tools an environment gives the model, on its card and its page. */
function toolsPill(env: Environment) {
  return <span class="pill accent">tools: {env.tools.map((t) => t.name).join(", ")}</span>;
}

export function PlaygroundPage(props: { env: Environment; envs: readonly Environment[]; paths: Paths }) {
  const { env, paths } = props;
  const base = `/envs/${encodeURIComponent(env.name)}`;
  const boot: Boot = {
    env: { name: env.name, description: env.description, version: env.version, max_turns: defaultMaxTurns(env), splits: [...env.splits] },
    api: `${paths.prefix}${base}`,
    shownApi: `${paths.shownPrefix}${base}`,
  };
  return (
    <Page
      title={`${env.name} · envworker playground`}
      home={`${paths.prefix}/web`}
      css={css(paths)}
      product="playground"
      nav={props.envs.map((e) => ({ href: `${paths.prefix}/web/${encodeURIComponent(e.name)}`, label: e.name, current: e.name === env.name }))}
      scripts={[`${paths.prefix}/web/assets/playground.js`]}
      boot={boot}
    >
      <div class="crumbs">
        <a href={`${paths.prefix}/web`}>Environments</a> / {env.name}
      </div>
      <h1>{env.name}</h1>
      <p class="lede">
        {env.description} <span class="pill">v{env.version}</span> <span class="pill">{turnsPill(env)}</span>
        {env.tools.length ? <> {toolsPill(env)}</> : null}
      </p>
      <div id="app">
        <noscript>The playground needs JavaScript. The same routes work from curl: POST {boot.shownApi}/reset.</noscript>
        <p class="muted">Loading…</p>
      </div>
    </Page>
  );
}

export function NotFoundPage(props: { name: string; paths: Paths }) {
  return (
    <Page title="not found · envworker" home={`${props.paths.prefix}/web`} css={css(props.paths)} product="playground">
      <h1>No environment “{props.name}”</h1>
      <p>
        <a href={`${props.paths.prefix}/web`}>See the environments this server has.</a>
      </p>
    </Page>
  );
}
