"""Ingestion: checking what callers add, and writing it.

Turns (:meth:`~remem.Memory.add`) and agent events (:meth:`~remem.Memory.add_events`)
are stored verbatim as episodes in one transaction with their embedding job and the jobs
their triggers queue (extraction, prefetch, ...); a turn added again is the same
episode. Text an agent asks to remember (:meth:`~remem.Memory.remember`) is kept as an
episode too, and handed to the memory agent in the same transaction. Every text and
metadata value passes the redactor first. Every episode records its provenance: the door
it came in through and who said it (:mod:`remem.govern.provenance`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .._inputs import (
    check_label,
    check_metadata,
    clean_text,
    parse_events,
    parse_messages,
    parse_scope,
    parse_time,
)
from ..config import Config
from ..errors import EmbeddingError, ValidationError
from ..govern.provenance import check_door, provenance
from ..govern.redact import Redactor
from ..govern.sharing import Sharing
from ..model import KINDS, AddResult, Candidate, MemoryItem, Scope, new_id, render_event
from ..organize.agent import MemoryAgent
from ..organize.decisions import WRITTEN_BY
from ..schedule import TriggerEvent, Triggers, Worker, wait_for
from ..schedule.pending import PendingJobs
from ..store import NewMemory, Store
from ..text import split_passages

__all__ = ["Ingest"]

_GENERIC_ROLES = {"user", "assistant", "system", "tool", None}
_INTENTS = ("statement", "update", "correction")


def _failed(event: Any) -> bool:
    """True for an agent event that failed: an error, or a tool call with a non-zero exit."""
    if not isinstance(event, dict):
        return False
    code = event.get("exit_code")
    return event.get("type") == "error" or (event.get("type") == "tool_call" and code not in (None, 0))


def _speaker_role(role: str | None, meta: dict[str, Any]) -> str | None:
    """The role a message was said in: a named speaker's given role (kept in its metadata
    when both were given), else the role itself."""
    if role not in _GENERIC_ROLES and isinstance(meta.get("role"), str):
        return str(meta["role"])
    return role


def _across_sessions(scope: Scope) -> Scope:
    """The scope of derived memories: the same walls, across sessions."""
    return scope.model_copy(update={"session_id": None})


class Ingest:
    """Adds turns, agent events and remembered text to one store."""

    def __init__(self, store: Store, config: Config, *, redactor: Redactor, triggers: Triggers,
                 worker: Worker, jobs: PendingJobs, agent: MemoryAgent,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.config = config
        self.redactor = redactor
        self.triggers = triggers
        self.worker = worker
        self.jobs = jobs
        self.agent = agent
        self.clock = clock

    def passages(self, text: str, speaker: str | None) -> list[str]:
        """The passages a turn is embedded and found by."""
        parts = split_passages(text, self.config.chunk_tokens)
        # a named speaker is part of what a turn says ("what did Caroline ...?")
        if speaker not in _GENERIC_ROLES:
            parts = [f"{speaker}: {p}" for p in parts]
        return parts

    def writer(self, writer: str | None, scope: Scope) -> dict[str, Any]:
        """The metadata that attributes a write to ``writer``; PermissionDeniedError when
        ``writer`` may not write into ``scope``."""
        if writer is None:
            return {}
        parse_scope(user_id=writer)
        Sharing(self.store).can_write(writer, scope)
        return {"writer": writer}

    # --- turns and events ---------------------------------------------------------------

    def add(self, messages: object, scope: Scope, *, timestamp: str | datetime | None,
            metadata: dict[str, Any] | None, on_ready: Callable[[AddResult], object] | None,
            writer: str | None, door: str = "sdk") -> AddResult:
        """Store each message as an episode of ``scope`` (see :meth:`remem.Memory.add`)."""
        check_door(door)
        if metadata is not None:
            metadata = self.redactor.value(check_metadata(metadata, "metadata"))
        if writer is not None:
            metadata = {**(metadata or {}), **self.writer(writer, _across_sessions(scope))}
        default_time = parse_time(timestamp, "timestamp")
        now = time.time()
        items, known = [], {}
        for n, (role, text, meta, when) in enumerate(parse_messages(messages, self.config.max_text_chars)):
            text, meta = self.redactor.text(text), self.redactor.value(meta)
            event_time = when if when is not None else (now if default_time is None else default_time)
            # the same turn added again (a replayed conversation) is the same episode
            same = self.store.same_episode(scope, role, text, event_time)
            if same is not None:
                known[n] = same
                continue
            items.append(NewMemory(
                id=new_id("e_"), kind="episode", text=text, raw=True, scope=scope, role=role,
                metadata={**(metadata or {}), **meta}, observed_at=now, event_time=event_time,
                passages=self.passages(text, role),
                provenance=provenance(door, _speaker_role(role, meta)),
            ))
        return self._watch(self._queue(items, known), on_ready)

    def add_events(self, events: object, scope: Scope, *, timestamp: str | datetime | None,
                   metadata: dict[str, Any] | None,
                   on_ready: Callable[[AddResult], object] | None,
                   door: str = "sdk") -> AddResult:
        """Store agent events as episodes of kind ``event`` (see :meth:`remem.Memory.add_events`)."""
        made = provenance(door, "tool")  # what an agent did and saw is tool output
        if metadata is not None:
            check_metadata(metadata, "metadata")
        default_time = parse_time(timestamp, "timestamp")
        now = time.time()
        items = []
        for i, event in enumerate(parse_events(events)):
            text = clean_text(render_event(event), f"events[{i}]", self.config.max_text_chars,
                              strip_controls=True)
            check_label(event.session_id, f"events[{i}].session_id")
            text = self.redactor.text(text)
            meta = self.redactor.value(check_metadata(
                {**(metadata or {}), "event": event.model_dump(mode="json")}, f"events[{i}]"))
            # naive means UTC here as everywhere else
            when = parse_time(event.timestamp, f"events[{i}].timestamp")
            if when is None:
                when = default_time if default_time is not None else now
            items.append(NewMemory(
                id=new_id("e_"), kind="event", text=text, raw=True,
                scope=scope.model_copy(update={"session_id": event.session_id or scope.session_id}),
                role="tool", metadata=meta, provenance=made,
                observed_at=now, event_time=when, passages=split_passages(text, self.config.chunk_tokens),
            ))
        return self._watch(self._queue(items), on_ready)

    def _queue(self, items: list[NewMemory], known: dict[int, str] | None = None) -> AddResult:
        """Insert new episodes with their embed and extract jobs, in one transaction.
        ``known`` maps positions of messages already stored to their episode ids."""
        known = known or {}
        job_ids = []
        if items:
            embed_id = new_id("j_")
            job_ids.append(embed_id)
            with self.store.transaction():
                self.store.insert(items, embed_id)
                job_ids += self._fire_turn(items)
        if job_ids and self.config.embed_in_background:
            self.jobs.track(job_ids)
        elif job_ids:
            _, failed = wait_for(self.store, self.worker, set(job_ids), None)
            if failed:
                raise EmbeddingError(f"the episodes {[i.id for i in items]} were stored but "
                                     "their background work failed; see `remem jobs`")
        fresh = iter(items)
        ids = [known[n] if n in known else next(fresh).id for n in range(len(items) + len(known))]
        return AddResult(episode_ids=ids, job_ids=job_ids)

    def _fire_turn(self, items: list[NewMemory]) -> list[str]:
        """Fire the triggers of new turns (turn, session_start, tool_error); returns the
        ids of the jobs they queued."""
        scope = items[-1].scope
        turn = TriggerEvent("turn", scope, tuple(i.id for i in items))
        fired = list(self.triggers.fire(turn))
        if scope.session_id is not None and not self.store.session_seen(scope, items[0].id):
            fired += self.triggers.fire(TriggerEvent("session_start", scope, turn.episode_ids))
        failed = tuple(i.id for i in items if _failed(i.metadata.get("event")))
        if failed:
            fired += self.triggers.fire(TriggerEvent("tool_error", scope, failed))
        return fired

    def _watch(self, result: AddResult, on_ready: Callable[[AddResult], object] | None) -> AddResult:
        """Remember to call ``on_ready`` once the result's jobs are over."""
        if on_ready is not None:
            self.jobs.watch(result.job_ids, on_ready, result)
        return result

    # --- remembered text ----------------------------------------------------------------

    def remember(self, text: str, scope: Scope, *, kind: str, subject: str | None, role: str,
                 pinned: bool, metadata: dict[str, Any] | None, writer: str | None,
                 event_time: str | datetime | None, intent: str,
                 door: str = "sdk") -> MemoryItem:
        """Keep ``text`` as an episode and hand it to the memory agent as a candidate, in
        one transaction (see :meth:`remem.Memory.remember`); the memory it became, which
        has the episode's provenance (or a less trusted one it merged into)."""
        check_door(door)
        body = self.redactor.text(clean_text(text, "text", self.config.max_text_chars))
        if kind not in KINDS:
            raise ValidationError("kind", f"{kind!r} is not a kind of memory; use one of {', '.join(KINDS)}")
        check_label(subject, "subject")
        check_label(role, "role")
        meta = {**self.redactor.value(check_metadata(metadata or {}, "metadata")),
                **self.writer(writer, scope)}
        subject = self.redactor.maybe(subject)
        now = self.clock()
        episode = NewMemory(id=new_id("e_"), kind="episode", text=body, raw=True, scope=scope,
                            role=role, metadata={**meta, WRITTEN_BY: "remember"},
                            observed_at=now, event_time=now, passages=self.passages(body, role),
                            provenance=provenance(door, role))
        if intent not in _INTENTS:
            raise ValidationError("intent", f"{intent!r}: use statement, update or correction")
        happened = parse_time(event_time, "event_time")
        cand = Candidate(kind=kind, text=body, subject=subject or (
            "project" if kind in ("project", "convention", "pitfall", "files") else "user"),
            source_ids=[episode.id], rule="remember", confidence=0.9, intent=intent,  # type: ignore[arg-type]
            event_time=None if happened is None else datetime.fromtimestamp(happened, timezone.utc))
        shared = _across_sessions(scope)
        prepared = self.agent.prepare([(shared, cand, body)])
        held = self.agent.screen_text(body, role)
        embed_id = new_id("j_")
        with self.store.transaction():
            self.store.insert([episode], embed_id)
            if held is not None:
                self.store.set_fields(episode.id, None, action="held", status="held", reason=held)
            _, memory_id = self.agent.absorb(cand, shared, evidence=body,
                                             vector=prepared.vectors.get(body),
                                             session_id=scope.session_id, metadata=meta, held=held)
            if pinned:
                self.store.set_fields(memory_id, None, action="pinned", reason="pinned when remembered",
                                      pinned=True)
        self.jobs.track([embed_id])
        return self.store.items_by_id([memory_id])[0]
