"""The facade: ``Memory`` and ``AsyncMemory``, the one public entry point."""

from __future__ import annotations

import asyncio
import atexit
import builtins
import os
import time
import weakref
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._inputs import (
    check_label,
    check_metadata,
    clean_text,
    parse_events,
    parse_messages,
    parse_scope,
    parse_time,
)
from .config import Config, default_path
from .embed import Embedder, create_embedder
from .errors import ClosedError, EmbeddingError, ValidationError
from .model import (
    EPISODE_KINDS,
    AddResult,
    HistoryEntry,
    Hit,
    MemoryItem,
    Page,
    Stats,
    new_id,
    render_event,
    utcnow,
)
from .retrieve import Retriever
from .schedule import EmbedWorker, wait_for
from .store import Filters, NewMemory, SQLiteStore
from .text import split_passages

__all__ = ["AsyncMemory", "Memory"]

_GENERIC_ROLES = {"user", "assistant", "system", "tool", None}


def _kinds(kinds: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``kinds`` as a tuple; one kind may be given as a plain string."""
    if kinds is None:
        return None
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


def _close_at_exit(ref: weakref.ReferenceType[Memory]) -> None:
    memory = ref()
    if memory is not None:
        memory.close()


class Memory:
    """A memory store in one SQLite file, with hybrid search and a background worker.

    >>> with Memory("team.db") as m:
    ...     m.add("We deploy with `make ship`", user_id="alice", project="web")
    ...     m.flush()
    ...     hits = m.search("how do we deploy?", user_id="alice")

    ``path`` defaults to ``$REMEM_HOME/remem.db`` (``~/.remem/remem.db``). ``config``
    defaults to :meth:`Config.from_env`; ``embedder`` overrides the configured one.
    ``reembed=True`` drops the store's vectors and queues every passage to be embedded
    again with this embedder (the way to switch models; ``flush()`` waits for it).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 config: Config | None = None, embedder: Embedder | None = None,
                 reembed: bool = False) -> None:
        self.config = config or Config.from_env()
        self.path = Path(path) if path is not None else default_path()
        self.embedder = embedder or create_embedder(self.config)
        self.store = SQLiteStore(self.path, dim=self.embedder.dim, embedder=self.embedder.name,
                                 busy_timeout_s=self.config.busy_timeout_s, reembed=reembed)
        self.retriever = Retriever(self.store, self.embedder, self.config.retrieval)
        self.worker = EmbedWorker(self.store, self.embedder, batch=self.config.worker_batch)
        self._pending: set[str] = set()
        self._closed = False
        atexit.register(_close_at_exit, weakref.ref(self))
        left_over = self.store.queued("embed")  # by an earlier process, or by reembed
        if reembed:
            self._pending.update(left_over)
        if left_over and self.config.run_worker:
            self.worker.wake()

    # --- lifecycle --------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError()

    def close(self) -> None:
        """Stop the worker and close the file; queued work stays queued. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.worker.stop()
        self.retriever.close()
        self.store.close()

    def __enter__(self) -> Memory:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the background work this Memory queued is over; True if all of it
        succeeded, False if some is still running at ``timeout`` or failed for good (see
        ``stats().jobs``; the episodes stay searchable by full text)."""
        self._check_open()
        waiting = set(self._pending)  # adds from other threads may join meanwhile
        still, failed = wait_for(self.store, self.worker, waiting, timeout)
        self._pending -= waiting - still
        return not still and not failed

    # --- writing ----------------------------------------------------------------------

    def _queue(self, items: list[NewMemory]) -> AddResult:
        job_id = new_id("j_")
        self.store.insert(items, job_id)
        if self.config.embed_in_background:
            self._pending.add(job_id)
            if self.config.run_worker:
                self.worker.wake()
        else:
            _, failed = wait_for(self.store, self.worker, {job_id}, None)
            if failed:
                raise EmbeddingError(f"the episodes {[i.id for i in items]} were stored but "
                                     "could not be embedded; see `remem stats` for the failed job")
        return AddResult(episode_ids=[i.id for i in items], job_ids=[job_id])

    def _passages(self, text: str, speaker: str | None) -> list[str]:
        parts = split_passages(text, self.config.chunk_tokens)
        # a named speaker is part of what a turn says ("what did Caroline ...?")
        if speaker not in _GENERIC_ROLES:
            parts = [f"{speaker}: {p}" for p in parts]
        return parts

    def add(self, messages: str | dict[str, Any] | Sequence[dict[str, Any] | str], *,
            user_id: str | None = None, agent_id: str | None = None, project: str | None = None,
            session_id: str | None = None, org_id: str | None = None,
            timestamp: str | datetime | None = None,
            metadata: dict[str, Any] | None = None) -> AddResult:
        """Store each message verbatim as an episode, in one transaction.

        ``messages`` is a string, a dict, or a list of dicts with ``role`` or ``speaker``,
        ``content`` or ``text``, and optional ``metadata`` and ``timestamp`` (ISO 8601;
        per message, else the call's, else now). Returns the episode ids, one per
        message in order, and the ids of the background jobs queued (embedding).
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        if metadata is not None:
            check_metadata(metadata, "metadata")
        default_time = parse_time(timestamp, "timestamp")
        now = time.time()
        items = []
        for role, text, meta, when in parse_messages(messages, self.config.max_text_chars):
            items.append(NewMemory(
                id=new_id("e_"), kind="episode", text=text, raw=True, scope=scope, role=role,
                metadata={**(metadata or {}), **meta}, observed_at=now,
                event_time=when if when is not None else (now if default_time is None else default_time),
                passages=self._passages(text, role),
            ))
        return self._queue(items)

    def add_events(self, events: Sequence[dict[str, Any]] | dict[str, Any], *,
                   user_id: str | None = None, agent_id: str | None = None,
                   project: str | None = None, session_id: str | None = None,
                   org_id: str | None = None, timestamp: str | datetime | None = None,
                   metadata: dict[str, Any] | None = None) -> AddResult:
        """Store coding-agent events (tool calls, file edits, errors, task start/end) as
        episodes of kind ``event``; the event itself is kept in ``metadata["event"]``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        if metadata is not None:
            check_metadata(metadata, "metadata")
        default_time = parse_time(timestamp, "timestamp")
        now = time.time()
        items = []
        for i, event in enumerate(parse_events(events)):
            text = clean_text(render_event(event), f"events[{i}]", self.config.max_text_chars,
                              strip_controls=True)
            check_label(event.session_id, f"events[{i}].session_id")
            meta = check_metadata({**(metadata or {}), "event": event.model_dump(mode="json")},
                                  f"events[{i}]")
            # naive means UTC here as everywhere else
            when = parse_time(event.timestamp, f"events[{i}].timestamp")
            if when is None:
                when = default_time if default_time is not None else now
            items.append(NewMemory(
                id=new_id("e_"), kind="event", text=text, raw=True,
                scope=scope.model_copy(update={"session_id": event.session_id or scope.session_id}),
                role="tool", metadata=meta,
                observed_at=now, event_time=when, passages=split_passages(text, self.config.chunk_tokens),
            ))
        return self._queue(items)

    def update(self, memory_id: str, *, text: str, reason: str | None = None,
               org_id: str | None = None, user_id: str | None = None,
               project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """Give a derived memory new text as a new version; ``history`` keeps the old one."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        body = clean_text(text, "text", self.config.max_text_chars)
        check_label(reason, "reason")
        job_id = new_id("j_")
        item = self.store.update_text(memory_id, scope, body,
                                      split_passages(body, self.config.chunk_tokens), reason, job_id)
        self._pending.add(job_id)
        if self.config.run_worker:
            self.worker.wake()
        return item

    def forget(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
               user_id: str | None = None, project: str | None = None,
               agent_id: str | None = None) -> MemoryItem:
        """Hide a memory from search; it stays in the file and in its history."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        check_label(reason, "reason")
        return self.store.set_status(memory_id, scope, "forgotten", reason)

    def purge(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
              project: str | None = None, agent_id: str | None = None) -> list[str]:
        """Delete a memory for good, with everything derived from it; returns the deleted ids."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return self.store.purge(memory_id, scope)

    # --- reading ----------------------------------------------------------------------

    def search(self, query: str, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, k: int = 10, kinds: Sequence[str] | None = None,
               since: str | datetime | None = None, until: str | datetime | None = None,
               as_of: str | datetime | None = None, budget_tokens: int | None = None,
               include_episodes: bool = True, include_superseded: bool = False,
               include_archived: bool = False) -> list[Hit]:
        """The memories that best answer ``query`` within the scope, best first.

        Each hit has its ``score``, the ``channels`` that found it (with its rank in
        each), ``reasons`` and the ``sources`` it came from. ``budget_tokens`` packs
        hits until the budget is spent; ``as_of`` shows what was valid at that time (by
        each memory's event time and validity, whenever it was added: a replayed history
        is searched as it stood) and resolves "last week" against it.
        """
        self._check_open()
        query = clean_text(query, "query", self.config.max_text_chars)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValidationError("k", f"expected a positive integer, got {k!r}")
        if budget_tokens is not None and (not isinstance(budget_tokens, int) or budget_tokens < 1):
            raise ValidationError("budget_tokens", f"expected a positive integer, got {budget_tokens!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        statuses = ("active",) + (("superseded",) if include_superseded else ()) + (
            ("archived",) if include_archived else ())
        as_of_ts = parse_time(as_of, "as_of")
        filters = Filters(
            kinds=_kinds(kinds), include_episodes=include_episodes,
            statuses=statuses, since=parse_time(since, "since"), until=parse_time(until, "until"),
            as_of=as_of_ts,
        )
        # "yesterday" is a UTC day, with or without as_of, as naive times are UTC
        now = utcnow() if as_of_ts is None else datetime.fromtimestamp(as_of_ts, timezone.utc)
        return self.retriever(query, scope=scope, filters=filters, k=k,
                              budget_tokens=budget_tokens, now=now)

    def get(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
            project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """One memory (or episode) by id, whatever its status."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return self.store.get(memory_id, scope)

    def list(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             session_id: str | None = None, kinds: Sequence[str] | None = None,
             include_episodes: bool = False, include_inactive: bool = False,
             limit: int = 50, cursor: str | None = None) -> Page:
        """Memories in the scope, newest first, one page at a time (``page.next_cursor``).

        Derived memories only, unless ``include_episodes``; active ones only, unless
        ``include_inactive``.
        """
        self._check_open()
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        statuses = ("active", "superseded", "archived", "forgotten") if include_inactive else ("active",)
        kinds = _kinds(kinds) or None
        filters = Filters(kinds=kinds,
                          include_episodes=include_episodes
                          or bool(kinds and set(kinds) & set(EPISODE_KINDS)),
                          statuses=statuses)
        return self.store.page(scope, filters, limit, cursor)

    def history(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                project: str | None = None, agent_id: str | None = None) -> builtins.list[HistoryEntry]:
        """Every version and status change of a memory, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return self.store.history(memory_id, scope)

    def export(self, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, include_episodes: bool = True) -> Iterator[MemoryItem]:
        """Every memory in the scope, whatever its status, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self.store.export(scope, include_episodes)

    def stats(self) -> Stats:
        """Counts of episodes, memories, passages, vectors and jobs, and the file size."""
        self._check_open()
        return Stats(**self.store.stats())


class AsyncMemory:
    """``Memory`` for asyncio code: the same methods, awaited; work runs in a thread.

    >>> async with AsyncMemory("team.db") as m:
    ...     await m.add("we use pnpm", user_id="alice")
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 config: Config | None = None, embedder: Embedder | None = None) -> None:
        self.sync = Memory(path, config=config, embedder=embedder)

    async def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)

    async def add(self, messages: Any, **kwargs: Any) -> AddResult:
        return await self._run("add", messages, **kwargs)

    async def add_events(self, events: Any, **kwargs: Any) -> AddResult:
        return await self._run("add_events", events, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> builtins.list[Hit]:
        return await self._run("search", query, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("get", memory_id, **kwargs)

    async def list(self, **kwargs: Any) -> Page:
        return await self._run("list", **kwargs)

    async def update(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("update", memory_id, **kwargs)

    async def forget(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("forget", memory_id, **kwargs)

    async def purge(self, memory_id: str, **kwargs: Any) -> builtins.list[str]:
        return await self._run("purge", memory_id, **kwargs)

    async def history(self, memory_id: str, **kwargs: Any) -> builtins.list[HistoryEntry]:
        return await self._run("history", memory_id, **kwargs)

    async def stats(self) -> Stats:
        return await self._run("stats")

    async def flush(self, timeout: float | None = None) -> bool:
        return await self._run("flush", timeout)

    async def close(self) -> None:
        await self._run("close")

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
