"""The memories table and a memory's page, with its actions: edit (a new version), pin,
forget, restore, purge (after a confirmation page) and feedback."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...errors import NotFoundError, ValidationError
from ...model import KINDS, HistoryEntry, MemoryItem
from ..auth import Principal
from .base import Console, ScopeFilter
from .render import memory_url, redirect, word_diff

__all__ = ["memory_routes", "own_scope"]

STATUSES = ("active", "superseded", "archived", "forgotten", "held")
ALL_KINDS = (*KINDS, "episode")
_PAGE = 50


def own_scope(who: Principal, item: MemoryItem) -> dict[str, Any]:
    """The exact scope to change ``item`` in, confined to the key."""
    org, user = who.confine(item.org_id, item.user_id)
    return {"org_id": org, "user_id": user, "agent_id": item.agent_id, "project": item.project}


def memory_routes(console: Console) -> APIRouter:
    """``/ui/memories`` and ``/ui/memories/{id}`` with its forms."""
    router = APIRouter(prefix="/ui/memories")
    memory = console.memory

    def table(request: Request, who: Principal, where: ScopeFilter) -> Response:
        q = (request.query_params.get("q") or "").strip()
        kind = request.query_params.get("kind") or None
        status = request.query_params.get("status") or None
        cursor = request.query_params.get("cursor") or None
        if kind is not None and kind not in ALL_KINDS:
            raise ValidationError("kind", f"{kind!r} is not a kind; use one of {', '.join(ALL_KINDS)}")
        if status is not None and status not in (*STATUSES, "all"):
            raise ValidationError("status", f"{status!r}: use one of {', '.join(STATUSES)} or all")
        purged = request.query_params.get("purged") or ""
        extra: dict[str, Any] = {k: (request.query_params.get(k) or "").strip() or None
                 for k in ("maturity", "subject", "since", "until")}
        kinds = [kind] if kind else None
        hits: list[Any] | None = None
        rows: list[MemoryItem]
        next_cursor = None
        if q:
            found = memory.search(q, k=_PAGE, kinds=kinds, include_episodes=kind == "episode",
                                  since=extra["since"], until=extra["until"],
                                  include_superseded=status in ("superseded", "all"),
                                  include_archived=status in ("archived", "all"), **where.many())
            hits = [h for h in found if (status in (None, "all") or h.memory.status == status)
                    and extra["maturity"] in (None, h.memory.maturity)
                    and extra["subject"] in (None, h.memory.subject)]
            rows = [h.memory for h in hits]
        else:
            page = memory.list(kinds=kinds, include_episodes=kind == "episode", **extra,
                               statuses=STATUSES if status == "all" else [status] if status else None,
                               limit=_PAGE, cursor=cursor, **where.many())
            rows, next_cursor = list(page), page.next_cursor
        scores = {h.memory.id: h.score for h in hits} if hits is not None else {}
        filters = {**where.query(), **{k: v for k, v in (("q", q), ("kind", kind), ("status", status),
                                                          *extra.items()) if v}}
        return console.render(request, "memories.html", who=who, where=where, rows=rows,
                              scores=scores, q=q, kind=kind or "", status=status or "",
                              kinds=ALL_KINDS, statuses=(*STATUSES[1:], "all"), extra=extra,
                              maturities=("candidate", "confirmed", "canonical"), next_cursor=next_cursor,
                              cursor=cursor, purged=purged if purged.isdigit() else None,
                              filters=filters)

    @router.get("")
    async def memories(request: Request) -> Response:
        return await console.page(request, lambda who, where: table(request, who, where))

    def detail(request: Request, memory_id: str, who: Principal, where: ScopeFilter) -> Response:
        item = memory.get(memory_id, **where.owner())
        owner = {"org_id": item.org_id, **{k: v for k, v in where.owner().items() if k != "org_id"}}
        history = memory.history(memory_id, **owner)
        versions: list[tuple[HistoryEntry, list[tuple[str, str]] | None]] = []
        previous: str | None = None
        for entry in history:
            diff = word_diff(previous, entry.text) \
                if previous is not None and previous != entry.text else None
            versions.append((entry, diff))
            previous = entry.text
        sources = []
        for source_id in item.sources:
            if source_id == item.id:
                continue
            try:
                source = memory.get(source_id, **owner)
            except NotFoundError:
                continue  # outside what this key may read
            before, after = memory.around(source.id, window=1, **owner)
            sources.append((before, source, after))
        strength = None if item.is_episode else memory.strength(item.id, **owner)
        links = memory.links(memory_id, **owner)
        injected = memory.injected(memory_id, org_id=item.org_id, user_id=where.user)
        feedback = [e for e in history if e.action in ("feedback", "forgotten", "archived")
                    and (e.reason or "").startswith("feedback")]
        uses = {v: int(item.metadata.get(v, 0)) for v in ("helpful", "wrong", "stale")}
        return console.render(request, "memory.html", who=who, where=where, item=item,
                              versions=list(reversed(versions)), sources=sources, links=links,
                              injected=injected, feedback=feedback, uses=uses,
                              strength=strength, archive_below=console.memory.config.agent.archive_below,
                              can_write=who.allows("write"), can_purge=who.allows("admin"))

    @router.get("/{memory_id}")
    async def memory_page(request: Request, memory_id: str) -> Response:
        return await console.page(request, lambda who, where: detail(request, memory_id, who, where))

    def _item(request: Request, who: Principal, memory_id: str) -> MemoryItem:
        where = ScopeFilter.of(request, who)
        return memory.get(memory_id, **where.owner())

    async def act(request: Request, memory_id: str, scope: str, change: Any,
                  note: str | None) -> Response:
        def handler(who: Principal, form: dict[str, str]) -> Response:
            item = _item(request, who, memory_id)
            change(item, own_scope(who, item), form)
            return redirect(memory_url(item), note=note)
        return await console.action(request, scope, handler)

    @router.post("/{memory_id}/edit")
    async def edit(request: Request, memory_id: str) -> Response:
        return await act(request, memory_id, "write", lambda item, own, form: memory.update(
            item.id, text=form.get("text", ""), reason=form.get("reason") or None, **own), "saved")

    @router.post("/{memory_id}/pin")
    async def pin(request: Request, memory_id: str) -> Response:
        return await act(request, memory_id, "write", lambda item, own, form: memory.pin(
            item.id, pinned=form.get("pinned") == "1", **own), "saved")

    @router.post("/{memory_id}/forget")
    async def forget(request: Request, memory_id: str) -> Response:
        return await act(request, memory_id, "write", lambda item, own, form: memory.forget(
            item.id, reason=form.get("reason") or "forgotten in the console", **own), "forgotten_note")

    @router.post("/{memory_id}/restore")
    async def restore(request: Request, memory_id: str) -> Response:
        return await act(request, memory_id, "write", lambda item, own, form: memory.restore(
            item.id, reason="restored in the console", **own), "restored_note")

    @router.post("/{memory_id}/feedback")
    async def feedback(request: Request, memory_id: str) -> Response:
        return await act(request, memory_id, "write", lambda item, own, form: memory.feedback(
            item.id, form.get("verdict", ""), form.get("note") or None, **own), "saved")

    @router.get("/{memory_id}/purge")
    async def purge_page(request: Request, memory_id: str) -> Response:
        return await console.page(request, lambda who, where: console.render(
            request, "purge.html", who=who, item=memory.get(memory_id, **where.owner())))

    @router.post("/{memory_id}/purge")
    async def purge(request: Request, memory_id: str) -> Response:
        def handler(who: Principal, form: dict[str, str]) -> Response:
            item = _item(request, who, memory_id)
            if form.get("confirm") != "yes":
                return redirect(f"/ui/memories/{item.id}/purge")
            deleted = memory.purge(item.id, **own_scope(who, item))
            return redirect("/ui/memories", purged=str(len(deleted)))
        return await console.action(request, "admin", handler)

    return router
