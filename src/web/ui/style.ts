/**
 * The one stylesheet of the playground and the results viewer. A TypeScript module (not a .css
 * file) so that the Workers bundle carries it without a loader.
 */
export const STYLE_CSS = `
:root {
  --bg: #f6f6f3; --surface: #fff; --sunken: #f0f0ec; --border: #e2e2dc; --border-strong: #c9c9c1;
  --text: #1d1d1b; --muted: #676760; --accent: #2f54c6; --accent-strong: #2443a3; --accent-weak: #eaf0ff;
  --good: #23794a; --good-weak: #e5f4eb; --bad: #b42d2d; --bad-weak: #fbeaea; --warn: #9a5b00; --warn-weak: #fdf3e1;
  --system: #676760; --user: #2f54c6; --assistant: #6a3fb5; --tool: #9a5b00;
  --radius: 8px; --shadow: 0 1px 2px rgba(20,20,10,.06), 0 1px 1px rgba(20,20,10,.04);
  --sans: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", sans-serif;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--text); font: 15px/1.5 var(--sans); }
a { color: var(--accent); text-underline-offset: 2px; }
a:hover { color: var(--accent-strong); }
code, pre, kbd { font-family: var(--mono); font-size: 13px; }
h1, h2, h3 { line-height: 1.25; margin: 0 0 .5rem; font-weight: 650; letter-spacing: -.01em; }
h1 { font-size: 1.45rem; } h2 { font-size: 1.1rem; } h3 { font-size: .95rem; }
p { margin: 0 0 .75rem; }
:focus-visible { outline: 3px solid color-mix(in srgb, var(--accent) 55%, transparent); outline-offset: 2px; border-radius: 4px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: var(--surface); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }

.topbar { background: var(--surface); border-bottom: 1px solid var(--border); }
.topbar .inner { max-width: 1360px; margin: 0 auto; padding: .7rem 1.25rem; display: flex; gap: 1.25rem; align-items: center; flex-wrap: wrap; }
.brand { font-weight: 700; color: var(--text); text-decoration: none; letter-spacing: -.02em; font-size: 1.05rem; }
.brand span { color: var(--accent); }
.topbar nav { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .92rem; }
.topbar nav a { color: var(--muted); text-decoration: none; }
.topbar nav a[aria-current="page"], .topbar nav a:hover { color: var(--text); }
main { max-width: 1360px; margin: 0 auto; padding: 1.25rem 1.25rem 3rem; }
.lede { color: var(--muted); max-width: 70ch; }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
.nowrap { white-space: nowrap; }
.crumbs { font-size: .88rem; color: var(--muted); margin-bottom: .35rem; }
.crumbs a { color: var(--muted); }

.card { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); box-shadow: var(--shadow); padding: 1rem 1.1rem; }
.stack > * + * { margin-top: 1rem; }
.grid-cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 1rem; }
.grid-cards > .card { margin: 0; }
.env-card { display: flex; flex-direction: column; gap: .4rem; }
.env-card h2 a { text-decoration: none; color: var(--text); }
.env-card h2 a:hover { color: var(--accent); }
.env-card .meta { margin-top: auto; display: flex; gap: .4rem; flex-wrap: wrap; }
.pill { display: inline-block; font-size: .76rem; padding: .08rem .5rem; border-radius: 999px; background: var(--sunken); color: var(--muted); border: 1px solid var(--border); white-space: nowrap; }
.pill.good { background: var(--good-weak); color: var(--good); border-color: transparent; }
.pill.bad { background: var(--bad-weak); color: var(--bad); border-color: transparent; }
.pill.warn { background: var(--warn-weak); color: var(--warn); border-color: transparent; }
.pill.accent { background: var(--accent-weak); color: var(--accent-strong); border-color: transparent; }

/* forms */
label, .label { display: block; font-size: .84rem; font-weight: 600; margin-bottom: .2rem; }
.hint { display: block; font-size: .78rem; color: var(--muted); font-weight: 400; margin-top: .15rem; }
input[type=text], input[type=number], input[type=search], select, textarea {
  min-height: 2.4rem;
  width: 100%; font: inherit; font-size: .92rem; color: var(--text); background: var(--surface);
  border: 1px solid var(--border-strong); border-radius: 6px; padding: .42rem .55rem; }
textarea { font-family: var(--mono); font-size: 13px; line-height: 1.45; resize: vertical; }
input:disabled, textarea:disabled, select:disabled { background: var(--sunken); color: var(--muted); }
input[type=checkbox] { width: 1rem; height: 1rem; accent-color: var(--accent); vertical-align: -2px; }
.check { display: inline-flex; gap: .4rem; align-items: center; font-weight: 500; font-size: .88rem; }
fieldset { border: 1px solid var(--border); border-radius: var(--radius); padding: .75rem .9rem .9rem; margin: 0; min-width: 0; }
legend { font-weight: 650; font-size: .9rem; padding: 0 .35rem; }
.fields { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: .75rem; }
.fields .wide { grid-column: 1 / -1; }
.row { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; }
.row.end { justify-content: flex-end; }
.spacer { flex: 1; }
button, .button {
  font: inherit; font-size: .9rem; font-weight: 600; border-radius: 6px; padding: .45rem .95rem; cursor: pointer;
  border: 1px solid var(--border-strong); background: var(--surface); color: var(--text); text-decoration: none; display: inline-block; line-height: 1.3; }
button:hover, .button:hover { background: var(--sunken); color: var(--text); }
button.primary, .button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.primary:hover, .button.primary:hover { background: var(--accent-strong); }
button.quiet { border-color: transparent; background: transparent; color: var(--muted); padding: .3rem .5rem; }
button.quiet:hover { color: var(--text); background: var(--sunken); }
button:disabled { opacity: .55; cursor: not-allowed; }
.error-box { background: var(--bad-weak); color: var(--bad); border-radius: 6px; padding: .55rem .75rem; font-size: .9rem; white-space: pre-wrap; }

/* conversation */
.chat { display: flex; flex-direction: column; gap: .7rem; }
.msg { border: 1px solid var(--border); border-left: 4px solid var(--border-strong); border-radius: 6px; background: var(--surface); padding: .55rem .8rem .65rem; min-width: 0; }
.msg header { display: flex; gap: .5rem; align-items: baseline; margin-bottom: .25rem; flex-wrap: wrap; }
.msg .role { font-size: .74rem; font-weight: 700; letter-spacing: .06em; text-transform: uppercase; }
.msg .content { margin: 0; white-space: pre-wrap; word-break: break-word; font-family: var(--sans); font-size: .94rem; }
.msg.system { border-left-color: var(--system); background: #fbfbf9; } .msg.system .role { color: var(--system); }
.msg.system .content { color: #3d3d39; font-size: .88rem; }
.msg.user { border-left-color: var(--user); } .msg.user .role { color: var(--user); }
.msg.assistant { border-left-color: var(--assistant); background: #fbf9ff; } .msg.assistant .role { color: var(--assistant); }
.msg.tool { border-left-color: var(--tool); background: #fffcf5; } .msg.tool .role { color: var(--tool); }
.msg .content.mono, .msg.tool .content { font-family: var(--mono); font-size: 13px; }
.toolcall { margin-top: .45rem; border: 1px dashed var(--border-strong); border-radius: 6px; padding: .35rem .6rem; background: var(--surface); }
.toolcall .name { font-family: var(--mono); font-weight: 700; font-size: 13px; }
.toolcall pre { margin: .2rem 0 0; white-space: pre-wrap; word-break: break-word; }
details.reasoning { margin: .1rem 0 .35rem; font-size: .88rem; color: var(--muted); }
details.reasoning pre { white-space: pre-wrap; font-family: var(--sans); font-size: .86rem; margin: .3rem 0 0; }
details > summary { cursor: pointer; }
.turn-sep { font-size: .74rem; color: var(--muted); text-transform: uppercase; letter-spacing: .08em; display: flex; align-items: center; gap: .6rem; }
.turn-sep::before, .turn-sep::after { content: ""; flex: 1; border-top: 1px solid var(--border); }

/* numbers */
.stats { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: .75rem; }
.stat { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: .6rem .8rem; box-shadow: var(--shadow); }
.stat .k { font-size: .76rem; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
.stat .v { font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.stat .v small { font-size: .85rem; color: var(--muted); font-weight: 500; }
.reward-big { font-size: 2.2rem; font-weight: 700; font-variant-numeric: tabular-nums; line-height: 1.1; }
.bar { height: 6px; background: var(--sunken); border-radius: 3px; overflow: hidden; min-width: 60px; }
.bar > span { display: block; height: 100%; background: var(--accent); }

/* tables */
.table-wrap { overflow-x: auto; border: 1px solid var(--border); border-radius: var(--radius); background: var(--surface); box-shadow: var(--shadow); }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .5rem .7rem; border-bottom: 1px solid var(--border); vertical-align: top; }
th { font-size: .78rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); background: #fafaf8; font-weight: 650; white-space: nowrap; }
th a { color: inherit; text-decoration: none; } th a:hover { color: var(--text); }
th[aria-sort] a { color: var(--text); }
tr:last-child td { border-bottom: 0; }
tbody tr:hover { background: #fafaf7; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chips { display: flex; gap: .3rem; flex-wrap: wrap; }
.chip { font-family: var(--mono); font-size: 12px; padding: .1rem .45rem; border-radius: 5px; text-decoration: none; border: 1px solid transparent; font-variant-numeric: tabular-nums; }
.chip.r-hi { background: var(--good-weak); color: var(--good); } .chip.r-mid { background: var(--warn-weak); color: var(--warn); }
.chip.r-lo { background: var(--bad-weak); color: var(--bad); } .chip.err { background: var(--bad); color: #fff; }
.chip:hover { border-color: currentColor; }

/* playground */
.play { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 430px); grid-template-areas: "episode start" "episode wire"; grid-template-rows: auto 1fr; gap: 1.25rem; align-items: start; }
.play .start-area { grid-area: start; } .play .episode-area { grid-area: episode; } .play .wire-area { grid-area: wire; }
.play .start-area .fields { grid-template-columns: repeat(auto-fill, minmax(110px, 1fr)); }
.play .start-area .fields .wide, .play .start-area details .fields { grid-template-columns: minmax(0, 1fr); }
.episode-bar { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; }
.episode-bar code { background: var(--sunken); padding: .15rem .4rem; border-radius: 4px; word-break: break-all; }
.composer textarea { min-height: 6.5rem; }
.reward-card { border-color: color-mix(in srgb, var(--good) 35%, var(--border)); background: linear-gradient(180deg, var(--good-weak), var(--surface) 70%); }
.reward-card.low { border-color: color-mix(in srgb, var(--bad) 30%, var(--border)); background: linear-gradient(180deg, var(--bad-weak), var(--surface) 70%); }
.exchange { border: 1px solid var(--border); border-radius: 6px; margin-bottom: .5rem; background: var(--surface); }
.exchange > summary { padding: .4rem .6rem; font-family: var(--mono); font-size: 12.5px; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.exchange .status { font-weight: 700; } .exchange .status.ok { color: var(--good); } .exchange .status.fail { color: var(--bad); }
.exchange .body { padding: 0 .6rem .5rem; }
.exchange .body h4 { margin: .4rem 0 .15rem; font-size: .72rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
pre.json { margin: 0; background: #1f2126; color: #e6e6e1; border-radius: 6px; padding: .5rem .6rem; overflow: auto; max-height: 340px; font-size: 12px; line-height: 1.45; white-space: pre-wrap; word-break: break-word; }

/* viewer */
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 1rem; }
.chart-box { position: relative; height: 240px; }
.chart-box.small { height: 150px; }
.filters { display: flex; gap: .75rem; align-items: flex-end; flex-wrap: wrap; }
.filters > div { min-width: 110px; }
.filters input[type=number] { width: 7rem; }
.section-title { display: flex; align-items: baseline; gap: .75rem; margin: 1.5rem 0 .6rem; flex-wrap: wrap; }
.section-title h2 { margin: 0; }
.live { display: inline-flex; align-items: center; gap: .35rem; }
.live::before { content: ""; width: .5rem; height: .5rem; border-radius: 50%; background: var(--good); animation: pulse 1.4s infinite; }
@keyframes pulse { 50% { opacity: .3; } }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; font-size: .88rem; margin: 0; }
.kv dt { color: var(--muted); } .kv dd { margin: 0; min-width: 0; word-break: break-word; }
.two { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 1.25rem; align-items: start; }
.pager { display: flex; gap: .5rem; align-items: center; margin-top: .75rem; flex-wrap: wrap; }

@media (max-width: 900px) {
  .play, .two { grid-template-columns: minmax(0, 1fr); }
  .play { grid-template-areas: "start" "episode" "wire"; grid-template-rows: auto; }
}
@media (max-width: 520px) {
  body { font-size: 14.5px; }
  main { padding: 1rem .75rem 2.5rem; }
  .topbar .inner { padding: .6rem .75rem; gap: .75rem; }
  .fields { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
  .stats { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); }
  th, td { padding: .45rem .5rem; }
  .hide-narrow { display: none; }
}
`;
