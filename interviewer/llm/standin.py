"""A fast local OpenAI-compatible stand-in server for tests, load runs and fault injection.

It serves ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed as server-sent events, or whole) on a
loopback port, so the app's real OpenAI client path is exercised while the "model" costs nothing. Faults can be
switched on at run time: HTTP 500, a hang before or during the stream, a connection dropped mid-stream, or
malformed chunks. Run it alone with ``python -m interviewer.llm.standin --port 8011``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Fault = Literal["none", "fail", "hang", "drop", "malformed"]
MODEL_ID = "standin"

_TARGET = re.compile(r"It must probe:\s*(.+?)\.\s*\n", re.S)
_ANSWER = re.compile(r"<candidate_answer>\s*(.*?)\s*</candidate_answer>", re.S)


def default_reply(messages: list[dict[str, Any]]) -> str:
    """A follow-up the engine accepts on every bank question: a question about the candidate's own words.

    It names nothing of the level's target: any rubric wording, even the target's first few words, can be a
    leak the engine rejects (it then asks the authored follow-up instead, and a test expecting the model's
    follow-up fails on whichever question the round happened to draw).
    """
    last = str(messages[-1].get("content", "")) if messages else ""
    a = _ANSWER.search(last)
    # The candidate's own words (letters only, so no markup is echoed) keep it from repeating the question.
    said = " ".join(re.findall(r"[A-Za-z]{4,}", a.group(1) if a else last)[:4]) or "that"
    if _TARGET.search(last):
        return f"Walk me through this: given what you said about {said}, what would make it stop holding?"
    return f"Why does {said} hold?"


@dataclass
class Behaviour:
    """What the next requests get. Fields may be changed while the server runs."""

    token_delay: float = 0.0  # seconds between streamed chunks
    first_token_delay: float = 0.0  # seconds before the first chunk
    fault: Fault = "none"
    fault_count: int | None = None  # apply ``fault`` to this many requests, then go back to "none"
    hang_seconds: float = 30.0  # how long "hang" stalls (before the first chunk)
    drop_after: int = 2  # chunks sent before "drop" closes the connection
    reply: Callable[[list[dict[str, Any]]], str] = default_reply


@dataclass
class Stats:
    """Requests seen, for assertions and overhead measurement."""

    requests: int = 0
    faults: int = 0
    prompts: list[list[dict[str, Any]]] = field(default_factory=list)
    slots: list[int | None] = field(default_factory=list)  # each recorded prompt's ``id_slot`` (llama.cpp)
    first_token_s: list[float] = field(default_factory=list)  # server-side, request received -> first chunk
    disconnects: int = 0  # streams the client closed before their end (the server stopped generating)


class StandinServer:
    """A threaded HTTP server on 127.0.0.1; use as a context manager or call start/stop."""

    def __init__(self, port: int = 0, behaviour: Behaviour | None = None, keep_prompts: int = 200) -> None:
        self.behaviour = behaviour or Behaviour()
        self.stats = Stats()
        self._lock = threading.Lock()
        self._keep = keep_prompts
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StandinServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _take_fault(self) -> Fault:
        with self._lock:
            b = self.behaviour
            self.stats.requests += 1
            if b.fault == "none":
                return "none"
            fault = b.fault
            if b.fault_count is not None:
                b.fault_count -= 1
                if b.fault_count <= 0:
                    b.fault, b.fault_count = "none", None
            self.stats.faults += 1
            return fault

    def _record(self, messages: list[dict[str, Any]], slot: int | None = None) -> None:
        with self._lock:
            self.stats.prompts.append(messages)
            self.stats.slots.append(slot)
            del self.stats.prompts[: -self._keep]
            del self.stats.slots[: -self._keep]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"standin": self})


class _Handler(BaseHTTPRequestHandler):
    """One request to a :class:`StandinServer`; each server subclasses it with ``standin`` set to itself."""

    protocol_version = "HTTP/1.1"
    standin: StandinServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: load runs make thousands of requests

    def do_GET(self) -> None:
        if self.path.rstrip("/") in {"/v1/models", "/models"}:
            self._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        received = time.perf_counter()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        server = self.standin
        b = server.behaviour
        fault = server._take_fault()
        messages = list(body.get("messages") or [])
        slot = body.get("id_slot")
        server._record(messages, slot if isinstance(slot, int) else None)
        if fault == "fail":
            self._json(500, {"error": {"message": "stand-in server told to fail", "type": "server"}})
            return
        if fault == "hang":
            time.sleep(b.hang_seconds)
        text = b.reply(messages)
        if not body.get("stream"):
            time.sleep(b.first_token_delay)
            self._json(200, _completion(text, body.get("model", MODEL_ID)))
            return
        self._stream(text, body.get("model", MODEL_ID), b, fault, received)

    def _stream(self, text: str, model: str, b: Behaviour, fault: Fault, received: float) -> None:
        """Send ``text`` as server-sent events, a word at a time, with ``b``'s delays and ``fault``."""
        server = self.standin
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        # Chunked, as real servers stream: a connection closed before the last chunk is then an
        # error the client sees, not a normal end of the body.
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        pieces = re.findall(r"\S+\s*", text) or [""]
        try:
            if b.first_token_delay:
                time.sleep(b.first_token_delay)
            for i, piece in enumerate(pieces):
                if fault == "drop" and i >= b.drop_after:
                    self.connection.shutdown(socket.SHUT_RDWR)  # mid-stream, no [DONE]
                    return
                if i == 0:
                    with server._lock:
                        server.stats.first_token_s.append(time.perf_counter() - received)
                if fault == "malformed" and i >= 1:
                    self._write(b"data: {this is not json\n\n")
                else:
                    self._event(_chunk(piece, model, first=i == 0))
                self.wfile.flush()
                if b.token_delay and i + 1 < len(pieces):
                    time.sleep(b.token_delay)
            self._event(_chunk("", model, finish="stop"))
            self._write(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client stopped reading (the engine closes the stream after one question).
            with server._lock:
                server.stats.disconnects += 1

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _event(self, obj: dict[str, Any]) -> None:
        self._write(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def _write(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def _chunk(text: str, model: str, *, first: bool = False, finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"content": text} if finish is None else {}
    if first:
        delta["role"] = "assistant"
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": len(text.split()), "total_tokens": 0},
    }


def main() -> None:
    """Serve until interrupted (for manual load runs against ``interviewer serve --base-url``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--token-delay", type=float, default=0.0)
    ap.add_argument("--first-token-delay", type=float, default=0.0)
    args = ap.parse_args()
    srv = StandinServer(args.port, Behaviour(args.token_delay, args.first_token_delay))
    print(f"stand-in model server at {srv.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        srv._httpd.serve_forever()


if __name__ == "__main__":
    main()
