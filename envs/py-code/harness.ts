/**
 * Grading Python code in the python sandbox, for py-code's tasks and for clients' own tests
 * (`info.tests` in POST /envs/py-code/score).
 *
 * Two kinds of tests:
 *
 * - ASSERT tests (`"assert add(2, 3) == 5"`): one assert statement each. Threat model: the
 *   candidate's code runs in the same interpreter as whatever evaluates its results, so it can
 *   patch builtins and modules, override `__eq__`/`__bool__` on what it returns, print anything,
 *   walk the object graph (`gc.get_objects()`, frames) to read what the interpreter holds, or end
 *   the run (`sys.exit`, `os._exit`). So the expected values are never in that interpreter. Each
 *   evaluation takes three kinds of sandbox runs, and every run starts from a clean snapshot:
 *     1. PREPARE (no candidate code): parse each test and cut out its PROBES, the outermost calls
 *        into the solution (calls whose callee is not a builtin or a module), e.g. `add(2, 3)`; the
 *        test becomes `assert __probe_0 == 5`.
 *     2. PROBE, once per test (candidate code + that test's probes only): load the code, evaluate
 *        each probe and answer with its value as Python literal text (`repr`), after checking that
 *        the value is plain data of exact built-in types (int, float, str, list, dict, ...). A
 *        value of the candidate's own classes fails the test; so `__eq__` tricks cannot even be
 *        tried. The candidate sees only this test's inputs.
 *     3. VERIFY (no candidate code): rebuild each probe value from its text with a strict literal
 *        parser (no evaluation of anything else), bind it and run the rewritten assert.
 *   Whatever the candidate does in (2), the most it can do is choose the text of its own values,
 *   which is what its function returns anyway; it cannot learn or reach the expected values.
 *   PREPARE and VERIFY are GRADING runs (`grading: true`, src/sandbox/types.ts): they run in a
 *   process where no candidate's code has run or will run, so even a candidate that escaped the
 *   interpreter in (2) and kept a foothold in its process meets no test and no verdict there.
 *   PREPARE runs for every evaluation, never cached: a cut made in one client's grading process
 *   would otherwise decide another client's verdicts.
 *   Limitation: calls into the solution must be direct (`f(x)`, `Solution().f(x)`); a test that
 *   passes the function as a value (`map(f, xs)`) fails.
 *
 * - STDIO tests (`{"input": "...", "output": "..."}`): the program runs once per test with the
 *   input on stdin; its stdout is compared with the expected output line by line, trailing
 *   whitespace of each line and trailing blank lines ignored. The expected output never enters
 *   the sandbox. A run that fails (an uncaught exception, a non-zero sys.exit, a limit) fails the
 *   test, whatever it printed; `sys.exit(0)` is a normal end.
 *
 * Every test has its own time limit; the evaluation never throws.
 */
import type { JsonValue, RunResult, Sandbox } from "envworker";
import type { GradeStatus, Graded } from "../shared/grading.ts";

export type StdioTest = { input: string; output: string };
export type TestSpec = { kind: "assert"; tests: string[] } | { kind: "stdio"; tests: StdioTest[] };

export interface EvaluateOptions {
  /** Time limit of each test (ms). */
  timeoutMs: number;
  /** Memory limit of each run (MiB above the idle interpreter). */
  memoryMb?: number;
}

export type EvaluationStatus = Extract<GradeStatus, "ok" | "no_code" | "compile_error" | "sandbox_error">;

export interface TestFailure {
  test: number;
  /** Why: "wrong answer", "wrong output", an exception name, "timeout", "memory limit"... */
  reason: string;
}

export interface Evaluation extends Graded<EvaluationStatus, TestFailure> {
  /** Tests that ran out of time. */
  timeouts: number;
  /** Tests that hit the memory limit. */
  memoryErrors: number;
}

export const DEFAULT_TEST_TIMEOUT_MS = 2000;
export const DEFAULT_MEMORY_MB = 128;
const PREPARE_TIMEOUT_MS = 5000;
const MAX_FAILURES = 5;
/** Largest probe value (Python literal text) accepted from a candidate run. */
const MAX_VALUE_CHARS = 256 * 1024;

/** Parses every assert test and cuts out its probes. Runs without candidate code. Input: `__tests`. */
export const PREPARE_SOURCE = String.raw`
import ast, builtins, sys

def __prepare(tests):
    builtin_names = set(dir(builtins))
    out = []
    for src in tests:
        try:
            tree = ast.parse(src, "<test>", "exec")
        except SyntaxError as e:
            out.append({"error": "the test does not parse: %s" % (e.msg,)})
            continue
        if len(tree.body) != 1 or type(tree.body[0]) is not ast.Assert:
            out.append({"error": "a test must be a single assert statement"})
            continue
        modules = []
        probes = []

        def known(name):
            if name in builtin_names:
                return True
            if name in modules:
                return True
            try:
                __import__(name)
            except BaseException:
                return False
            modules.append(name)
            return True

        class Cut(ast.NodeTransformer):
            def visit_Call(self, node):
                root = node.func
                while True:
                    if type(root) is ast.Attribute or type(root) is ast.Subscript:
                        root = root.value
                    elif type(root) is ast.Call:
                        root = root.func
                    else:
                        break
                # A bare call (f(x)) calls a function: the candidate's unless it is a builtin, even
                # where a module has that name (CPython 3.12 still has a "chunk" module); only a
                # name reached through attributes (math.sqrt(x)) may be a module.
                if type(root) is ast.Name and (root.id not in builtin_names if root is node.func else not known(root.id)):
                    probes.append(ast.unparse(node))
                    return ast.copy_location(ast.Name(id="__probe_%d" % (len(probes) - 1), ctx=ast.Load()), node)
                self.generic_visit(node)
                return node

        tree = ast.fix_missing_locations(Cut().visit(tree))
        out.append({"source": ast.unparse(tree), "probes": probes, "modules": modules})
    return out

__prepare(__tests)
`;

/**
 * Loads the candidate's code and evaluates one test's probes. Input: `__pyc` = {code, probes}.
 * Answers `["load_error", name, message]` or `["ok", [[status, text], ...]]`.
 */
export const PROBE_SOURCE = String.raw`
def __probe_run(inp):
    import builtins
    _type = type
    _repr = repr
    _len = len
    _id = id
    _compile = compile
    _exec = exec
    _eval = eval
    _BaseException = BaseException
    _name = type.__dict__["__name__"].__get__
    PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
    MAX = ${MAX_VALUE_CHARS}

    def plain(v, depth):
        t = _type(v)
        if t not in PLAIN:
            return False
        if depth > 100:
            return False
        if t is list or t is tuple or t is set or t is frozenset:
            for x in v:
                if not plain(x, depth + 1):
                    return False
        elif t is dict:
            for k, x in v.items():
                if not plain(k, depth + 1) or not plain(x, depth + 1):
                    return False
        return True

    code = inp["code"]
    probes = inp["probes"]
    g = {"__name__": "solution", "__builtins__": builtins}
    try:
        _exec(_compile(code, "<solution>", "exec"), g)
    except _BaseException as e:
        msg = ""
        try:
            msg = str(e)
        except _BaseException:
            pass
        return ["load_error", _name(_type(e)), msg[:500]]
    results = []
    for p in probes:
        try:
            v = _eval(_compile(p, "<test>", "eval"), g)
            if not plain(v, 0):
                results.append(["not_plain", _name(_type(v))[:100]])
                continue
            text = _repr(v)
            if _len(text) > MAX:
                results.append(["too_large", ""])
            else:
                results.append(["ok", text])
        except _BaseException as e:
            results.append(["raised", _name(_type(e))[:100]])
    return ["ok", results]

__probe_run(__pyc)
`;

/**
 * Rebuilds the probe values (strict literal parser: constants, containers, nan/inf, set()/frozenset())
 * and runs each rewritten assert. Input: `__checks` = [{source, modules, values: [text|null]}].
 * Answers one entry per test: "pass", "fail" (the assertion failed) or an error name.
 */
export const VERIFY_SOURCE = String.raw`
import ast, builtins

def __literal(text):
    def conv(n, depth):
        if depth > 200:
            raise ValueError("too deep")
        t = type(n)
        if t is ast.Constant and type(n.value) in (type(None), bool, int, float, complex, str, bytes):
            return n.value
        if t is ast.List:
            return [conv(e, depth + 1) for e in n.elts]
        if t is ast.Tuple:
            return tuple(conv(e, depth + 1) for e in n.elts)
        if t is ast.Set:
            return {conv(e, depth + 1) for e in n.elts}
        if t is ast.Dict:
            return {conv(k, depth + 1): conv(v, depth + 1) for k, v in zip(n.keys, n.values)}
        if t is ast.Name and n.id in ("nan", "inf"):
            return float(n.id)
        if t is ast.UnaryOp and type(n.op) in (ast.USub, ast.UAdd):
            v = conv(n.operand, depth + 1)
            if type(v) not in (int, float, complex):
                raise ValueError("bad literal")
            return -v if type(n.op) is ast.USub else v
        if t is ast.BinOp and type(n.op) in (ast.Add, ast.Sub):
            a = conv(n.left, depth + 1)
            b = conv(n.right, depth + 1)
            if type(a) not in (int, float) or type(b) is not complex:
                raise ValueError("bad literal")
            return a + b if type(n.op) is ast.Add else a - b
        if t is ast.Call and type(n.func) is ast.Name and n.func.id in ("set", "frozenset") and not n.keywords and len(n.args) <= 1:
            inner = conv(n.args[0], depth + 1) if n.args else ()
            return set(inner) if n.func.id == "set" else frozenset(inner)
        raise ValueError("not a literal")
    return conv(ast.parse(text, "<value>", "eval").body, 0)

def __verify(checks):
    out = []
    for c in checks:
        ns = {"__builtins__": builtins}
        try:
            for m in c["modules"]:
                ns[m] = __import__(m)
            for i, text in enumerate(c["values"]):
                ns["__probe_%d" % i] = __literal(text)
            exec(compile(c["source"], "<test>", "exec"), ns)
            out.append("pass")
        except AssertionError:
            out.append("fail")
        except BaseException as e:
            out.append(type(e).__name__)
    return out

__verify(__checks)
`;

interface Prepared {
  source?: string;
  probes?: string[];
  modules?: string[];
  error?: string;
}

const evaluation = (
  total: number,
  status: EvaluationStatus,
  message: string | null,
  extra: Partial<Pick<Evaluation, "passed" | "timeouts" | "memoryErrors" | "failures">> = {},
): Evaluation => ({ passed: 0, timeouts: 0, memoryErrors: 0, failures: [], ...extra, total, status, message });

/**
 * Lines compared with trailing whitespace removed; trailing blank lines do not count. Linear in
 * the text: `trimEnd` removes exactly what `/\s+$/` matches (WhiteSpace and LineTerminator), but
 * that regex retries from every position of a run of spaces that does not end the line, so a
 * line of 100,000 spaces and then `x` held an environment thread for seconds per line.
 */
export function normaliseOutput(text: string): string[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n").map((l) => l.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function runFailure(r: RunResult): string {
  const name = r.error?.name ?? "Error";
  if (name === "TimeoutError") return "timeout";
  if (name === "MemoryLimitError") return "memory limit";
  return name;
}

async function safeRun(sandbox: Sandbox, code: string, options: Parameters<Sandbox["run"]>[1]): Promise<RunResult> {
  try {
    return await sandbox.run(code, options);
  } catch (err) {
    return { ok: false, result: null, stdout: "", stderr: "", error: { name: "SandboxError", message: err instanceof Error ? err.message : String(err) }, elapsedMs: 0 };
  }
}

/** Run `code` against `spec`. Never throws: every failure is an Evaluation. */
export async function evaluatePython(sandbox: Sandbox | undefined, code: string, spec: TestSpec, options: EvaluateOptions): Promise<Evaluation> {
  const total = spec.tests.length;
  if (code.trim() === "") return evaluation(total, "no_code", "the reply contains no code");
  if (!sandbox) return evaluation(total, "sandbox_error", "no Python sandbox available (py-code needs the Node server)");
  if (total === 0) return evaluation(0, "ok", null);
  return spec.kind === "stdio" ? evaluateStdio(sandbox, code, spec.tests, options) : evaluateAsserts(sandbox, code, spec.tests, options);
}

async function evaluateStdio(sandbox: Sandbox, code: string, tests: StdioTest[], options: EvaluateOptions): Promise<Evaluation> {
  const total = tests.length;
  let passed = 0;
  let timeouts = 0;
  let memoryErrors = 0;
  const failures: TestFailure[] = [];
  const fail = (test: number, reason: string) => {
    if (failures.length < MAX_FAILURES) failures.push({ test, reason });
  };
  for (let i = 0; i < total; i++) {
    const t = tests[i]!;
    const r = await safeRun(sandbox, code, { stdin: t.input, timeoutMs: options.timeoutMs, memoryMb: options.memoryMb ?? DEFAULT_MEMORY_MB, maxOutputBytes: 1 << 20 });
    if (!r.ok) {
      const reason = runFailure(r);
      if (reason === "SyntaxError" && i === 0) {
        return evaluation(total, "compile_error", `the code does not compile: ${r.error?.message ?? ""}`, { failures: [{ test: 0, reason }] });
      }
      if (reason === "SandboxError") return evaluation(total, "sandbox_error", r.error?.message ?? "the sandbox failed", { passed, timeouts, memoryErrors, failures });
      if (reason === "timeout") timeouts++;
      if (reason === "memory limit") memoryErrors++;
      fail(i, reason);
      continue;
    }
    if (r.truncated) {
      fail(i, "output too large");
      continue;
    }
    const got = normaliseOutput(r.stdout);
    const want = normaliseOutput(t.output);
    if (got.length === want.length && got.every((line, k) => line === want[k])) passed++;
    else fail(i, "wrong output");
  }
  const message = passed === total ? null : `${total - passed} of ${total} tests failed`;
  return evaluation(total, "ok", message, { passed, timeouts, memoryErrors, failures });
}

/** Cut the tests' probes out, in a grading run (never where candidate code runs). */
async function prepare(sandbox: Sandbox, tests: string[]): Promise<{ prepared: Prepared[] } | { error: string }> {
  const prep = await safeRun(sandbox, PREPARE_SOURCE, { globals: { __tests: tests }, timeoutMs: PREPARE_TIMEOUT_MS, maxOutputBytes: 4 << 20, grading: true });
  const prepared = prep.ok && Array.isArray(prep.result) && prep.result.length === tests.length ? (prep.result as Prepared[]) : undefined;
  if (!prepared) return { error: `the tests could not be prepared: ${prep.error ? `${prep.error.name}: ${prep.error.message}` : "bad answer"}` };
  return { prepared };
}

async function evaluateAsserts(sandbox: Sandbox, code: string, tests: string[], options: EvaluateOptions): Promise<Evaluation> {
  const total = tests.length;
  const memoryMb = options.memoryMb ?? DEFAULT_MEMORY_MB;
  const prep = await prepare(sandbox, tests);
  if ("error" in prep) return evaluation(total, "sandbox_error", prep.error);
  const prepared = prep.prepared;

  let timeouts = 0;
  let memoryErrors = 0;
  const failures: TestFailure[] = [];
  const fail = (test: number, reason: string) => {
    if (failures.length < MAX_FAILURES) failures.push({ test, reason });
  };
  // Per test: the probe texts (null = this test already failed).
  const values: (string[] | null)[] = [];
  for (let i = 0; i < total; i++) {
    const p = prepared[i]!;
    if (typeof p.source !== "string" || !Array.isArray(p.probes)) {
      fail(i, p.error ?? "bad test");
      values.push(null);
      continue;
    }
    if (p.probes.length === 0) {
      values.push([]);
      continue;
    }
    const r = await safeRun(sandbox, PROBE_SOURCE, {
      globals: { __pyc: { code, probes: p.probes } },
      timeoutMs: options.timeoutMs,
      memoryMb,
      maxOutputBytes: MAX_VALUE_CHARS * p.probes.length + 64 * 1024,
    });
    const answer = r.ok && Array.isArray(r.result) ? (r.result as JsonValue[]) : undefined;
    if (answer?.[0] === "load_error") {
      const name = String(answer[1]);
      return evaluation(total, "compile_error", `the code failed to load: ${name}: ${String(answer[2] ?? "")}`, { failures: [{ test: i, reason: name }] });
    }
    if (!r.ok || !answer || answer[0] !== "ok" || !Array.isArray(answer[1])) {
      const reason = r.ok ? "the test run gave no answer" : runFailure(r);
      if (reason === "SandboxError") return evaluation(total, "sandbox_error", r.error?.message ?? "the sandbox failed", { timeouts, memoryErrors, failures });
      if (reason === "timeout") timeouts++;
      if (reason === "memory limit") memoryErrors++;
      fail(i, reason);
      values.push(null);
      continue;
    }
    const results = answer[1] as JsonValue[];
    const texts: string[] = [];
    let bad: string | undefined;
    for (let k = 0; k < p.probes.length; k++) {
      const entry = results[k];
      if (Array.isArray(entry) && entry[0] === "ok" && typeof entry[1] === "string" && entry[1].length <= MAX_VALUE_CHARS) texts.push(entry[1]);
      else {
        bad = Array.isArray(entry) && entry[0] === "raised" ? String(entry[1]) : Array.isArray(entry) && entry[0] === "not_plain" ? `returned a ${String(entry[1])}, not plain data` : "no value";
        break;
      }
    }
    if (bad !== undefined || results.length !== p.probes.length) {
      fail(i, bad ?? "no value");
      values.push(null);
    } else values.push(texts);
  }

  const checks = prepared.map((p, i) => ({ source: p.source ?? "", modules: p.modules ?? [], values: values[i] ?? [] }));
  const todo = checks.map((c, i) => ({ c, i })).filter(({ i }) => values[i] !== null);
  let passed = 0;
  if (todo.length > 0) {
    const v = await safeRun(sandbox, VERIFY_SOURCE, {
      globals: { __checks: todo.map(({ c }) => c) },
      timeoutMs: PREPARE_TIMEOUT_MS,
      memoryMb,
      maxOutputBytes: 1 << 20,
      grading: true,
    });
    const verdicts = v.ok && Array.isArray(v.result) && v.result.length === todo.length ? (v.result as JsonValue[]) : undefined;
    if (!verdicts) return evaluation(total, "sandbox_error", `the tests could not be checked: ${v.error ? `${v.error.name}: ${v.error.message}` : "bad answer"}`, { timeouts, memoryErrors, failures });
    todo.forEach(({ i }, k) => {
      if (verdicts[k] === "pass") passed++;
      else fail(i, verdicts[k] === "fail" ? "wrong answer" : String(verdicts[k]));
    });
  }
  failures.sort((a, b) => a.test - b.test);
  const message = passed === total ? null : `${total - passed} of ${total} tests failed`;
  return evaluation(total, "ok", message, { passed, timeouts, memoryErrors, failures: failures.slice(0, MAX_FAILURES) });
}
