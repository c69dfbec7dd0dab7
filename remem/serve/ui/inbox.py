"""The review inbox: what waits for a person. Held turns and memories (they read as
instructions to the agent), skill candidates (approving renders SKILL.md), memories
flagged after what they were derived from was superseded. One click each."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..auth import Principal
from .base import Console, ScopeFilter
from .memories import own_scope
from .render import redirect

__all__ = ["inbox_routes"]


def inbox_routes(console: Console) -> APIRouter:
    """``/ui/review`` and its decisions."""
    router = APIRouter(prefix="/ui/review")
    memory = console.memory

    def inbox(request: Request, who: Principal, where: ScopeFilter) -> Response:
        owner = where.owner()
        held = memory.held(**owner)
        skills = memory.skills(status="candidate", **owner)
        flagged = memory.flagged(**owner)
        return console.render(request, "review.html", who=who, held=held, skills=skills,
                              flagged=flagged, can_write=who.allows("write"))

    @router.get("")
    async def review(request: Request) -> Response:
        return await console.page(request, lambda who, where: inbox(request, who, where))

    @router.post("/{memory_id}")
    async def decide(request: Request, memory_id: str) -> Response:
        def handler(who: Principal, form: dict[str, str]) -> Response:
            where = ScopeFilter.of(request, who)
            item = memory.get(memory_id, **where.owner())
            own = own_scope(who, item)
            approve = form.get("decision") == "approve"
            if form.get("what") == "flag":  # a flagged skill candidate is settled, not approved
                memory.settle_flag(item.id, keep=approve, **own)
            elif item.status == "held":
                memory.review(item.id, approve=approve, note="decided in the console", **own)
            elif item.kind == "skill" and item.metadata.get("skill_status") == "candidate":
                if approve:
                    memory.approve_skill(item.id, **own)
                else:
                    memory.forget(item.id, reason="skill candidate rejected in the console", **own)
            else:  # flagged after a supersession: keep it (clear the flag) or forget it
                memory.settle_flag(item.id, keep=approve, **own)
            return redirect("/ui/review", note="approved_note" if approve else "rejected_note")
        return await console.action(request, "write", handler)

    return router
