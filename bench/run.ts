/**
 * `npm run bench`: every benchmark, each printing ratios against a baseline measured in the
 * same run (machines here are noisy; absolute figures alone mean little). Pick a subset with
 * `npm run bench -- engine http ws memory sandbox python python-env python-env-calls reasoning-gym py-score affinity affinity-episode js-code js-fresh server-start sandbox-runs`.
 */
import { benchAffinity } from "./affinity.ts";
import { benchAffinityEpisode } from "./affinity-episode.ts";
import { benchEngine } from "./engine.ts";
import { benchHttp } from "./http.ts";
import { benchJsCode } from "./js-code.ts";
import { benchJsFresh } from "./js-fresh.ts";
import { benchMemory } from "./memory.ts";
import { benchPyScore } from "./py-score.ts";
import { benchPython } from "./python.ts";
import { benchPythonEnv } from "./python-env.ts";
import { benchPythonEnvCalls } from "./python-env-calls.ts";
import { benchReasoningGym } from "./reasoning-gym.ts";
import { benchSandbox } from "./sandbox.ts";
import { benchSandboxRuns } from "./sandbox-runs.ts";
import { benchServerStart } from "./server-start.ts";
import { benchWs } from "./ws.ts";

const ALL: Record<string, () => Promise<void>> = { engine: benchEngine, sandbox: benchSandbox, http: benchHttp, ws: benchWs, memory: benchMemory, python: benchPython, "python-env": benchPythonEnv, "python-env-calls": benchPythonEnvCalls, "reasoning-gym": benchReasoningGym, "py-score": benchPyScore, affinity: benchAffinity, "affinity-episode": benchAffinityEpisode, "js-code": benchJsCode, "js-fresh": benchJsFresh, "server-start": benchServerStart, "sandbox-runs": benchSandboxRuns };

const chosen = process.argv.slice(2);
for (const name of chosen.length ? chosen : Object.keys(ALL)) {
  const bench = ALL[name];
  if (!bench) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(ALL).join(", ")}`);
    process.exit(2);
  }
  await bench();
}
