"""A cap on the size of request bodies: larger ones get 413 before any route sees them."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_response

__all__ = ["BodyLimit"]


class BodyLimit:
    """ASGI middleware that answers 413 to a body over ``max_bytes`` (declared or sent)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "body_too_large",
            f"the request body is over this server's limit of {self.max_bytes:,} bytes; send "
            "less per request (split the messages) or raise the limit with "
            "REMEM_SERVER_MAX_BODY_BYTES", headers={"Connection": "close"})
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await error_response(400, "bad_content_length",
                                     "the Content-Length header is not a number")(scope, receive, send)
                return
            if int(declared) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
        # read the whole body (it is small, by now) so a chunked upload is capped too
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that gives ``messages`` first, then the real one's (a disconnect)."""
    queue = list(messages)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay
