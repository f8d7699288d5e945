/**
 * One settings module (src/settings/settings.ts; issue 41): every environment variable envworker
 * reads is named there and read only through it, and README.md's "Settings" tables list exactly
 * those names. (test/server/settings.test.ts checks the first table's rows on a live server.)
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { MARKERS, SETTINGS } from "../../src/settings/settings.ts";

const ROOT = join(import.meta.dirname, "../..");
const MODULE = "src/settings/settings.ts";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith(".d.ts") ? [relative(ROOT, path).split("\\").join("/")] : [];
  });
}

/** Code without its comments (a doc comment names settings without reading them). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
}

/** Every variable name in `text`, but template placeholders (`__ENVWORKER_VERSION__`) and prefixes (`ENVWORKER_JUDGE_*`). */
function namesIn(text: string): string[] {
  return [...text.matchAll(/(?<![_A-Z0-9])ENVWORKER_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])/g)].map((m) => m[0]);
}

const NAME = "(?:ENVWORKER_[A-Z0-9_]+|PORT|HOST)";
/** What reading a variable looks like: `x.NAME`, `x["NAME"]`, `process.env[name]`, `{ NAME } = x`. */
const READS = [
  new RegExp(`\\.${NAME}\\b`, "g"),
  new RegExp(`\\[\\s*["'\`]${NAME}["'\`]\\s*\\]`, "g"),
  /process\.env\s*\[/g,
  new RegExp(`\\{[^{}]*\\b${NAME}\\b[^{}]*\\}\\s*=(?![=>])`, "g"),
];

/** The reads of settings in a file's code, as `file: match`. */
export function readsIn(file: string, text: string): string[] {
  const body = code(text);
  return READS.flatMap((re) => [...body.matchAll(re)].map((m) => `${file}: ${m[0].replace(/\s+/g, " ").slice(0, 80)}`));
}

/** The names of README.md's "## Settings" tables (every table up to the next `##` heading). */
function readmeNames(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("\n## Settings\n");
  expect(start).toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const rows = section.split("\n").filter((l) => l.startsWith("| `"));
  return rows.flatMap((row) => [...row.split("|")[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}

describe("settings: one module reads them, the README lists them", () => {
  const files = sources(join(ROOT, "src"));

  it("no file in src/ but the settings module reads one", () => {
    const reads = files.filter((f) => f !== MODULE).flatMap((f) => readsIn(f, readFileSync(join(ROOT, f), "utf8")));
    expect(reads).toEqual([]);
  });

  it("every ENVWORKER_* name in src/ is a setting of the module (or a mark envworker sets for its children)", () => {
    const known = new Set<string>([...SETTINGS, ...MARKERS]);
    const unknown = files.flatMap((f) => namesIn(readFileSync(join(ROOT, f), "utf8")).filter((n) => !known.has(n)).map((n) => `${f}: ${n}`));
    expect([...new Set(unknown)]).toEqual([]);
  });

  it("the README's settings tables list every setting, and no other", () => {
    const documented = readmeNames();
    expect(SETTINGS.filter((n) => !documented.includes(n)), "settings missing from README.md's tables").toEqual([]);
    expect(documented.filter((n) => !(SETTINGS as readonly string[]).includes(n)), "README rows the settings module does not read").toEqual([]);
  });

  it("the check sees a read", () => {
    expect(readsIn("x.ts", "const a = process.env.ENVWORKER_TOKEN;")).toHaveLength(1);
    expect(readsIn("x.ts", 'const a = env["ENVWORKER_LOG"];')).toHaveLength(1);
    expect(readsIn("x.ts", "const a = process.env[name];")).toHaveLength(1);
    expect(readsIn("x.ts", "const { ENVWORKER_SANDBOX } = vars;")).toHaveLength(1);
    expect(readsIn("x.ts", '// env.ENVWORKER_TOKEN\nthrow new Error("set ENVWORKER_TOKEN");\nconst env = { ...process.env, ENVWORKER_SHIM_PARENT: "1" };')).toEqual([]);
    expect(namesIn("__ENVWORKER_VERSION__ ENVWORKER_JUDGE_* ENVWORKER_LOG=info")).toEqual(["ENVWORKER_LOG"]);
  });
});
