/**
 * A broken reward function gains nothing (issue 39): a Python environment whose respond and reward
 * run the model's text as Python (test/fixtures/python/exec_env.py), on a live server with two
 * clients (two tokens). Each call runs in a child forked for it (envworker/_call_fork.py), so what
 * one call's code does reaches that call only:
 *
 * - forging: replacing the module's scorer, planting markers in builtins and sys.modules, writing
 *   forged frames on every descriptor, killing its worker, opening its worker's memory: the next
 *   call of the same client and of the other scores honestly and sees no marker;
 * - reading: a scan of the whole memory of the attacker's process finds none of the other
 *   client's bytes (those of a call it made before, and of one still running), while it finds its own;
 * - yielding: a call that runs past half a second runs at a lower CPU priority, so short calls win a busy CPU;
 * - stalling: calls that spin until their deadline, many at once, do not slow the other client's
 *   steps past the load-scaled bound, and a request that goes away takes its queued calls with it.
 */
import { randomBytes } from "node:crypto";
import { getPriority } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processTree } from "../../src/wall/process-memory.ts";
import { request } from "../helpers/http.ts";
import { pythonWorkers, WORKER_PYTHON } from "../helpers/python-workers.ts";
import { spawnServe, type ServeProcess } from "../helpers/serve-process.ts";
import { cpuSlowdown } from "../helpers/slowdown.ts";

const A = { authorization: "Bearer client-a-token" };
const B = { authorization: "Bearer client-b-token" };
let server: ServeProcess;

beforeAll(async () => {
  server = await spawnServe(["./test/fixtures/python/exec_env.py", "--port", "0"], {
    ...WORKER_PYTHON,
    ENVWORKER_TOKEN: "client-a-token,client-b-token",
    // The spinning calls end at this deadline; the environment call's own is kept out of the way.
    ENVWORKER_PYTHON_TIMEOUT_S: "2",
    ENVWORKER_ENV_TIMEOUT_S: "120",
  });
  // Every thread's worker started: what follows measures serving, not start-up.
  for (let i = 0; i < 6; i++) await play(B, "1");
}, 180_000);
afterAll(async () => {
  await server?.stop();
});

const post = (path: string, body: unknown, who: Record<string, string>) => request("POST", `${server.url}/envs/py-exec${path}`, body, who);

async function reset(who: Record<string, string>, seed = 1): Promise<{ id: string; answer: string }> {
  const r = await post("/reset", { seed }, who);
  expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
  return { id: r.body.episode_id as string, answer: /say (\d+)/.exec(r.body.observation.messages.at(-1).content)![1]! };
}

/** One turn of code: what it left in OUT comes back as the observation. */
async function run(who: Record<string, string>, id: string, code: string): Promise<string> {
  const r = await post("/step", { episode_id: id, action: { content: code } }, who);
  expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
  return r.body.observation.messages[0].content as string;
}

/** A whole episode ending with `last` (its reward's completion is the episode's whole exchange). */
async function play(who: Record<string, string>, last: ((answer: string) => string) | string): Promise<number> {
  const { id, answer } = await reset(who, Math.floor(Math.random() * 1e6));
  const text = typeof last === "function" ? last(answer) : last;
  const r = await post("/step", { episode_id: id, action: { content: `# DONE\n${text}` } }, who);
  expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
  expect(r.body.done).toBe(true);
  return r.body.reward as number;
}

/** Everything an attacker's call can do to its process and whatever it can reach from it. */
const FORGE = `
import builtins, json, os, sys, signal
env = sys.modules["exec_env"]
env.score = lambda text, answer: 1.0
builtins.PLANTED = "by client a"
sys.modules["planted_by_a"] = env
os.environ["PLANTED"] = "1"
tried = {}
def attempt(name, f):
    try:
        f()
        tried[name] = "done"
    except Exception as err:
        tried[name] = type(err).__name__
attempt("kill_parent", lambda: os.kill(os.getppid(), signal.SIGKILL))
attempt("kill_group", lambda: os.kill(0, signal.SIGKILL))
attempt("parent_memory", lambda: open(f"/proc/{os.getppid()}/mem", "r+b"))
OUT = json.dumps(tried)
`;

/** Frames answering calls 1-199 with 1.0, on every descriptor the call has. */
const FRAMES = `
import os
for call in range(1, 200):
    head = b'{"t":"done","id":%d,"n":3}' % call
    frame = head + b" " * (255 - len(head)) + b"\\n" + b"1.0"
    for fd in range(64):
        try:
            os.write(fd, frame)
        except OSError:
            pass
`;

/** A frame answering its own call with a value nested 200,000 deep (past what a thread can copy), and one asking for such a sandbox run. */
const DEEP = (t: "done" | "sandbox") => `
import os
deep = b"[" * 200000 + b"]" * 200000
body = deep if ${JSON.stringify(t)} == "done" else b'{"code":"1","lang":"python","options":' + deep + b"}"
head = b'{"t":"${t}","sid":1,"n":%d}' % len(body)
os.write(3, head + b" " * (255 - len(head)) + b"\\n" + body)
import time
time.sleep(5)
`;

/** What a later call finds of the attacker's work. */
const LOOK = `
import builtins, json, os, sys
env = sys.modules["exec_env"]
OUT = json.dumps({"score": env.score("x", "y"), "planted": getattr(builtins, "PLANTED", None), "module": "planted_by_a" in sys.modules, "environ": os.environ.get("PLANTED")})
`;

/**
 * Counts matches of `pattern` in every readable mapping of this process's memory that no file backs
 * (heap, stacks, anonymous maps: where data is), read through ctypes (/proc/self/mem is closed to a
 * process that is not dumpable).
 */
const SCAN = (pattern: string) => `
import ctypes, re
pattern = re.compile(${JSON.stringify(pattern)}.encode())
hits = 0
with open("/proc/self/maps") as f:
    maps = f.read().splitlines()
for line in maps:
    parts = line.split()
    if not parts[1].startswith("r") or parts[4] != "0" or "[v" in line:
        continue
    lo, hi = (int(x, 16) for x in parts[0].split("-"))
    hits += len(pattern.findall(ctypes.string_at(lo, hi - lo)))
`;

describe("a Python environment call that runs the model's text reaches only itself", () => {
  it("forges nothing: the scorer it replaced, the markers it planted and the frames it wrote are gone for every later call", async () => {
    const attacker = await reset(A);
    const tried = JSON.parse(await run(A, attacker.id, FORGE)) as Record<string, string>;
    // Its worker and siblings are out of reach (seccomp: EPERM; not dumpable: EACCES).
    expect(tried.kill_parent).toBe("PermissionError");
    expect(tried.kill_group).toBe("PermissionError");
    expect(tried.parent_memory).toBe("PermissionError");
    // The attacker's own call was honest about itself, and its next one sees nothing of the last.
    expect(JSON.parse(await run(A, attacker.id, LOOK))).toEqual({ score: 0, planted: null, module: false, environ: null });
    const victim = await reset(B);
    expect(JSON.parse(await run(B, victim.id, LOOK))).toEqual({ score: 0, planted: null, module: false, environ: null });
    // Rewards: wrong answers score 0 and right ones 1, for both clients, after the attack.
    expect(await play(B, "wrong")).toBe(0);
    expect(await play(B, (answer) => answer)).toBe(1);
    expect(await play(A, "wrong")).toBe(0);
    // A reward that runs the attack itself forges its own score (the reward function's hole) and
    // nothing more: the next wrong answer of either client scores 0.
    expect(await play(A, FORGE)).toBe(1);
    expect(await play(B, "wrong")).toBe(0);
    expect(await play(A, "wrong")).toBe(0);
  }, 120_000);

  it("answers for no other call: frames forged for every call id on every descriptor reach only the forger's own call", async () => {
    const victim = await reset(B);
    const held = run(B, victim.id, "import time\ntime.sleep(1.5)\nOUT = 'mine'");
    await new Promise((r) => setTimeout(r, 500));
    const attacker = await reset(A);
    // Its own call gets the forged answer (not a reply: the step fails), no one else's does.
    const forged = await post("/step", { episode_id: attacker.id, action: { content: FRAMES } }, A);
    expect(forged.status, JSON.stringify(forged.body).slice(0, 300)).not.toBe(200);
    expect(await held).toBe("mine");
    expect(await play(B, "wrong")).toBe(0);
    expect(await play(B, (answer) => answer)).toBe(1);
  }, 120_000);

  it("breaks no other call with a value too deeply nested to pass between threads", async () => {
    const victim = await reset(B);
    const held = run(B, victim.id, "import time\ntime.sleep(1.5)\nOUT = 'mine'");
    await new Promise((r) => setTimeout(r, 500));
    for (const t of ["done", "sandbox"] as const) {
      const attacker = await reset(A);
      const r = await post("/step", { episode_id: attacker.id, action: { content: DEEP(t) } }, A);
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(422);
      expect(r.body.error.details?.reason).toBe("CRASHED");
    }
    expect(await held).toBe("mine");
    expect(await play(B, (answer) => answer)).toBe(1);
  }, 120_000);

  it("reads nothing of another call: a scan of its whole memory finds the other client's bytes nowhere, its own everywhere it put them", async () => {
    const secret = (who: string) => `SECRET-OF-${who}-${randomBytes(8).toString("hex")}`;
    const victim = await reset(B);
    // A call of B's that is over (its text and its answer went through the worker), and one still running.
    const before = secret("B");
    expect(await run(B, victim.id, `OUT = ${JSON.stringify(before)}`)).toBe(before);
    const running = secret("B");
    const held = run(B, victim.id, `S = ${JSON.stringify(running)}\nimport time\ntime.sleep(1.5)\nOUT = S`);
    await new Promise((r) => setTimeout(r, 500));
    const attacker = await reset(A);
    const own = secret("A");
    const found = await run(
      A,
      attacker.id,
      `MINE = ${JSON.stringify(own)}\n${SCAN("SECRET-OF-B-[0-9a-f]{16}")}\ntheirs = hits\n${SCAN("SECRET-OF-A-[0-9a-f]{16}")}\nOUT = f"{theirs} {hits}"`,
    );
    const [theirs, mine] = found.split(" ").map(Number);
    expect(mine, "the scan finds what is there: its own secret").toBeGreaterThan(0);
    expect(theirs, "another client's bytes in the attacker's process").toBe(0);
    expect(await held).toBe(running);
  }, 120_000);

  it("yields the CPU once it runs long: a call past half a second runs at niceness 10 more, a short one at the worker's own, the server's", async () => {
    const { id } = await reset(A);
    const LONG = "import os, time\nfirst = os.getpriority(os.PRIO_PROCESS, 0)\nt = time.time()\nwhile time.time() - t < 1.0:\n    pass\nOUT = f'{first} {os.getpriority(os.PRIO_PROCESS, 0)}'";
    const [first, after] = (await run(A, id, LONG)).split(" ").map(Number);
    expect(after).toBe(Math.min(19, first! + 10));
    const short = await run(A, (await reset(A)).id, "import os\nOUT = str(os.getpriority(os.PRIO_PROCESS, 0))");
    expect(Number(short)).toBe(first);
    // The I/O thread that starts the worker serves at the server's priority (as root, which may raise it back).
    if (process.getuid?.() === 0) expect(first).toBe(getPriority(server.pid));
  }, 60_000);

  it("stalls no one: another client's steps are served within the load-scaled bound while calls spin to their deadline, and a request that goes away takes its queued calls with it", async () => {
    const SPIN = "while True:\n    pass";
    let stop = false;
    let slowestMs = 0;
    let played = 0;
    const failures: string[] = [];
    const victim = (async () => {
      while (!stop) {
        const t0 = performance.now();
        try {
          expect(await play(B, (answer) => answer)).toBe(1);
        } catch (err) {
          failures.push(String(err));
        }
        slowestMs = Math.max(slowestMs, performance.now() - t0);
        played++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    // Spinning respond calls of three episodes, and a /score of 4 spinning rewards (2 s each, two of
    // a client's at a time), then a /score of 32 that the client gives up on after a second.
    const spins = await Promise.all([0, 1, 2].map(async () => post("/step", { episode_id: (await reset(A)).id, action: { content: SPIN } }, A)));
    for (const r of spins) expect(r.body.error?.details?.reason, JSON.stringify(r.body).slice(0, 300)).toBe("TIMEOUT");
    const scored = await post("/score", { items: Array.from({ length: 4 }, () => ({ completion: SPIN, answer: "1" })) }, A);
    expect(scored.status).toBe(200);
    for (const r of scored.body.results) expect(r.reward).toBe(0);
    const leaving = new AbortController();
    const gone = fetch(`${server.url}/envs/py-exec/score`, {
      method: "POST",
      headers: { "content-type": "application/json", ...A },
      body: JSON.stringify({ items: Array.from({ length: 32 }, () => ({ completion: SPIN, answer: "1" })) }),
      signal: leaving.signal,
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1000));
    leaving.abort();
    await gone;
    stop = true;
    await victim;
    // Its calls go: no more than a spare per worker is left within a few seconds, not 32 × 2 s of spinning.
    const workers = pythonWorkers(server.pid, "exec_env.py");
    const deadline = performance.now() + 6000 * cpuSlowdown();
    const children = () => workers.reduce((n, w) => n + processTree(w).length - 1, 0);
    while (children() > workers.length && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(children()).toBeLessThanOrEqual(workers.length);
    expect(failures).toEqual([]);
    expect(played).toBeGreaterThan(5);
    const slowdown = cpuSlowdown();
    expect(slowestMs, `load factor ${slowdown.toFixed(2)}`).toBeLessThan(1500 * slowdown);
  }, 180_000);
});
