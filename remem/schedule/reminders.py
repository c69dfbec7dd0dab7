"""Reminders: a memory that comes due, and the timer job that announces it.

A reminder is an ``event`` memory of the user's with ``metadata["reminder"]`` holding its
due time and state (``open``, then ``done`` or ``dismissed``). Scheduling it queues a
``remind`` job delayed until it is due; when the job runs, the listeners (the server's
event stream) hear of it. Whether a reminder shows in a context block is decided by the
time the caller's clock gives, not by the job: a due, open reminder is in the core block
of every context of its user until it is done or dismissed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from ..errors import ValidationError
from ..model import MemoryItem, Provenance, Scope, new_id
from ..store.base import Job, NewMemory, Store
from .worker import Handler

__all__ = ["REMINDER", "due_reminders", "new_reminder", "open_reminders", "remind_handler",
           "settle_reminder"]

log = logging.getLogger(__name__)

REMINDER = "reminder"
_STATES = ("done", "dismissed")


def _due(item: MemoryItem) -> float | None:
    info = item.metadata.get(REMINDER)
    if not isinstance(info, dict) or info.get("state") != "open":
        return None
    try:
        return float(info["due"])
    except (KeyError, TypeError, ValueError):
        return None


def new_reminder(store: Store, scope: Scope, text: str, due: float, *, now: float,
                 passages: Sequence[str], source_ids: Sequence[str] = (),
                 held: str | None = None, provenance: Provenance | None = None) -> str:
    """Write a reminder due at ``due`` (epoch seconds) and queue its ``remind`` job, in
    the caller's transaction; returns its id. A ``held`` one (the screening's reason) is
    held for review: it shows nowhere until a person approves it. ``provenance`` (who
    asked, through which door) defaults to its sources'."""
    memory_id = new_id("m_")
    iso = datetime.fromtimestamp(due, timezone.utc).date().isoformat()
    store.insert([NewMemory(
        id=memory_id, kind="event", text=text, raw=False, scope=scope, observed_at=now,
        event_time=due, subject="user", passages=passages, source_ids=source_ids,
        metadata={REMINDER: {"due": due, "due_date": iso, "state": "open"}, "rule": "do.remind"},
        provenance=provenance,
    )], new_id("j_"))
    if held is not None:
        store.set_fields(memory_id, None, action="held", status="held", reason=held)
    store.enqueue("remind", {"memory_id": memory_id}, job_id=new_id("j_"),
                  delay_s=max(0.0, due - now), key=f"remind:{memory_id}", org_id=scope.org_id)
    return memory_id


def open_reminders(store: Store, scope: Scope) -> list[MemoryItem]:
    """The open reminders of a scope (its user's), soonest first."""
    found = store.derived(scope.model_copy(update={"nested": True, "session_id": None}),
                          ["event"], limit=5000)
    mine = [m for m in found if _due(m) is not None and m.user_id == scope.user_id]
    return sorted(mine, key=lambda m: (_due(m) or 0.0, m.id))


def due_reminders(store: Store, scope: Scope, now: float) -> list[MemoryItem]:
    """The open reminders of a scope that are due at ``now``."""
    return [m for m in open_reminders(store, scope) if (_due(m) or 0.0) <= now]


def settle_reminder(store: Store, memory_id: str, scope: Scope, state: str, *,
                    now: float) -> MemoryItem:
    """Mark a reminder ``done`` or ``dismissed``: it leaves the context blocks and search
    (archived; its history keeps it)."""
    if state not in _STATES:
        raise ValidationError("state", f"{state!r}: use done or dismissed")
    item = store.get(memory_id, scope)
    info = item.metadata.get(REMINDER)
    if not isinstance(info, dict):
        raise ValidationError("id", f"{memory_id} is not a reminder; see `remem reminders`")
    if info.get("state") != "open":
        raise ValidationError("id", f"reminder {memory_id} is already {info.get('state')}")
    meta = {**item.metadata, REMINDER: {**info, "state": state, "settled_at": now}}
    store.set_fields(memory_id, scope, action=state, reason=f"reminder {state}",
                     status="archived", metadata=meta)
    return store.get(memory_id, scope)


def remind_handler(store: Store, listeners: Sequence[Callable[[MemoryItem], Any]]) -> Handler:
    """Runs ``remind`` jobs: ``{"memory_id": id}``; tells each listener of the reminder
    that came due (unless it was settled before)."""

    def run(job: Job) -> None:
        found = store.items_by_id([str(job.payload.get("memory_id"))])
        item = found[0] if found else None
        store.finish_job(job, {"announced": bool(item is not None and _due(item) is not None)})
        if item is None or _due(item) is None:
            return
        for listener in list(listeners):
            try:
                listener(item)
            except Exception:  # a listener's bug must not stop the worker
                log.exception("a reminder listener failed")

    return run
