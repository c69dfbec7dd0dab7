"""The memory proxy: an OpenAI-compatible ``POST /v1/chat/completions`` that adds what is
remembered about the user to the system message, forwards the request to the upstream
model, passes its answer back unchanged and remembers the exchange."""


import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import httpx
from fastapi import APIRouter, Depends, Header
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from .._inputs import parse_scope
from ..config import ServerConfig
from ..memory import Memory
from ..model import Context
from .auth import Authenticator, Principal
from .errors import ApiError
from .events import EventHub
from .schemas import AUTH_ERRORS, error_responses

__all__ = ["ChatMessage", "ChatProxy", "ChatRequest", "plain", "proxy_routes", "with_memory"]

log = logging.getLogger(__name__)

_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=10.0)
_MEMORY_HEADER = "X-Remem-Memories"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_QUERY_CHARS = 4000  # the end of a long message says best what it asks


class ChatMessage(BaseModel):
    """One message of an OpenAI chat request; fields other than these pass through."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat-completions request; fields other than these pass through."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    user: str | None = Field(None, description="whose memory to use, if X-Remem-User is not sent")


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text").strip()
    return ""


def plain(text: str) -> str:
    """``text`` without control characters (pasted terminal output), which remem refuses."""
    return _CONTROL.sub(" ", text)


def with_memory(messages: list[dict[str, Any]], block: str) -> list[dict[str, Any]]:
    """``messages`` with ``block`` added to the system message (a new one first if none)."""
    if not block:
        return messages
    first = messages[0]
    if first.get("role") in ("system", "developer"):
        content = first.get("content")
        if isinstance(content, list):
            merged: Any = [*content, {"type": "text", "text": block}]
        else:
            merged = f"{content}\n\n{block}" if content else block
        return [{**first, "content": merged}, *messages[1:]]
    return [{"role": "system", "content": block}, *messages]


@dataclass
class _Exchange:
    """What to remember of one proxied request once its answer is complete."""

    org_id: str | None
    user_id: str
    project: str | None
    session_id: str | None
    model: str
    question: str | None
    answer: str = ""
    complete: bool = False


class _AnswerReader:
    """Collects the assistant's text from the bytes of an answer, streamed or not."""

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self._buffer = b""
        self._parts: list[str] = []

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        if not self.streamed:
            return
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        try:
            event = json.loads(payload)
            for choice in event.get("choices") or []:
                if choice.get("index", 0) == 0:
                    self._parts.append((choice.get("delta") or {}).get("content") or "")
        except (ValueError, AttributeError, TypeError):
            pass  # not a chunk we understand; it is passed on all the same

    def text(self) -> str:
        if self.streamed:
            self._line(self._buffer.strip())
            self._buffer = b""
            return "".join(self._parts)
        try:
            message = json.loads(self._buffer)["choices"][0]["message"]
            return message.get("content") or ""
        except (ValueError, LookupError, TypeError, AttributeError):
            return ""


class ChatProxy:
    """Forwards chat requests to the upstream model with the user's memory added."""

    def __init__(self, memory: Memory, hub: EventHub, config: ServerConfig, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.memory = memory
        self.hub = hub
        self.config = config
        self.base_url = config.upstream_base_url.rstrip("/") if config.upstream_base_url else None
        #: answers in this process instead of over the network (a local model), when given
        self.transport = transport
        if transport is not None and self.base_url is None:
            self.base_url = "http://local-model/v1"
        self._client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        """Open the connection pool to the upstream."""
        self._client = httpx.AsyncClient(timeout=_TIMEOUT, transport=self.transport)

    async def stop(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def recall(self, query: str, *, org_id: str | None, user_id: str, project: str | None,
               session_id: str | None) -> Context:
        """The memory block for ``query`` within the token budget."""
        query = plain(query)[-_QUERY_CHARS:]
        return self.memory.context(org_id=org_id, user_id=user_id, project=project,
                                   session_id=session_id, query=query if query.strip() else None,
                                   budget_tokens=self.config.context_budget_tokens)

    def log(self, ctx: Context, query: str, exchange: _Exchange) -> None:
        """Record in the injection log that the upstream model was given ``ctx``."""
        try:
            self.memory.log_context(ctx, door="proxy", query=plain(query)[-_QUERY_CHARS:],
                                    org_id=exchange.org_id, user_id=exchange.user_id,
                                    project=exchange.project, session_id=exchange.session_id)
        except Exception:  # the answer is on its way all the same
            log.exception("could not record the memories given to user %r's model",
                          exchange.user_id)

    def record(self, exchange: _Exchange) -> None:
        """Remember the user's message and the answer as two new turns."""
        if not exchange.complete or not exchange.question or not exchange.question.strip():
            return
        turns = [{"role": "user", "content": plain(exchange.question)}]
        if exchange.answer.strip():
            turns.append({"role": "assistant", "content": plain(exchange.answer)})
        try:
            result = self.memory.add(turns, org_id=exchange.org_id, user_id=exchange.user_id,
                                     project=exchange.project, session_id=exchange.session_id,
                                     metadata={"via": "chat_proxy", "model": exchange.model},
                                     door="proxy")
        except Exception:  # the answer is already on its way; say why it is not remembered
            log.exception("could not remember a proxied exchange of user %r", exchange.user_id)
            return
        self.hub.ingested(result, org_id=exchange.org_id, user_id=exchange.user_id,
                          session_id=exchange.session_id)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.config.upstream_api_key:
            headers["Authorization"] = f"Bearer {self.config.upstream_api_key}"
        return headers

    def _failed(self, status: int, body: bytes) -> ApiError:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict) and error.get("message"):
            detail = str(error["message"])
        elif isinstance(error, str):
            detail = error
        else:
            detail = body.decode("utf-8", "replace").strip()
        detail = " ".join(detail.split())[:500] or "(no message)"
        if self.config.upstream_api_key:
            detail = detail.replace(self.config.upstream_api_key, "***")
        return ApiError(502, "upstream_error",
                        f"the upstream model at {self.base_url} answered HTTP {status}: {detail}. "
                        "Check the model name, the upstream URL (--upstream) and its key "
                        "(REMEM_SERVER_UPSTREAM_API_KEY)", upstream_status=status)

    def _unreachable(self, exc: httpx.HTTPError) -> ApiError:
        what = "did not answer in time" if isinstance(exc, httpx.TimeoutException) else \
            f"could not be reached ({type(exc).__name__})"
        return ApiError(502, "upstream_unreachable",
                        f"the upstream model at {self.base_url} {what}; check that it runs and "
                        "that --upstream (REMEM_SERVER_UPSTREAM_BASE_URL) points at it")

    async def complete(self, body: ChatRequest, exchange: _Exchange, block: str,
                       remembered: int) -> Response:
        """Forward ``body`` with ``block`` added; the upstream's answer, streamed or not."""
        if self.base_url is None or self._client is None:
            raise ApiError(503, "upstream_not_configured",
                           "this server has no upstream model to forward chats to; start it with "
                           "`remem serve --upstream URL` (e.g. http://localhost:11434/v1) or set "
                           "REMEM_SERVER_UPSTREAM_BASE_URL")
        payload = body.model_dump(mode="json", exclude_unset=True)
        payload["messages"] = with_memory(payload["messages"], block)
        request = self._client.build_request("POST", f"{self.base_url}/chat/completions",
                                             json=payload, headers=self._headers())
        try:
            upstream = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        if upstream.status_code >= 400:
            try:
                detail = await upstream.aread()
            except httpx.HTTPError:
                detail = b""
            finally:
                await upstream.aclose()
            raise self._failed(upstream.status_code, detail)
        media_type = upstream.headers.get("content-type", "application/json")
        reader = _AnswerReader(streamed=media_type.startswith("text/event-stream"))
        headers = {_MEMORY_HEADER: str(remembered)}

        async def remember() -> None:
            exchange.answer = reader.text()
            await run_in_threadpool(self.record, exchange)

        if not body.stream:
            try:
                content = await upstream.aread()
            except httpx.HTTPError as exc:
                raise self._unreachable(exc) from None
            finally:
                await upstream.aclose()
            reader.feed(content)
            exchange.complete = True
            return Response(content, status_code=upstream.status_code, media_type=media_type,
                            headers=headers, background=BackgroundTask(remember))

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_bytes():
                    reader.feed(chunk)
                    yield chunk
                exchange.complete = True
            except httpx.HTTPError as exc:
                log.warning("the upstream stream broke: %s", type(exc).__name__)
                error = {"error": {"code": "upstream_error", "message": "the upstream model's "
                                   f"stream broke off ({type(exc).__name__}); try again"}}
                yield f"data: {json.dumps(error)}\n\n".encode()
            finally:
                await upstream.aclose()

        return StreamingResponse(relay(), status_code=upstream.status_code, media_type=media_type,
                                 headers={**headers, "Cache-Control": "no-cache"},
                                 background=BackgroundTask(remember))


def proxy_routes(proxy: ChatProxy, auth: Authenticator) -> APIRouter:
    """``POST /v1/chat/completions``."""
    router = APIRouter(prefix="/v1", tags=["proxy"])
    read_write: Callable[..., Principal] = auth.require("read", "write")

    @router.post(
        "/chat/completions",
        responses={**AUTH_ERRORS, **error_responses(
                       (400, "no user to remember for, or the body is not valid JSON"),
                       (502, "the upstream model failed or could not be reached"),
                       (503, "no upstream model is configured, or the store is closed")),
                   200: {"content": {"application/json": {}, "text/event-stream": {}},
                         "description": "the upstream model's answer, unchanged"}},
    )
    async def chat(
        body: ChatRequest,
        who: Annotated[Principal, Depends(read_write)],
        x_remem_user: Annotated[str | None, Header(description="whose memory to use")] = None,
        x_remem_session: Annotated[str | None, Header()] = None,
        x_remem_project: Annotated[str | None, Header()] = None,
        x_remem_org: Annotated[str | None, Header()] = None,
    ) -> Response:
        """OpenAI-compatible chat completions, with the user's memory added to the system
        message and the exchange remembered. The answer's header ``X-Remem-Memories`` says
        how many memories were given to the model."""
        org, user = who.confine(x_remem_org, x_remem_user or body.user)
        if user is None:
            raise ApiError(400, "missing_user",
                           "say whose memory to use: send the header `X-Remem-User: ID` or the "
                           "request's `user` field")
        parse_scope(org_id=org, user_id=user, project=x_remem_project, session_id=x_remem_session)
        last = body.messages[-1]
        users = [m for m in body.messages if m.role == "user"]
        query = _text(users[-1].content) if users else ""
        ctx: Context | None = None
        if query.strip():
            ctx = await run_in_threadpool(
                proxy.recall, query, org_id=org, user_id=user, project=x_remem_project,
                session_id=x_remem_session)
        exchange = _Exchange(org_id=org, user_id=user, project=x_remem_project,
                             session_id=x_remem_session, model=body.model,
                             question=_text(last.content) if last.role == "user" else None)
        response = await proxy.complete(body, exchange, ctx.text if ctx else "",
                                        len(ctx.memories) if ctx else 0)
        if ctx is not None and ctx.memories:  # the upstream took the request: it has the block
            await run_in_threadpool(proxy.log, ctx, query, exchange)
        return response

    return router
