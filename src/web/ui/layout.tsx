/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The HTML shell of every page (playground and viewer): server-rendered with hono/jsx.
 *
 * Every .tsx file rendered on the server names its JSX runtime in the two pragmas above. tsx
 * (which loads these sources when envworker runs from a checkout) takes JSX settings from the
 * tsconfig.json of the directory the command runs in, not from this repository's: in a package
 * made by `envworker init`, or anywhere else, that fell back to React's classic runtime and every
 * page answered 500 "React is not defined". src/web/build.ts builds src/web/ui for the DOM.
 */
import type { Child } from "hono/jsx";
import { raw } from "hono/html";

export interface NavLink {
  href: string;
  label: string;
  current?: boolean;
}

export interface PageProps {
  title: string;
  /** Where "envworker" in the top bar leads. */
  home: string;
  /** The stylesheet's URL. */
  css: string;
  nav?: NavLink[];
  /** Scripts (URLs), loaded deferred in this order. */
  scripts?: string[];
  /** Data for the client script, as `<script type="application/json" id="boot">`. */
  boot?: unknown;
  product?: string;
  children?: Child;
}

/** JSON inside a <script> element: `<` escaped so that no text ends the element early. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

export function Page(p: PageProps) {
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="referrer" content="no-referrer" />
          <title>{p.title}</title>
          <link rel="icon" href="data:," />
          <link rel="stylesheet" href={p.css} />
          {p.boot === undefined ? null : <script type="application/json" id="boot">{raw(scriptJson(p.boot))}</script>}
          {(p.scripts ?? []).map((src) => (
            <script src={src} defer></script>
          ))}
        </head>
        <body>
          <a class="skip" href="#main">Skip to content</a>
          <header class="topbar">
            <div class="inner">
              <a class="brand" href={p.home}>
                env<span>worker</span> <span class="muted small" style="color: var(--muted); font-weight: 500">{p.product ?? ""}</span>
              </a>
              <nav aria-label="Main">
                {(p.nav ?? []).map((l) => (
                  <a href={l.href} aria-current={l.current ? "page" : undefined}>
                    {l.label}
                  </a>
                ))}
              </nav>
            </div>
          </header>
          <main id="main">{p.children}</main>
        </body>
      </html>
    </>
  );
}

/** Headers for every HTML page and script: nothing from elsewhere, no referrer (a token may be in the URL). */
export const PAGE_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};
