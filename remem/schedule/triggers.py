"""Triggers: rules that queue background work when something happens.

Events: ``turn`` (new turns or agent events were stored), ``session_start`` (the first
turn of a session), ``tool_error`` (an agent event that failed), ``session_end``
(``Memory.end_session``), ``idle`` (a session got no turn for ``idle_s`` seconds) and
``timer`` (every ``every_s`` seconds, e.g. nightly decay). Each trigger names the job
kind it queues; a worker runs it. Adding one takes a few lines::

    from remem.schedule import Trigger

    m.triggers.add(Trigger("prefetch-on-error", on="tool_error", job="prefetch"))
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..model import Scope, new_id
from ..store.base import Store

__all__ = ["DEFAULT_TRIGGERS", "Trigger", "TriggerEvent", "Triggers"]

On = Literal["turn", "session_start", "tool_error", "session_end", "idle", "timer"]


@dataclass(frozen=True)
class TriggerEvent:
    """What happened: the event, its scope, and the episodes concerned (if any)."""

    on: On
    scope: Scope
    episode_ids: tuple[str, ...] = ()


def _episodes(event: TriggerEvent) -> dict[str, Any]:
    return {"episodes": list(event.episode_ids)}


def _session(event: TriggerEvent) -> dict[str, Any]:
    return {"scope": event.scope.model_dump()}


def _nothing(event: TriggerEvent) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Trigger:
    """When ``on`` happens, queue a job of kind ``job`` with ``payload(event)``.

    ``coalesce`` keeps at most one such job waiting per session (a burst of turns asks
    for one prefetch, not one each); ``needs_session`` skips turns outside a session.
    ``every_s`` is the period of a ``timer`` trigger; ``idle_s`` the quiet time of an
    ``idle`` one.
    """

    name: str
    on: On
    job: str
    payload: Callable[[TriggerEvent], dict[str, Any]] = _session
    priority: int = 0
    coalesce: bool = False
    needs_session: bool = False
    every_s: float | None = None
    idle_s: float | None = None


#: The triggers every Memory starts with (the extract trigger only with an extractor).
DEFAULT_TRIGGERS = (
    Trigger("extract", on="turn", job="extract", payload=_episodes),
    Trigger("prefetch", on="turn", job="prefetch", priority=-1, coalesce=True, needs_session=True),
    Trigger("prefetch-at-start", on="session_start", job="prefetch", priority=-1, coalesce=True,
            needs_session=True),
    Trigger("decay-nightly", on="timer", job="decay", payload=_nothing, every_s=86400.0),
)


@dataclass
class Triggers:
    """The triggers of one Memory; ``fire`` queues their jobs in the caller's transaction."""

    store: Store
    rules: list[Trigger] = field(default_factory=list)

    def add(self, trigger: Trigger) -> None:
        """Register a trigger (a name already used is replaced)."""
        self.rules = [t for t in self.rules if t.name != trigger.name] + [trigger]

    def remove(self, name: str) -> None:
        self.rules = [t for t in self.rules if t.name != name]

    def fire(self, event: TriggerEvent) -> dict[str, str]:
        """Queue the jobs of the triggers listening for ``event`` (in the open transaction,
        if any); returns id -> job kind."""
        queued: dict[str, str] = {}
        for t in self.rules:
            if t.on != event.on or (t.needs_session and event.scope.session_id is None):
                continue
            payload = t.payload(event)
            key = None
            if t.coalesce:
                key = f"coalesce:{t.job}:" + json.dumps(_session(event), sort_keys=True)
            job_id = new_id("j_")
            if self.store.enqueue(t.job, payload, job_id=job_id, priority=t.priority, key=key,
                                  org_id=event.scope.org_id, user_id=event.scope.user_id):
                queued[job_id] = t.job
        return queued

    def tick(self, now: float | None = None) -> list[str]:
        """Fire the timers that are due and the idle triggers of sessions gone quiet;
        the worker calls this between jobs. Each fires once per period or quiet spell."""
        now = time.time() if now is None else now
        queued: list[str] = []
        for t in self.rules:
            if t.on == "timer" and t.every_s:
                # the key makes one job per period, whatever the number of workers
                key = f"timer:{t.name}:{int(now // t.every_s)}"
                if not self.store.has_job_key(key) and self.store.enqueue(
                        t.job, t.payload(TriggerEvent("timer", Scope())),
                        job_id=(job_id := new_id("j_")), priority=t.priority, key=key):
                    queued.append(job_id)
            elif t.on == "idle" and t.idle_s:
                for scope, last in self.store.quiet_sessions(now - t.idle_s, limit=100):
                    key = f"idle:{t.name}:{scope.org_id}:{scope.session_id}:{last}"
                    if not self.store.has_job_key(key) and self.store.enqueue(
                            t.job, t.payload(TriggerEvent("idle", scope)),
                            job_id=(job_id := new_id("j_")), priority=t.priority, key=key,
                            org_id=scope.org_id, user_id=scope.user_id):
                        queued.append(job_id)
        return queued
