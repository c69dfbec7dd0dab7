"""The timeline with its ``as_of`` slider, the mind map, the memory network around one
memory, and jobs with health."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..._inputs import parse_time
from ...errors import ValidationError
from ...memory import Memory
from ...model import EPISODE_KINDS, MemoryItem
from ..auth import Principal
from .base import Console, ScopeFilter
from .render import redirect, when

__all__ = ["view_routes"]

_SHOWN = 200
_NEIGHBOURS = 24


def _event_time(item: MemoryItem) -> datetime:
    """When what the row says happened: a turn's time, a memory's start of validity."""
    return item.event_time or item.valid_from or item.created_at


def _supersessions(memory: Memory, item: MemoryItem,
                   owner: dict[str, Any]) -> dict[str, list[MemoryItem]]:
    """The memories ``item`` replaced and the ones that replaced it, within the scope."""
    found: dict[str, list[MemoryItem]] = {"replaced": [], "replaced_by": []}
    for link in memory.links(item.id, **owner):
        if link.type == "supersedes":
            found["replaced" if link.direction == "out" else "replaced_by"].append(link.memory)
    return found


def view_routes(console: Console) -> APIRouter:
    """``/ui/timeline``, ``/ui/mindmap``, ``/ui/network`` and ``/ui/jobs``."""
    router = APIRouter(prefix="/ui")
    memory = console.memory

    def timeline(request: Request, who: Principal, where: ScopeFilter) -> Response:
        known = memory.list(include_inactive=True, limit=500, **where.many())
        times = sorted({t for m in known for t in (m.valid_from, m.valid_to) if t is not None})
        step_arg = request.query_params.get("step")
        as_of_arg = (request.query_params.get("as_of") or "").strip() or None
        as_of: datetime | None = None
        step = len(times)  # the last step: now
        if step_arg is not None and step_arg.strip():
            if not step_arg.isdigit() or int(step_arg) > len(times):
                raise ValidationError("step", f"{step_arg!r}: expected a step from 0 to {len(times)}")
            step = int(step_arg)
            as_of = times[step] if step < len(times) else None
        elif as_of_arg is not None:
            stamp = parse_time(as_of_arg, "as_of")
            assert stamp is not None
            as_of = datetime.fromtimestamp(stamp, timezone.utc)
            step = max(sum(t <= as_of for t in times) - 1, 0)
        rows = memory.list(as_of=as_of, limit=_SHOWN, **where.many()) if as_of is not None \
            else memory.list(limit=_SHOWN, **where.many())
        episodes = memory.list(kinds=EPISODE_KINDS, until=as_of, limit=_SHOWN, **where.many())
        owner = where.owner()
        changes = {m.id: _supersessions(memory, m, owner) for m in rows}
        ordered = sorted([*rows, *episodes], key=_event_time, reverse=True)
        labels = [when(t) for t in times] + [console.text(request, "now")]
        return console.render(request, "timeline.html", who=who, rows=ordered, as_of=as_of,
                              changes=changes,
                              step=step, steps=len(times), labels=json.dumps(labels),
                              label=labels[step] if step < len(labels) else labels[-1],
                              filters=where.query())

    @router.get("/timeline")
    async def timeline_page(request: Request) -> Response:
        return await console.page(request, lambda who, where: timeline(request, who, where))

    def mindmap(request: Request, who: Principal, where: ScopeFilter) -> Response:
        tree = memory.tree(**where.owner())
        return console.render(request, "mindmap.html", who=who, tree=tree)

    @router.get("/mindmap")
    async def mindmap_page(request: Request) -> Response:
        return await console.page(request, lambda who, where: mindmap(request, who, where))

    def network(request: Request, who: Principal, where: ScopeFilter) -> Response:
        memory_id = request.query_params.get("id")
        center: MemoryItem | None
        if memory_id:
            center = memory.get(memory_id, **where.owner())
        else:  # the newest memory that has edges
            center = next((m for m in memory.list(limit=100, **where.many())
                           if memory.links(m.id, org_id=m.org_id, user_id=where.user)), None)
        links = memory.links(center.id, org_id=center.org_id, user_id=where.user,
                             limit=_NEIGHBOURS) if center is not None else []
        nodes = []
        for n, link in enumerate(links):
            angle = 2 * math.pi * n / max(len(links), 1) - math.pi / 2
            nodes.append({"link": link, "x": round(450 + 300 * math.cos(angle), 1),
                          "y": round(270 + 200 * math.sin(angle), 1)})
        return console.render(request, "network.html", who=who, center=center, nodes=nodes)

    @router.get("/network")
    async def network_page(request: Request) -> Response:
        return await console.page(request, lambda who, where: network(request, who, where))

    def jobs(request: Request, who: Principal, where: ScopeFilter) -> Response:
        admin = who.allows("admin")
        org = who.org_id
        queue = [*memory.jobs(state="running", org_id=org, limit=50),
                 *memory.jobs(state="queued", org_id=org, limit=100)] if admin else []
        failed = [*memory.jobs(state="failed", org_id=org, limit=50),
                  *memory.jobs(state="cancelled", org_id=org, limit=20)] if admin else []
        return console.render(request, "jobs.html", who=who, admin=admin, queue=queue,
                              failed=failed, stats=memory.stats() if admin and org is None else None,
                              embedder=memory.embedder_name, extractor=memory.config.agent.extractor,
                              heed=memory.heed(**where.many()))

    @router.get("/jobs")
    async def jobs_page(request: Request) -> Response:
        return await console.page(request, lambda who, where: jobs(request, who, where))

    @router.post("/jobs/{job_id}/{what}")
    async def job_action(request: Request, job_id: str, what: str) -> Response:
        def handler(who: Principal, form: dict[str, str]) -> Response:
            if what == "retry":
                memory.retry_job(job_id, org_id=who.org_id)
            elif what == "cancel":
                memory.cancel_job(job_id, org_id=who.org_id)
            else:
                raise ValidationError("action", f"{what!r}: use retry or cancel")
            return redirect("/ui/jobs", note="saved")
        return await console.action(request, "admin", handler)

    return router
