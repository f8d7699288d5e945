const t0 = performance.now(); const c0 = process.cpuUsage();
await import("../dist/src/cli/main.js");
const t2 = performance.now();
await import("../dist/envs/index.js");
const t3 = performance.now();
const c = process.cpuUsage(c0);
console.log(`dist main ${(t2-t0).toFixed(0)} envs ${(t3-t2).toFixed(0)} ms; cpu ${(c.user+c.system)/1000|0} ms`);
