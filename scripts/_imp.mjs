const t0 = performance.now(); const c0 = process.cpuUsage();
const { register } = await import("tsx/esm/api"); register();
const t1 = performance.now();
await import("/work/main/src/cli/main.ts");
const t2 = performance.now();
await import("/work/main/envs/index.ts");
const t3 = performance.now();
const c = process.cpuUsage(c0);
console.log(`tsx ${(t1-t0).toFixed(0)} main ${(t2-t1).toFixed(0)} envs ${(t3-t2).toFixed(0)} ms; cpu ${(c.user+c.system)/1000|0} ms`);
