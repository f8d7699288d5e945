import { readdirSync, existsSync } from "node:fs";
await import("../dist/src/index.js");
for (const d of readdirSync("dist/envs")) {
  const f = `../dist/envs/${d}/index.js`;
  if (!existsSync(new URL(f, import.meta.url))) continue;
  const t = performance.now(); await import(f); console.log(d, (performance.now() - t).toFixed(0));
}
