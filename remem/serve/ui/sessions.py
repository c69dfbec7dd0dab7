"""Sessions: the injection log per session, turn by turn: what the agent asked, what it
was given (each memory, in order) and what of it it used."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...errors import NotFoundError
from ...model import Injection, MemoryItem
from ..auth import Principal
from .base import Console, ScopeFilter

__all__ = ["session_routes"]

_RECENT = 500


def session_routes(console: Console) -> APIRouter:
    """``/ui/sessions`` and ``/ui/sessions/{id}``."""
    router = APIRouter(prefix="/ui/sessions")
    memory = console.memory

    def listing(request: Request, who: Principal, where: ScopeFilter) -> Response:
        sessions: dict[str, dict[str, Any]] = {}
        for entry in memory.injections(limit=_RECENT, **{**where.many(), "session_id": None}):
            key = entry.session_id or ""
            one = sessions.setdefault(key, {"id": entry.session_id, "last": entry.at, "count": 0,
                                            "doors": set(), "given": 0, "used": 0, "user": entry.user_id,
                                            "project": entry.project})
            one["count"] += 1
            one["doors"].add(entry.door)
            one["given"] += len(entry.items)
            one["used"] += sum(i.used for i in entry.items)
        return console.render(request, "sessions.html", who=who, sessions=list(sessions.values()))

    @router.get("")
    async def sessions(request: Request) -> Response:
        return await console.page(request, lambda who, where: listing(request, who, where))

    def detail(request: Request, session_id: str, who: Principal, where: ScopeFilter) -> Response:
        scope = {**where.many(), "session_id": session_id}
        log = list(reversed(memory.injections(limit=_RECENT, **scope)))
        turns = list(reversed(memory.list(include_episodes=True, kinds=["episode", "event"],
                                          limit=_RECENT, **scope)))
        texts: dict[str, MemoryItem | None] = {}
        for entry in log:
            for item in entry.items:
                if item.memory_id not in texts:
                    try:
                        texts[item.memory_id] = memory.get(item.memory_id, org_id=entry.org_id,
                                                           user_id=where.user)
                    except NotFoundError:
                        texts[item.memory_id] = None
        timeline: list[tuple[datetime, str, Injection | MemoryItem]] = [
            *((e.at, "injection", e) for e in log),
            *(((m.event_time or m.created_at), "turn", m) for m in turns)]
        timeline.sort(key=lambda row: (row[0], row[1] == "turn"))
        return console.render(request, "session.html", who=who, session_id=session_id,
                              timeline=timeline, texts=texts)

    @router.get("/{session_id}")
    async def session(request: Request, session_id: str) -> Response:
        return await console.page(request, lambda who, where: detail(request, session_id, who, where))

    return router
