"""What the server tests share: a real uvicorn server on a free loopback port, and a
stand-in for an OpenAI-compatible model server, both over real HTTP."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from remem import Config, Memory
from remem.config import ServerConfig
from remem.serve import create_app

HASH = Config(embedder="hash")


def open_memory(path: str | Path, config: Config = HASH) -> Memory:
    """A Memory on ``path`` with the hashing embedder (fast; no model to load)."""
    return Memory(path, config=config)


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning", ws="none",
                                           lifespan="on", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def service(path: str | Path, config: Config = HASH, **server: Any) -> Iterator[tuple[Memory, httpx.Client]]:
    """A Memory on ``path`` served over HTTP, and a client for it (no key set)."""
    memory = open_memory(path, config)
    try:
        app = create_app(memory, config=ServerConfig(**server))
        with running(app) as url, httpx.Client(base_url=url, timeout=10) as client:
            yield memory, client
    finally:
        memory.close()


def wait_until(check: Any, timeout: float = 5.0) -> Any:
    """Poll ``check()`` until it returns something truthy; that value, or fail at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still {value!r} after {timeout}s")
        time.sleep(0.02)


class EventReader:
    """Reads the server-sent events of a streamed response, one at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.iter_lines()
        first = next(self._lines)
        assert first.startswith(":"), f"the stream did not open with a comment: {first!r}"

    def next(self) -> tuple[str, dict[str, Any]]:
        """The next event as ``(event, data)``."""
        kind, data = "", ""
        for line in self._lines:
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
            elif line == "" and kind:
                return kind, json.loads(data)
        raise AssertionError("the stream ended")


class StandInOpenAI:
    """A stand-in for an OpenAI-compatible model server, for tests: it answers
    ``POST /v1/chat/completions`` (streamed or not) with a fixed ``reply`` over real HTTP,
    and keeps every request it was sent (headers and JSON body) in ``requests``.

    ``fail_status`` makes it answer that HTTP status with an OpenAI-style error instead.
    """

    def __init__(self, reply: str = "You moved to pnpm.", *, fail_status: int | None = None) -> None:
        self.reply = reply
        self.fail_status = fail_status
        self.requests: list[dict[str, Any]] = []
        self.sent: list[bytes] = []  # the bytes of each streamed answer, as written
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chunks(self) -> list[dict[str, Any]]:
        words = self.reply.split(" ")
        parts = [w if i == 0 else " " + w for i, w in enumerate(words)]
        return [{"id": "chatcmpl-standin", "object": "chat.completion.chunk", "model": "stand-in",
                 "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                for p in parts]

    def __enter__(self) -> StandInOpenAI:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                if self.path != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                elif outer.fail_status is not None:
                    self._json(outer.fail_status, {"error": {"message": "model 'nope' does not exist",
                                                             "type": "invalid_request_error"}})
                elif body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    sent = b""
                    for chunk in outer.chunks():
                        line = f"data: {json.dumps(chunk)}\n\n".encode()
                        self.wfile.write(line)
                        self.wfile.flush()
                        sent += line
                    self.wfile.write(b"data: [DONE]\n\n")
                    outer.sent.append(sent + b"data: [DONE]\n\n")
                else:
                    self._json(200, {
                        "id": "chatcmpl-standin", "object": "chat.completion", "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": outer.reply}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    })

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
