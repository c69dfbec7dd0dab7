"""The event stream: ``ingest`` when an add's episodes are stored, ``ready`` when its
background work is done, ``reminder`` when a reminder comes due, sent as server-sent
events to the streams of the same org."""


import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..memory import Memory
from ..model import AddResult, MemoryItem
from .auth import Authenticator, Principal
from .schemas import AUTH_ERRORS

__all__ = ["EventHub", "event_routes"]

log = logging.getLogger(__name__)

_QUEUE_SIZE = 1000
_UNFINISHED = ("queued", "running")
_MAX_WAITING = 10_000  # adds whose readiness is watched; the oldest are dropped beyond it


@dataclass(eq=False)  # kept in a set, by identity
class _Subscriber:
    org_id: str | None  # None: every org (single-user mode)
    user_id: str | None
    queue: asyncio.Queue[dict[str, Any] | None] = field(
        default_factory=lambda: asyncio.Queue(_QUEUE_SIZE))
    overflowed: bool = False

    def wants(self, event: dict[str, Any]) -> bool:
        return (self.org_id is None or event["org_id"] == self.org_id) and (
            self.user_id is None or event["user_id"] == self.user_id)


@dataclass
class _Waiting:
    event: dict[str, Any]
    job_ids: list[str]


class EventHub:
    """Hands events to the open streams that may see them; watches jobs for ``ready``.

    :meth:`ingested` may be called from any thread; the rest runs on the server's loop,
    between :meth:`start` and :meth:`stop`.
    """

    def __init__(self, memory: Memory, *, poll_s: float = 0.1) -> None:
        self.memory = memory
        self.poll_s = poll_s
        self._subscribers: set[_Subscriber] = set()
        self._waiting: list[_Waiting] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._lock = threading.Lock()
        self._next_id = 0

    async def start(self) -> None:
        """Start watching jobs on the running loop."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.memory.reminder_listeners.append(self.reminded)
        self._watcher = asyncio.create_task(self._watch(), name="remem-event-watcher")

    async def stop(self) -> None:
        """Stop watching and end every open stream."""
        if self.reminded in self.memory.reminder_listeners:
            self.memory.reminder_listeners.remove(self.reminded)
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for sub in list(self._subscribers):
            with contextlib.suppress(asyncio.QueueFull):
                sub.queue.put_nowait(None)
        self._loop = None

    def ingested(self, result: AddResult, *, org_id: str | None, user_id: str | None,
                 session_id: str | None) -> None:
        """Announce an add's stored episodes; ``ready`` follows when its jobs are done."""
        loop = self._loop
        if loop is None:
            return
        event = {"org_id": org_id or "default", "user_id": user_id, "session_id": session_id,
                 "episode_ids": list(result.episode_ids), "job_ids": list(result.job_ids)}
        loop.call_soon_threadsafe(self._on_ingest, event)

    def reminded(self, item: MemoryItem) -> None:
        """Announce a reminder that came due (called from the worker's thread)."""
        loop = self._loop
        if loop is None:
            return
        info = item.metadata.get("reminder", {})
        event = {"org_id": item.org_id, "user_id": item.user_id, "memory_id": item.id,
                 "text": item.text, "due": info.get("due_date")}
        loop.call_soon_threadsafe(self._publish, "reminder", event)

    def _on_ingest(self, event: dict[str, Any]) -> None:
        if not any(sub.wants(event) for sub in self._subscribers):
            return  # nobody to tell, now or when its jobs finish
        self._publish("ingest", event)
        if event["job_ids"]:
            self._waiting = [*self._waiting[-(_MAX_WAITING - 1):], _Waiting(event, event["job_ids"])]
            self._wake.set()

    def _publish(self, kind: str, event: dict[str, Any]) -> None:
        with self._lock:
            self._next_id += 1
            message = {"id": self._next_id, "event": kind, "data": event}
        for sub in list(self._subscribers):
            if not sub.wants(event):
                continue
            try:
                sub.queue.put_nowait(message)
            except asyncio.QueueFull:
                sub.overflowed = True

    async def _watch(self) -> None:
        while True:
            if not self._waiting:
                self._wake.clear()
                await self._wake.wait()
            await asyncio.sleep(self.poll_s)
            ids = sorted({j for w in self._waiting for j in w.job_ids})
            try:
                states = await run_in_threadpool(self.memory.job_states, ids)
            except Exception:  # the store may be busy or closing; try again on the next tick
                log.warning("cannot read job states", exc_info=True)
                continue
            still: list[_Waiting] = []
            for waiting in self._waiting:
                mine = {states.get(j, "done") for j in waiting.job_ids}  # a purged job is over
                if mine & set(_UNFINISHED):
                    still.append(waiting)
                    continue
                state = next((s for s in ("failed", "cancelled") if s in mine), "done")
                self._publish("ready", {**waiting.event, "state": state})
            self._waiting = still

    @contextlib.asynccontextmanager
    async def subscribe(self, org_id: str | None, user_id: str | None) -> AsyncIterator[_Subscriber]:
        """A subscription to the events of ``org_id`` (and ``user_id``), while in the block."""
        sub = _Subscriber(org_id, user_id)
        self._subscribers.add(sub)
        try:
            yield sub
        finally:
            self._subscribers.discard(sub)


def _sse(message: dict[str, Any]) -> str:
    data = json.dumps(message["data"], ensure_ascii=False)
    return f"id: {message['id']}\nevent: {message['event']}\ndata: {data}\n\n"


def event_routes(hub: EventHub, auth: Authenticator, *, keepalive_s: float = 15.0) -> APIRouter:
    """``GET /v1/events/stream``."""
    router = APIRouter(prefix="/v1", tags=["events"])
    read: Callable[..., Principal] = auth.require("read")

    @router.get(
        "/events/stream",
        response_class=StreamingResponse,
        responses={**AUTH_ERRORS, 200: {"content": {"text/event-stream": {}},
                         "description": "server-sent events: `ingest` (episodes stored) and "
                         "`ready` (their background work done), JSON in `data`"}},
    )
    async def stream(request: Request, who: Annotated[Principal, Depends(read)],
                     org_id: Annotated[str | None, Query()] = None,
                     user_id: Annotated[str | None, Query()] = None) -> StreamingResponse:
        """Follow what is added to the org (and user) the key may see, as it happens."""
        org, user = who.confine(org_id, user_id)

        async def events() -> AsyncIterator[str]:
            async with hub.subscribe(org, user) as sub:
                yield ": stream open\n\n"
                idle = 0.0
                while True:
                    try:
                        message = await asyncio.wait_for(sub.queue.get(), timeout=1.0)
                    except asyncio.TimeoutError:
                        if await request.is_disconnected():
                            return
                        idle += 1.0
                        if idle >= keepalive_s:
                            idle = 0.0
                            yield ": keep-alive\n\n"
                        continue
                    if message is None:  # the server is stopping
                        return
                    idle = 0.0
                    yield _sse(message)
                    if sub.overflowed:
                        yield "event: overflow\ndata: {\"message\": \"this stream fell behind and "\
                              "missed events; reconnect\"}\n\n"
                        return

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return router
