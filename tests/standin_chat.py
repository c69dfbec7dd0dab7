"""A stand-in for a remote chat model: the OpenAI chat-completions protocol over real
HTTP on loopback, answering from a test's script and recording what it was sent."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a completion whose message is ``content``, or a raw ``body``."""

    content: str | None = None
    status: int = 200
    body: str | None = None
    delay_s: float = 0.0


def answer(obj: Any) -> Reply:
    """A completion whose message is ``obj`` as JSON."""
    return Reply(content=json.dumps(obj, ensure_ascii=False))


class StandInChatServer:
    """A stand-in for a remote chat model: OpenAI chat completions over HTTP on loopback.

    Answers requests in order from ``replies``; records each request's headers and JSON
    body in ``requests``. With ``reject_response_format`` it answers 400 to any request
    that carries ``response_format``, as some servers do, without using up a reply.
    """

    def __init__(self, replies: list[Reply], *, reject_response_format: bool = False) -> None:
        self.replies = list(replies)
        self.reject_response_format = reject_response_format
        self.requests: list[dict[str, Any]] = []
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "body": body})
                reply = server.next_reply(self.path, body)
                if reply.delay_s:
                    server.stop.wait(reply.delay_s)
                payload = (reply.body if reply.body is not None else json.dumps({
                    "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.content}}],
                })).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up waiting (the timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def next_reply(self, path: str, body: dict[str, Any]) -> Reply:
        if path != "/v1/chat/completions":
            return Reply(status=404, body='{"error": "not found"}')
        if self.reject_response_format and "response_format" in body:
            return Reply(status=400, body='{"error": {"message": "Unrecognized request argument '
                                          'supplied: response_format"}}')
        if not self.replies:
            return Reply(status=500, body='{"error": "the test script has no more replies"}')
        return self.replies.pop(0)

    def messages(self, call: int) -> list[dict[str, str]]:
        """The messages of the ``call``-th request (0-based)."""
        return self.requests[call]["body"]["messages"]

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
