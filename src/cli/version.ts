/** envworker's own version and root, read from its package.json (`envworker --version`, init, eval's metadata). */
import { existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder of envworker's package.json: the repository (src/cli here) or the package (dist/src/cli). */
export function envworkerRoot(): string | undefined {
  for (const up of ["../../package.json", "../../../package.json"]) {
    const url = new URL(up, import.meta.url);
    if (!existsSync(url)) continue;
    try {
      const pkg = JSON.parse(readFileSync(url, "utf8")) as { name?: string };
      if (pkg.name === "envworker") return dirname(fileURLToPath(url));
    } catch {
      // not ours; look further up
    }
  }
  return undefined;
}

export function envworkerVersion(): string {
  const root = envworkerRoot();
  if (root === undefined) return "unknown";
  try {
    return (JSON.parse(readFileSync(`${root}/package.json`, "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}
