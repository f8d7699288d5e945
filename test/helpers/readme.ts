/** The README's tables, read by the tests that must not drift apart from them. */
import { readFileSync } from "node:fs";

export interface SettingRow {
  /** The variables a row documents (e.g. PORT and HOST share one). */
  names: string[];
  /** Their defaults, in the same order (backticked values; none when "unset"). */
  defaults: string[];
}

export function readmeSettings(): SettingRow[] {
  const lines = readFileSync(new URL("../../README.md", import.meta.url), "utf8").split("\n");
  const start = lines.findIndex((l) => /^\|\s*variable\s*\|\s*default\s*\|/.test(l));
  if (start === -1) throw new Error("README.md has no settings table (| variable | default | what |)");
  const rows: SettingRow[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [name, def] = line.split("|").slice(1, 3).map((c) => c.trim());
    rows.push({ names: [...name!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!), defaults: [...def!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) });
  }
  return rows;
}
