"""A stdlib OpenAI-compatible server for the trainer tests: ``POST /v1/chat/completions`` answers
with what a scripted policy says for the conversation it is sent (no model, no network), and
``GET /v1/models`` lists one model. Every request is kept in ``requests`` for the tests to check
(the tools a rollout offered, the messages it sent)."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

Policy = Callable[[List[Dict[str, Any]], Optional[List[Dict[str, Any]]]], Dict[str, Any]]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def solving_policy(messages: List[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    """Plays the shipped environments the tests use: reverse-text (right answer), math-tools
    "Compute X." problems (one calculator call, then the boxed result), anything else a fixed guess."""
    last = messages[-1]
    first_user = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    # The calculator, under whatever prefix the harness gives tool servers' tools (v1: "envworker_").
    calculator = next((n for n in ((t.get("function") or t).get("name", "") for t in tools or []) if n == "calculator" or n.endswith("_calculator")), None)
    if calculator:
        if last.get("role") == "tool":
            return {"content": f"The result is \\boxed{{{_text(last.get('content')).strip()}}}."}
        m = re.fullmatch(r"Compute (.+)\.", first_user.strip())
        if m:
            args = json.dumps({"expression": m.group(1)})
            return {"content": None, "tool_calls": [{"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": {"name": calculator, "arguments": args}}]}
        return {"content": "\\boxed{0}"}
    system = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
    if "reverse" in system.lower():
        return {"content": f"<reversed_text>{first_user[::-1]}</reversed_text>"}
    return {"content": "<guess>crane</guess>"}


class MockOpenAI:
    """``with MockOpenAI() as api: api.url`` is a base URL such as ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, policy: Policy = solving_policy, model: str = "mock-model") -> None:
        self.policy = policy
        self.model = model
        self.requests: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": outer.model, "object": "model", "created": 0, "owned_by": "mock"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with outer._lock:
                    outer.requests.append(body)
                reply = outer.policy(body.get("messages") or [], body.get("tools"))
                message = {"role": "assistant", "content": reply.get("content")}
                if reply.get("tool_calls"):
                    message["tool_calls"] = reply["tool_calls"]
                n = max(1, len(json.dumps(reply)) // 4)
                head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": body.get("model") or outer.model}
                finish = "tool_calls" if reply.get("tool_calls") else "stop"
                usage = {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n}
                if body.get("stream"):
                    # Server-sent chunks as OpenAI streams them (verifiers 0.4's interception asks for
                    # a stream): the message in one delta, the finish reason, usage, then [DONE].
                    delta: Dict[str, Any] = {"role": "assistant", "content": message["content"]}
                    if reply.get("tool_calls"):
                        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(reply["tool_calls"])]
                    chunks = [
                        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}]},
                        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish, "logprobs": None}]},
                    ]
                    if (body.get("stream_options") or {}).get("include_usage"):
                        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self._send(200, {
                    **head,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                    "usage": usage,
                })

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "MockOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
