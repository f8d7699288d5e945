# What a child sends back becomes a RunResult here, in the zygote, as src/sandbox/report.ts and
# output.ts make one for the other backends (the same rules, ported): the guest's report is
# size-checked, parsed and checked field by field, output is capped at maxOutputBytes in UTF-8
# bytes with the truncation marker, and what the zygote knows (timed out, memory refused, trapped)
# wins over what the child says. A child may have been taken over by its guest, so nothing it
# sends is trusted: whatever it sends, what leaves the zygote is a RunResult of the right shape
# (the server checks it again, host-protocol.ts).

import json

TRUNCATION_MARKER = "\u2026[truncated]"
STATUSES = ("ok", "error", "too_large")


def timeout_error(limits):
    return {"name": "TimeoutError", "message": "execution exceeded the time limit of %d ms" % limits["timeoutMs"]}


def memory_error(limits):
    return {"name": "MemoryLimitError", "message": "execution exceeded the memory limit of %d MiB" % limits["memoryMb"]}


def result_too_large(limits):
    return {"name": "OutputLimitError", "message": "the result is larger than the output limit of %d bytes" % limits["maxOutputBytes"]}


def truncate_utf8(s, max_bytes):
    """The longest prefix of s that is at most max_bytes bytes of UTF-8 (never splits a character)."""
    if max_bytes <= 0:
        return ""
    if len(s) * 4 <= max_bytes:
        return s
    b = s.encode("utf-8", "surrogatepass")
    if len(b) <= max_bytes:
        return s
    return b[:max_bytes].decode("utf-8", "ignore")


def utf8_length(s):
    return len(s.encode("utf-8", "surrogatepass"))


def cap_output(stdout, stderr, max_bytes, truncated_in):
    cut_out = truncated_in == "stdout"
    cut_err = truncated_in == "stderr"
    out_bytes = utf8_length(stdout)
    if out_bytes > max_bytes:
        stdout = truncate_utf8(stdout, max_bytes)
        cut_out = True
    room = max(0, max_bytes - min(out_bytes, max_bytes))
    if utf8_length(stderr) > room:
        stderr = truncate_utf8(stderr, room)
        cut_err = True
    if cut_out:
        stdout += TRUNCATION_MARKER
    if cut_err:
        stderr += TRUNCATION_MARKER
    return stdout, stderr, cut_out or cut_err


def _no_constants(name):
    raise ValueError("not JSON: " + name)


def parse_report(raw, limits, statuses=STATUSES):
    """
    A guest's report {status, result, error, stdout?, stderr?, truncated?} (the Python guest's,
    guest.py; QuickJS's prelude, guest.ts, adds its output), checked field by field as report.ts
    parseReport does, or None when it is not one. Lone surrogates pass, as both guests encode them.
    """
    if len(raw) > 16 * limits["maxOutputBytes"] + 64 * 1024:
        return None
    try:
        r = json.loads(raw.decode("utf-8", "surrogatepass"), parse_constant=_no_constants)
    except (ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(r, dict) or r.get("status") not in statuses:
        return None
    e = r.get("error")
    error = None
    if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("message"), str):
        error = {"name": e["name"], "message": e["message"]}
        if isinstance(e.get("stack"), str):
            error["stack"] = e["stack"]
    return {
        "status": r["status"],
        "result": r.get("result"),
        "error": error,
        "stdout": r["stdout"] if isinstance(r.get("stdout"), str) else "",
        "stderr": r["stderr"] if isinstance(r.get("stderr"), str) else "",
        "truncated": r["truncated"] if r.get("truncated") in ("stdout", "stderr") else None,
    }


def to_run_result(report, stdout, stderr, truncated_in, limits, elapsed_ms, host_error=None):
    """report: bytes from the guest (or None); stdout/stderr: text; host_error: what the zygote knows."""
    out, err, truncated = cap_output(stdout, stderr, limits["maxOutputBytes"], truncated_in)
    base = {"stdout": out, "stderr": err, "elapsedMs": max(0.0, float(elapsed_ms))}
    if truncated:
        base["truncated"] = True

    def fail(error):
        return dict(base, ok=False, result=None, error=error)

    if host_error is not None:
        return fail(host_error)
    parsed = parse_report(report, limits) if report is not None else None
    if parsed is None:
        return fail({"name": "SandboxError", "message": "the sandbox returned no usable report"})
    status = parsed["status"]
    if status == "ok":
        try:
            size = utf8_length(json.dumps(parsed["result"], ensure_ascii=False, separators=(",", ":"), allow_nan=False))
        except (ValueError, RecursionError):
            return fail({"name": "SandboxError", "message": "the sandbox returned no usable report"})
        if size > limits["maxOutputBytes"]:
            return fail(result_too_large(limits))
        return dict(base, ok=True, result=parsed["result"])
    if status == "too_large":
        return fail(result_too_large(limits))
    error = parsed["error"] or {"name": "Error", "message": "unknown error"}
    if error["name"] == "MemoryError":
        # The interpreter's memory stopped growing at the run's limit (or an allocation was larger
        # than the whole memory could be): the run's memory limit, by its host-side name.
        return fail(memory_error(limits))
    return fail(error)
