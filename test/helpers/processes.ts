/**
 * The processes below this test process (sandbox hosts, zygotes, their children), from /proc: what
 * tests that look for a host's processes from outside start from.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Every live process below this one, with its parent's pid. */
export function processesBelow(root = process.pid): Map<number, number> {
  const parents = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone.
    }
  }
  const below = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === root) return true;
    return false;
  };
  return new Map([...parents].filter(([pid]) => below(pid)));
}
