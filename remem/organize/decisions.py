"""What people decide about memories, applied by the memory agent's rules.

Feedback: ``helpful`` strengthens a memory and matures it, ``wrong`` forgets it,
``stale`` archives it. A held item approved becomes active (a turn's text then goes to
extraction), rejected it is forgotten, and the held turn it was proposed in goes with it.
A flagged memory is kept (the flag cleared) or forgotten. An approved skill becomes
canonical with its SKILL.md, which lists the pitfalls known for the programs it runs.
Forgetting or purging a memory
that :meth:`~remem.Memory.remember` wrote takes the turn it wrote for it along, since that
turn says the same. The callers check the scope walls and the arguments first.
"""

from __future__ import annotations

import time

from ..errors import ValidationError
from ..model import MemoryItem, Scope, new_id
from ..store.base import Store
from .agent import maturity_for, shared_scope
from .skills import render_skill_md
from .topics import MindMap

__all__ = ["VERDICTS", "WRITTEN_BY", "approve_skill", "decide_held", "feedback", "forget", "purge",
           "settle_flag", "written_for"]

#: What :func:`feedback` accepts.
VERDICTS = ("helpful", "wrong", "stale")
#: The episode metadata that names the call that wrote it (``remember``).
WRITTEN_BY = "written_by"
_MATURITY_ORDER = ["canonical", "confirmed", "candidate"]


def feedback(store: Store, memory_id: str, scope: Scope, verdict: str, note: str | None) -> None:
    """Record ``verdict`` (one of :data:`VERDICTS`) on a memory, in its history with ``note``."""
    item = store.get(memory_id, scope)
    meta = dict(item.metadata)
    meta[verdict] = int(meta.get(verdict, 0)) + 1
    reason = f"feedback: {verdict}" + (f" ({note})" if note else "")
    if verdict == "helpful":
        maturity = min(item.maturity, maturity_for(len(meta.get("sessions", [])) or 1,
                                                   meta["helpful"]), key=_MATURITY_ORDER.index)
        with store.write():
            store.touch([item.id])
            store.mark_used([item.id], scope, time.time())
        store.set_fields(item.id, scope, action="feedback", reason=reason,
                         maturity=maturity, metadata=meta)
    elif verdict == "wrong":
        store.set_fields(item.id, scope, action="forgotten", reason=reason,
                         status="forgotten", metadata=meta)
    else:
        store.set_fields(item.id, scope, action="archived", reason=reason,
                         status="archived", metadata={**meta, "stale": True})


def decide_held(store: Store, memory_id: str, scope: Scope, *, approve: bool,
                note: str | None) -> None:
    """Approve or reject a held item, and the held turn it was proposed in with it; an
    approved turn is queued for extraction. ValidationError if the item is not held."""
    item = store.get(memory_id, scope)
    if item.status != "held":
        raise ValidationError("id", f"{memory_id} is {item.status}, not held for review; "
                              "see `remem review` for what is")
    status, action = ("active", "approved") if approve else ("forgotten", "rejected")
    decided = [item, *(s for s in store.items_by_id(item.sources)
                       if s.status == "held" and s.id != item.id)]
    with store.transaction():
        for one in decided:
            store.set_fields(one.id, None, action=action, status=status,
                             reason=note or f"{action} on review",
                             metadata={**one.metadata, "reviewed": action})
        if approve and item.is_episode:  # what an approved turn says can become memories
            store.enqueue("extract", {"episodes": [item.id]}, job_id=new_id("j_"),
                          org_id=item.org_id, user_id=item.user_id)


def settle_flag(store: Store, memory_id: str, scope: Scope, *, keep: bool) -> None:
    """Keep a flagged memory (its flag cleared) or forget it; ValidationError if it is
    not flagged."""
    item = store.get(memory_id, scope)
    if not item.metadata.get("review"):
        raise ValidationError("id", f"{memory_id} is not flagged for review")
    meta = {**item.metadata, "reviewed": "kept" if keep else "forgotten"}
    store.set_fields(memory_id, scope, action="reviewed",
                     reason="kept on review" if keep else "forgotten on review",
                     status=None if keep else "forgotten", metadata=meta)


def approve_skill(store: Store, memory_id: str, scope: Scope) -> None:
    """Make a skill candidate canonical, with its SKILL.md in ``metadata["skill_md"]``;
    ValidationError for a memory that is no skill."""
    skill = store.get(memory_id, scope)
    if skill.kind != "skill":
        raise ValidationError("id", f"{memory_id} is a {skill.kind} memory, not a skill; "
                              "see `remem skills` for the candidates")
    programs = {str(step).split()[0] for step in skill.metadata.get("steps", []) if str(step).split()}
    pitfalls = [p for p in store.derived(shared_scope(skill), ["pitfall"], limit=500)
                if programs & {e.lower() for e in p.metadata.get("entities", [])}]
    md = render_skill_md(skill, pitfalls)
    store.set_fields(skill.id, scope, action="approved", reason="skill approved",
                     maturity="canonical",
                     metadata={**skill.metadata, "skill_status": "approved", "skill_md": md})


def written_for(store: Store, item: MemoryItem) -> list[MemoryItem]:
    """The episodes ``remember`` wrote as the source of ``item`` (none for a turn)."""
    if item.is_episode:
        return []
    return [e for e in store.items_by_id(item.sources)
            if e.is_episode and e.metadata.get(WRITTEN_BY) == "remember" and e.id != item.id]


def forget(store: Store, mindmap: MindMap, memory_id: str, scope: Scope,
           reason: str | None) -> MemoryItem:
    """Set a memory forgotten (and the turn ``remember`` wrote for it); the memory."""
    item = store.get(memory_id, scope)
    with store.transaction():
        for episode in written_for(store, item):
            store.set_status(episode.id, scope.model_copy(update={"session_id": None}),
                             "forgotten", reason or f"forgotten with {item.id}")
        forgotten = store.set_status(memory_id, scope, "forgotten", reason)
        mindmap.refresh(MindMap.scope_of(item))
    return forgotten


def purge(store: Store, mindmap: MindMap, memory_id: str, scope: Scope) -> list[str]:
    """Delete a memory for good, with everything derived from it (the turn ``remember``
    wrote for it first); the deleted ids."""
    item = store.get(memory_id, scope)
    with store.transaction():
        ids: list[str] = []
        for episode in written_for(store, item):
            ids += store.purge(episode.id, Scope(org_id=episode.org_id, user_id=episode.user_id))
        if item.id not in ids:
            ids += store.purge(memory_id, scope)
        mindmap.refresh(MindMap.scope_of(item))
    return ids
