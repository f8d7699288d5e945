/**
 * The folders draw the walls (DESIGN.md "Layout"; issue 41): a room of src/ imports only the rooms
 * below it, and no file's imports lead back to itself. Read from the sources' import lines (static,
 * `export … from`, dynamic `import("…")` with a literal specifier), type-only imports included: a
 * lower room that names a higher room's type depends on it all the same.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

/**
 * From the top of the stack down; a room may import itself and any room after it. The files
 * directly in src/ (index.ts, testing.ts, worker.ts) are the public entries: they may import any
 * room, and no room imports them.
 */
export const ROOMS = ["cli", "node", "workers", "web", "eval", "tools", "server", "env", "sandbox", "wall", "sched", "settings", "pycompat", "math"] as const;
/** Rooms that import no room of ours but themselves: the ground (sched, settings, pycompat, math). */
const GROUND: Record<string, readonly string[]> = { sched: [], settings: [], pycompat: [], math: [] };

/** Every module file under `dir`, relative to the repository root with "/" separators. */
function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return modules(path);
    return /\.(ts|tsx|mts)$/.test(name) && !name.endsWith(".d.ts") ? [relative(ROOT, path).split("\\").join("/")] : [];
  });
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^"';]*?\sfrom\s+)?["']([^"']+)["']|\bimport\(\s*(?:\/\*[^*]*\*\/\s*)?["']([^"']+)["']\s*\)|\bimportNodeOnly\(\s*["']([^"']+)["']\s*\)/g;

/** The relative imports of `source` (a file's text), as repository paths. */
export function importsOf(file: string, source: string): string[] {
  // Comments are not imports (a doc comment may quote one).
  const code = source.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " ")).replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
  const found: string[] = [];
  for (const m of code.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec || !spec.startsWith(".")) continue;
    found.push(posix.normalize(posix.join(posix.dirname(file), spec.replace(/[?#].*$/, ""))));
  }
  return found;
}

/** The room of a path under src/ (undefined for the entries directly in src/). */
export function roomOf(path: string): string | undefined {
  const parts = path.split("/");
  return parts[0] === "src" && parts.length > 2 ? parts[1] : undefined;
}

/** What is wrong with `from` importing `to` (undefined when the import runs downward or within a room). */
export function wrongImport(from: string, to: string): string | undefined {
  if (!to.startsWith("src/")) return undefined;
  const a = roomOf(from);
  const b = roomOf(to);
  if (a === undefined) return undefined;
  if (b === undefined) return `${from} imports ${to}, a public entry (entries import rooms, not the other way)`;
  if (a === b) return undefined;
  const ra = (ROOMS as readonly string[]).indexOf(a);
  const rb = (ROOMS as readonly string[]).indexOf(b);
  if (ra < 0) return `${from} is in src/${a}/, a room layout.test.ts does not know (add it to ROOMS where it belongs)`;
  if (rb < 0) return `${from} imports ${to}, in src/${b}/, a room layout.test.ts does not know`;
  if (GROUND[a] && !GROUND[a]!.includes(b)) return `${from} imports ${to}: src/${a}/ is at the ground and imports no other room`;
  if (rb < ra) return `${from} imports ${to}: src/${a}/ is below src/${b}/`;
  return undefined;
}

/** The import circles of a graph (each one once, as the files around it). */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's strongly connected components: every component of more than one file (or a file
  // that imports itself) holds a circle.
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) visit(v);
  return found;
}

function sourceGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of modules(SRC)) graph.set(file, importsOf(file, readFileSync(join(ROOT, file), "utf8")));
  return graph;
}

describe("layout: the folders draw the walls", () => {
  const graph = sourceGraph();

  it("reads the imports (the check sees what it checks)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("src/sandbox/index.ts")).toContain("src/sandbox/engines/quickjs/quickjs-process.ts");
    expect(graph.get("src/node/server.ts")).toContain("src/server/app.ts");
    for (const room of ROOMS) expect([...graph.keys()].some((f) => roomOf(f) === room), room).toBe(true);
  });

  it("no room imports a room above it; the ground imports no other room", () => {
    const wrong = [...graph].flatMap(([from, tos]) => tos.map((to) => wrongImport(from, to)).filter((w) => w !== undefined));
    expect(wrong).toEqual([]);
  });

  it("no import circle between files", () => {
    expect(circles(graph)).toEqual([]);
  });

  it("the check fails on a bad import and on a circle", () => {
    expect(wrongImport("src/server/app.ts", "src/web/mount.ts")).toMatch(/below src\/web/);
    expect(wrongImport("src/sandbox/engines/isolated-vm/isolated-vm-process.ts", "src/node/ts-worker.ts")).toMatch(/below src\/node/);
    expect(wrongImport("src/sched/limiter.ts", "src/wall/confine.ts")).toMatch(/ground/);
    expect(wrongImport("src/math/rational.ts", "src/sched/limiter.ts")).toMatch(/ground/);
    expect(wrongImport("src/env/rubric.ts", "src/index.ts")).toMatch(/public entry/);
    expect(wrongImport("src/node/server.ts", "src/web/mount.ts")).toBeUndefined();
    expect(importsOf("src/server/x.ts", 'import type { A } from "../web/a.ts";\nexport { b } from "./b.ts";\nconst c = await import("../eval/c.ts");\n// import { d } from "../cli/d.ts";\n')).toEqual([
      "src/web/a.ts",
      "src/server/b.ts",
      "src/eval/c.ts",
    ]);
    expect(circles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual([["a", "b", "c"]]);
    expect(circles(new Map([["a", ["b"]], ["b", []]]))).toEqual([]);
  });
});

