"""The facade: ``Memory`` and ``AsyncMemory``, the one public entry point."""

from __future__ import annotations

import asyncio
import atexit
import builtins
import logging
import os
import re
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._inputs import (
    check_label,
    clean_text,
    parse_kinds,
    parse_scope,
    parse_time,
)
from .config import Config
from .embed import Embedder
from .errors import ClosedError, NotFoundError, ValidationError
from .extract.plan_factory import Planner, create_planner
from .facade.wiring import build
from .govern.audit import Auditor
from .memory_sharing import SharingMethods
from .model import (
    EPISODE_KINDS,
    AddResult,
    Context,
    HeedRate,
    HistoryEntry,
    Hit,
    Injection,
    JobInfo,
    Link,
    MemoryItem,
    Page,
    Scope,
    Share,
    Stats,
    TopicNode,
    new_id,
)
from .organize import decisions
from .organize.team import TeamPlan, team_plan
from .schedule import (
    Trigger,
    TriggerEvent,
    prefetch,
)
from .schedule.orchestrate import DoResult, Executor
from .schedule.reminders import (
    due_reminders,
    open_reminders,
    settle_reminder,
)
from .store import Filters, Store
from .store.base import Job, NewInjection
from .text import split_passages

__all__ = ["AsyncMemory", "Memory"]

log = logging.getLogger(__name__)

_STATUSES = ("active", "superseded", "archived", "forgotten", "held")
_MATURITIES = ("candidate", "confirmed", "canonical")
_LOGGED_CHARS = 20_000  # of an injected text, in the injection log
_DOOR = re.compile(r"(hook|mcp):[A-Za-z_]{1,64}|proxy|context|[a-z][a-z_-]{0,31}")


def _close_at_exit(ref: weakref.ReferenceType[Memory]) -> None:
    memory = ref()
    if memory is not None:
        memory.close()


class Memory(SharingMethods):
    """A memory store in one SQLite file, with hybrid search and a background worker.

    >>> with Memory("team.db") as m:
    ...     m.add("We deploy with `make ship`", user_id="alice", project="web")
    ...     m.flush()
    ...     hits = m.search("how do we deploy?", user_id="alice")

    ``path`` is a file, ``sqlite:///file.db`` or ``postgresql://user@host/database``
    (``pip install 'remem[postgres]'``); it defaults to ``Config.store``
    (``$REMEM_STORE_URL``), else ``$REMEM_HOME/remem.db`` (``~/.remem/remem.db``). ``config``
    defaults to :meth:`Config.from_env`; ``embedder`` overrides the configured one.
    ``reembed=True`` drops the store's vectors and queues every passage to be embedded
    again with this embedder (the way to switch models; ``flush()`` waits for it).
    ``create=False`` opens an existing store only: a path with no store raises
    :class:`StoreNotFoundError` instead of creating the file and its folders.
    ``clock`` gives the present as epoch seconds (default :func:`time.time`): what
    :meth:`do` resolves "tomorrow" against and when reminders come due.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 config: Config | None = None, embedder: Embedder | None = None,
                 reembed: bool = False, create: bool = True,
                 clock: Callable[[], float] | None = None) -> None:
        self.config = config or Config.from_env()
        self.clock: Callable[[], float] = clock or time.time
        parts = build(self.config, path, embedder=embedder, reembed=reembed, create=create,
                      clock=self.clock)
        self.path: Path | str = parts.path
        self.embedder = parts.embedder
        self.redactor = parts.redactor
        self.store: Store = parts.store
        self.auditor: Auditor | None = parts.auditor
        self.retriever = parts.retriever
        self.reader = parts.reader
        self.extractor = parts.extractor
        self.agent = parts.agent
        self.reminder_listeners = parts.reminder_listeners
        self.triggers = parts.triggers
        self.worker = parts.worker
        self._prefetcher = parts.prefetcher
        self._contexts = parts.contexts
        self._jobs = parts.jobs
        self._pending = self._jobs.ids  # what flush() waits for
        self._ingest = parts.ingest
        self._planner: Planner | None = None
        self._closed = False
        atexit.register(_close_at_exit, weakref.ref(self))
        # by an earlier process, or by reembed
        left_over = self.store.queued("embed") + self.store.queued("extract")
        if left_over:  # flush() waits for them too
            self._jobs.track(left_over)

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
        self._prefetcher.close()
        for part in (self.extractor, getattr(self._planner, "client", None)):
            close_part = getattr(part, "close", None)
            if close_part is not None:
                close_part()
        self.store.close()

    def __enter__(self) -> Memory:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the background work this Memory queued is over (and what an earlier
        process left queued, e.g. one that was killed); True if all of it succeeded, False
        if some is still running at ``timeout`` or failed for good (see ``stats().jobs``;
        the episodes stay searchable by full text)."""
        self._check_open()
        return self._jobs.flush(timeout)

    def wait(self, job_ids: Sequence[str], *, kinds: Sequence[str] | None = None,
             timeout: float | None = None) -> bool:
        """Wait for some jobs (those of ``kinds`` among them, if given), e.g. only the
        embedding of an add: True if they all succeeded before ``timeout``."""
        self._check_open()
        return self._jobs.wait(job_ids, kinds, timeout)

    # --- writing ----------------------------------------------------------------------

    def used(self, memory_ids: Sequence[str], *, org_id: str | None = None,
             user_id: str | None = None, agent_id: str | None = None,
             project: str | None = None) -> None:
        """Tell remem these memories were used together (e.g. in one answer): each gets
        stronger, and each pair's ``co_used`` edge, which the graph channel follows."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        ids = builtins.list(dict.fromkeys(memory_ids))
        for memory_id in ids:
            self.store.get(memory_id, scope)  # each must exist in the scope
        pairs = [(a, b, "co_used", 1.0) for i, a in enumerate(ids) for b in ids[i + 1:]]
        with self.store.transaction():
            self.store.touch(ids)
            self.store.mark_used(ids, scope, time.time())
            self.store.link(pairs + [(b, a, t, w) for a, b, t, w in pairs], add=True)

    def end_session(self, *, session_id: str, org_id: str | None = None,
                    user_id: str | None = None, agent_id: str | None = None,
                    project: str | None = None) -> builtins.list[str]:
        """Tell remem a session is over: fires the ``session_end`` triggers; returns the
        ids of the jobs they queued."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        with self.store.transaction():
            queued = self.triggers.fire(TriggerEvent("session_end", scope))
        if queued:
            self._jobs.track(queued)
        return builtins.list(queued)

    def _passages(self, text: str, speaker: str | None) -> list[str]:
        return self._ingest.passages(text, speaker)

    def add(self, messages: str | dict[str, Any] | Sequence[dict[str, Any] | str], *,
            user_id: str | None = None, agent_id: str | None = None, project: str | None = None,
            session_id: str | None = None, org_id: str | None = None,
            timestamp: str | datetime | None = None,
            metadata: dict[str, Any] | None = None,
            on_ready: Callable[[AddResult], object] | None = None,
            writer: str | None = None) -> AddResult:
        """Store each message verbatim as an episode, in one transaction.

        ``messages`` is a string, a dict, or a list of dicts with ``role`` or ``speaker``,
        ``content`` or ``text``, and optional ``metadata`` and ``timestamp`` (ISO 8601;
        per message, else the call's, else now). Returns the episode ids, one per
        message in order, and the ids of the background jobs queued (embedding, extraction,
        prefetch). ``on_ready`` is called (in the worker's thread) with the same result
        once those jobs are over: the turns are then searchable by meaning and what they
        say is in the memories. ``writer``: as for :meth:`remember`.
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.add(messages, scope, timestamp=timestamp, metadata=metadata,
                                on_ready=on_ready, writer=writer)

    def add_events(self, events: Sequence[dict[str, Any]] | dict[str, Any], *,
                   user_id: str | None = None, agent_id: str | None = None,
                   project: str | None = None, session_id: str | None = None,
                   org_id: str | None = None, timestamp: str | datetime | None = None,
                   metadata: dict[str, Any] | None = None,
                   on_ready: Callable[[AddResult], object] | None = None) -> AddResult:
        """Store coding-agent events (tool calls, file edits, errors, task start/end) as
        episodes of kind ``event``; the event itself is kept in ``metadata["event"]``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.add_events(events, scope, timestamp=timestamp, metadata=metadata,
                                       on_ready=on_ready)

    def _writable(self, memory_id: str, scope: Scope) -> Scope:
        """The exact scope in which the caller may change ``memory_id``: its own scope, or,
        from a project, the same user's memory outside any project. Never the team's or
        another user's (NotFoundError, as for any id outside the walls)."""
        if scope.project is None or scope.user_id is None:
            return scope
        item = self.store.get(memory_id, scope.model_copy(update={"nested": True}))
        if item.user_id != scope.user_id:
            raise NotFoundError(memory_id)
        return scope.model_copy(update={"project": item.project})

    def update(self, memory_id: str, *, text: str, reason: str | None = None,
               org_id: str | None = None, user_id: str | None = None,
               project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """Give a derived memory new text as a new version; ``history`` keeps the old one."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        body = self.redactor.text(clean_text(text, "text", self.config.max_text_chars))
        check_label(reason, "reason")
        reason = self.redactor.maybe(reason)
        job_id = new_id("j_")
        item = self.store.update_text(memory_id, scope, body,
                                      split_passages(body, self.config.chunk_tokens), reason, job_id)
        self._jobs.track([job_id])
        return item

    def forget(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
               user_id: str | None = None, project: str | None = None,
               agent_id: str | None = None) -> MemoryItem:
        """Hide a memory from search; it stays in the file and in its history."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        check_label(reason, "reason")
        reason = self.redactor.maybe(reason)
        return decisions.forget(self.store, self.agent.mindmap, memory_id, scope, reason)

    def restore(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
                user_id: str | None = None, project: str | None = None,
                agent_id: str | None = None) -> MemoryItem:
        """Make a forgotten, archived or superseded memory active again (searchable, shown
        to the agent); the history keeps what happened. Held items go through :meth:`review`."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        check_label(reason, "reason")
        item = self.store.get(memory_id, scope)
        if item.status not in ("forgotten", "archived", "superseded"):
            raise ValidationError("id", f"{memory_id} is {item.status}; only a forgotten, archived "
                                  "or superseded memory can be restored")
        return self.store.set_status(memory_id, scope, "active",
                                     self.redactor.maybe(reason) or "restored")

    def pin(self, memory_id: str, *, pinned: bool = True, org_id: str | None = None,
            user_id: str | None = None, project: str | None = None,
            agent_id: str | None = None) -> MemoryItem:
        """Pin a memory (it never decays and stays in the core block) or, with
        ``pinned=False``, unpin it."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        self.store.set_fields(memory_id, scope, action="pinned" if pinned else "unpinned",
                              reason=None, pinned=bool(pinned))
        return self.store.get(memory_id, scope)

    def purge(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
              project: str | None = None, agent_id: str | None = None) -> list[str]:
        """Delete a memory for good, with everything derived from it; returns the deleted ids."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        ids = decisions.purge(self.store, self.agent.mindmap, memory_id, scope)
        self._contexts.clear()
        return ids

    # --- reading ----------------------------------------------------------------------

    def search(self, query: str, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, k: int = 10, kinds: Sequence[str] | None = None,
               since: str | datetime | None = None, until: str | datetime | None = None,
               as_of: str | datetime | None = None, budget_tokens: int | None = None,
               include_episodes: bool = True, include_superseded: bool = False,
               include_archived: bool = False, include_shared: bool = True) -> list[Hit]:
        """The memories that best answer ``query`` within the scope, best first.

        Each hit has its ``score``, the ``channels`` that found it (with its rank in
        each), ``reasons`` and the ``sources`` it came from. ``budget_tokens`` packs
        hits until the budget is spent; ``as_of`` shows what was valid at that time (by
        each memory's event time and validity, whenever it was added: a replayed history
        is searched as it stood) and resolves "last week" against it. What other users
        shared with the reader (see :meth:`share`) is searched too, each such hit labelled
        with ``shared_by`` (the grant) and a reason; ``include_shared=False`` leaves it out.
        """
        self._check_open()
        query = clean_text(query, "query", self.config.max_text_chars)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValidationError("k", f"expected a positive integer, got {k!r}")
        if budget_tokens is not None and (not isinstance(budget_tokens, int) or budget_tokens < 1):
            raise ValidationError("budget_tokens", f"expected a positive integer, got {budget_tokens!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id).model_copy(update={"nested": True})
        statuses = ("active",) + (("superseded",) if include_superseded else ()) + (
            ("archived",) if include_archived else ())
        as_of_ts = parse_time(as_of, "as_of")
        filters = Filters(
            kinds=parse_kinds(kinds), include_episodes=include_episodes,
            statuses=statuses, since=parse_time(since, "since"), until=parse_time(until, "until"),
            as_of=as_of_ts,
        )
        # "yesterday" is a UTC day, with or without as_of, as naive times are UTC
        now = datetime.fromtimestamp(self.clock() if as_of_ts is None else as_of_ts, timezone.utc)
        hits = self.retriever(query, scope=scope, filters=filters, k=k,
                              budget_tokens=budget_tokens, now=now)
        if include_shared and budget_tokens is None:
            hits = self._with_shared(hits, query, scope, filters, k, now)
        return hits

    def get(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
            project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """One memory (or episode) by id, whatever its status."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        try:
            return self.store.get(memory_id, scope)
        except NotFoundError:
            for entry in self.sharing.readable(scope):  # what a grant lets the reader see
                try:
                    return self.store.get(memory_id, entry.scope)
                except NotFoundError:
                    continue
            raise

    def list(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             session_id: str | None = None, kinds: Sequence[str] | None = None,
             include_episodes: bool = False, include_inactive: bool = False,
             statuses: Sequence[str] | None = None, as_of: str | datetime | None = None,
             since: str | datetime | None = None, until: str | datetime | None = None,
             maturity: str | None = None, subject: str | None = None,
             limit: int = 50, cursor: str | None = None) -> Page:
        """Memories in the scope, newest first, one page at a time (``page.next_cursor``).

        Derived memories only, unless ``include_episodes``; active ones only, unless
        ``include_inactive``. A project's list includes the user's memories that belong
        to no project, and the team's (``project`` / ``user_id`` None on the item).
        ``statuses`` names the statuses to list (instead of ``include_inactive``);
        ``as_of`` lists what was valid at that time (superseded memories among them);
        ``since`` / ``until`` bound the event time; ``maturity`` (candidate, confirmed,
        canonical) and ``subject`` keep the memories that have that value.
        """
        self._check_open()
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id, nested=project is not None)
        if statuses is not None:
            statuses = tuple(statuses)
            unknown = sorted(set(statuses) - set(_STATUSES))
            if unknown or not statuses:
                raise ValidationError("statuses", f"{unknown or 'none'}: use some of {', '.join(_STATUSES)}")
        elif include_inactive:
            statuses = _STATUSES
        else:
            statuses = ("active",)
        if maturity is not None and maturity not in _MATURITIES:
            raise ValidationError("maturity", f"{maturity!r}: use one of {', '.join(_MATURITIES)}")
        check_label(subject, "subject")
        kinds = parse_kinds(kinds) or None
        filters = Filters(kinds=kinds,
                          include_episodes=include_episodes
                          or bool(kinds and set(kinds) & set(EPISODE_KINDS)),
                          statuses=statuses, as_of=parse_time(as_of, "as_of"),
                          since=parse_time(since, "since"), until=parse_time(until, "until"),
                          maturity=maturity, subject=subject)
        return self.store.page(scope, filters, limit, cursor)

    def held(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             limit: int = 100) -> builtins.list[MemoryItem]:
        """What waits for a person's review: turns, tool output and memories held because
        they read as instructions to the agent (see :meth:`review`), newest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=project is not None)
        filters = Filters(include_episodes=True, statuses=("held",))
        return list(self.store.page(scope, filters, limit, None))

    def review(self, memory_id: str, *, approve: bool, note: str | None = None,
               org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        """Decide on a held item: approved, it becomes active (searchable, shown to the
        agent); rejected, it is forgotten (soft, with history; ``purge`` deletes it)."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        decisions.decide_held(self.store, memory_id, scope, approve=approve,
                              note=self.redactor.maybe(note))
        self._jobs.wake()
        return self.store.get(memory_id, scope)

    def links(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
              project: str | None = None, agent_id: str | None = None,
              limit: int = 100) -> builtins.list[Link]:
        """The edges of a memory in the memory network (supersedes, derived_from, co_used,
        related...), heaviest first, each with the memory at its other end; memories
        outside the scope are left out."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        item = self.store.get(memory_id, scope)
        rowid = self.store.rowids([item.id])[item.id]
        edges = self.store.edge_list(rowid, limit)
        seen = self.store.accept([o for o, _, _, _ in edges], scope,
                                 Filters(include_episodes=True, statuses=_STATUSES))
        others = self.store.get_rows(seen)
        return [Link(type=t, direction=d, weight=w, memory=others[o])  # type: ignore[arg-type]
                for o, t, d, w in edges if o in others]

    def around(self, memory_id: str, *, window: int = 1, org_id: str | None = None,
               user_id: str | None = None, project: str | None = None,
               agent_id: str | None = None) -> tuple[builtins.list[MemoryItem], builtins.list[MemoryItem]]:
        """The turns of the same session just before and just after an episode (up to
        ``window`` each side, in session order), inside the scope; empty for a memory
        that is not a turn of a session."""
        self._check_open()
        if window < 0:
            raise ValidationError("window", f"must be 0 or more, got {window}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=True)
        item = self.store.get(memory_id, scope)
        if not item.is_episode or not item.session_id or window == 0:
            return [], []
        rowid = self.store.rowids([item.id])[item.id]
        pairs = self.store.neighbors([rowid], window, scope,
                                     Filters(include_episodes=True, statuses=_STATUSES))
        found = self.store.get_rows([n for n, _ in pairs])
        before = [found[n] for n, _ in sorted(pairs) if n < rowid and n in found]
        after = [found[n] for n, _ in sorted(pairs) if n > rowid and n in found]
        return before, after

    def flagged(self, *, org_id: str | None = None, user_id: str | None = None,
                agent_id: str | None = None, project: str | None = None,
                limit: int = 100) -> builtins.list[MemoryItem]:
        """Active memories flagged for review because a memory they were derived from was
        superseded (``metadata["review"]`` says which), newest first; see :meth:`settle_flag`."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=project is not None)
        found = self.store.derived(scope, limit=2000)
        return [m for m in found if m.metadata.get("review") and not m.metadata.get("reviewed")][:limit]

    def settle_flag(self, memory_id: str, *, keep: bool, org_id: str | None = None,
                    user_id: str | None = None, agent_id: str | None = None,
                    project: str | None = None) -> MemoryItem:
        """Decide on a flagged memory: kept, its flag is cleared; otherwise it is forgotten."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        decisions.settle_flag(self.store, memory_id, scope, keep=keep)
        return self.store.get(memory_id, scope)

    def history(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                project: str | None = None, agent_id: str | None = None) -> builtins.list[HistoryEntry]:
        """Every version and status change of a memory, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        return self.store.history(memory_id, scope)

    # --- context for a model ----------------------------------------------------------

    def context(self, *, org_id: str | None = None, user_id: str | None = None,
                agent_id: str | None = None, project: str | None = None,
                session_id: str | None = None, query: str | None = None,
                budget_tokens: int = 1000, log: bool = False, door: str = "context") -> Context:
        """A context block ready for a model, within ``budget_tokens``.

        First the core block (see :mod:`remem.retrieve.context`): the persona,
        preferences, profile, conventions, pitfalls, project facts, procedures,
        decisions, files and approved skills of the user and the project, the user's
        memories outside any project and the team's included and labelled, in a stable
        order (so a provider's prompt cache hits); then the session's working memory
        (what prefetch prepared); then, if ``query`` is given, what a search finds that
        neither holds, memories before turns and nothing under the relevance floor.

        ``log=True`` records the block in the injection log under ``door`` (see
        :meth:`injections`): do it when the block is handed to a model.
        """
        self._check_open()
        ctx = self._context(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id, query=query, budget_tokens=budget_tokens)
        if log:
            self.log_context(ctx, door=door, query=query, org_id=org_id, user_id=user_id,
                             agent_id=agent_id, project=project, session_id=session_id)
        return ctx

    def log_context(self, ctx: Context, *, door: str, query: str | None = None,
                    org_id: str | None = None, user_id: str | None = None,
                    agent_id: str | None = None, project: str | None = None,
                    session_id: str | None = None) -> Injection | None:
        """Record that the block ``ctx`` (from :meth:`context`) was handed to a model
        through ``door``; nothing is recorded for an empty block (None)."""
        given = [(memory_id, section, ctx.channels.get(memory_id, []))
                 for section, ids in ctx.sections.items() for memory_id in ids]
        if not given:
            return None
        return self.log_injection(door=door, given=given, tokens=ctx.tokens, query=query,
                                  org_id=org_id, user_id=user_id, agent_id=agent_id,
                                  project=project, session_id=session_id, text=ctx.text)

    def _context(self, *, org_id: str | None, user_id: str | None, agent_id: str | None,
                 project: str | None, session_id: str | None, query: str | None,
                 budget_tokens: int) -> Context:
        if not isinstance(budget_tokens, int) or isinstance(budget_tokens, bool) or budget_tokens < 1:
            raise ValidationError("budget_tokens", f"expected a positive integer, got {budget_tokens!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        if query is not None:
            query = clean_text(query, "query", self.config.max_text_chars)

        def search(tokens: int) -> builtins.list[Hit]:
            assert query is not None
            return self.search(query, org_id=org_id, user_id=user_id, agent_id=agent_id,
                               project=project, k=20, budget_tokens=tokens)

        return self._contexts(scope, budget_tokens=budget_tokens,
                              search=search if query is not None else None)

    # --- the injection log ------------------------------------------------------------

    def log_injection(self, *, door: str, given: Sequence[tuple[str, str, Sequence[str]]],
                      tokens: int, query: str | None = None, org_id: str | None = None,
                      user_id: str | None = None, agent_id: str | None = None,
                      project: str | None = None, session_id: str | None = None,
                      text: str | None = None, at: str | datetime | None = None) -> Injection:
        """Record that the memories ``given`` were handed to a model through ``door``
        (``hook:<event>``, ``mcp:<tool>``, ``proxy``, ``context``...), in the scope of the
        agent and session that got them.

        ``given`` is ``(memory id, section, channels)`` in the order of the text; the
        entry keeps the query (shortened), the ``text`` given (its first 20,000
        characters) and its ``tokens``. The log is kept
        within ``config.injection_log_days`` and ``config.injection_log_rows``.
        """
        self._check_open()
        if not isinstance(door, str) or not _DOOR.fullmatch(door):
            raise ValidationError("door", f"{door!r} is not a door; use hook:<event>, "
                                  "mcp:<tool>, proxy or context")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise ValidationError("tokens", f"expected a count of tokens, got {tokens!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        when = parse_time(at, "at")
        query, text = self.redactor.maybe(query), self.redactor.maybe(text)
        entry = NewInjection(id=new_id("i_"), at=time.time() if when is None else when, door=door,
                             scope=scope, query=None if query is None else query[:2000],
                             tokens=tokens, items=[(str(i), str(s), [str(c) for c in ch])
                                                   for i, s, ch in given],
                             text=None if text is None else str(text)[:_LOGGED_CHARS])
        self.store.log_injection(entry, keep_days=self.config.injection_log_days,
                                 keep_rows=self.config.injection_log_rows)
        return self.store.injection(entry.id, scope)

    def injections(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None,
                   session_id: str | None = None, door: str | None = None,
                   limit: int = 50, cursor: str | None = None) -> Page:
        """What was handed to models in the scope, newest first, one page at a time
        (``page.next_cursor``): each :class:`~remem.model.Injection` with its memories in
        order and whether each was used afterwards."""
        self._check_open()
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        check_label(door, "door")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        found, cursor = self.store.injections(scope, door=door, limit=limit, cursor=cursor)
        return Page(found, cursor)  # type: ignore[arg-type]

    def injected(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 limit: int = 20) -> builtins.list[Injection]:
        """The latest injections in the scope that gave this memory, newest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return self.store.injections_of(memory_id, scope, limit)

    def heed(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             session_id: str | None = None,
             since: str | datetime | None = None) -> builtins.list[HeedRate]:
        """The heed rates of the scope: for each door and kind, how many memories were
        injected and how many of them the agent then used (:meth:`used`, or ``helpful``
        feedback)."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self.store.heed_rates(scope, since=parse_time(since, "since"))

    def use_activation(self, activation: Any, *, org_id: str | None = None,
                       user_id: str | None = None, agent_id: str | None = None,
                       project: str | None = None, budget_tokens: int = 1000) -> None:
        """Keep an :class:`~remem.tiers.ActivationMemory`'s KV cache of this scope's core
        block current: after turns of the scope, a ``kv-build`` job rebuilds it if the
        block changed (the cache file is keyed by the block, so an unchanged block costs
        nothing). It is built once now."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        where = scope.model_dump()

        def build(job: Job) -> None:
            block = self.context(**where, budget_tokens=budget_tokens).core_text
            cache = activation.prepare(block) if block else None
            self.store.finish_job(job, {"tokens": 0 if cache is None else cache.tokens})

        self.worker.handlers["kv-build"] = build
        self.triggers.add(Trigger(f"kv-build:{where}", on="turn", job="kv-build", coalesce=True,
                                  payload=lambda event: {"scope": where}))
        block = self.context(**where, budget_tokens=budget_tokens).core_text
        if block:
            activation.prepare(block)

    def prefetch(self, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 session_id: str) -> builtins.list[str]:
        """Warm a session's working memory now from its latest turns (a job does this
        after each turn); returns the ids warmed."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        if scope.session_id is None:
            raise ValidationError("session_id", "prefetch needs the session whose memory to warm")
        return prefetch(self.store, self._prefetcher, self.config.agent, scope)

    # --- the memory agent -------------------------------------------------------------

    def remember(self, text: str, *, kind: str = "fact", subject: str | None = None,
                 org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 session_id: str | None = None, role: str = "user", pinned: bool = False,
                 metadata: dict[str, Any] | None = None, writer: str | None = None,
                 event_time: str | datetime | None = None,
                 intent: str = "statement") -> MemoryItem:
        """Propose a memory directly (an agent's "remember this"); returns the memory it
        became: a new one, an existing one it merged into, or one that supersedes an old
        one. The text is also kept verbatim as an episode, its source. ``event_time`` is
        when what it says happened; ``intent`` ``update`` or ``correction`` says it
        changes something known (the memory agent then looks harder for what it replaces).

        ``writer`` names the user who writes, when it is not the scope's owner: team
        memory, or a user's scope shared for writing (PermissionDeniedError without a
        write grant); the memory records it in ``metadata["writer"]``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.remember(text, scope, kind=kind, subject=subject, role=role,
                                     pinned=pinned, metadata=metadata, writer=writer,
                                     event_time=event_time, intent=intent)

    # --- requests in plain language, reminders, team plans ---------------------------

    @property
    def planner(self) -> Planner:
        """What :meth:`do` plans with (``config.agent.planner``), made on first use."""
        if self._planner is None:
            self._planner = create_planner(self.config.agent, self.reader)
        return self._planner

    def do(self, text: str, *, org_id: str | None = None, user_id: str | None = None,
           agent_id: str | None = None, project: str | None = None,
           dry_run: bool = False) -> DoResult:
        """Carry out a request in plain language (English or Chinese): it is planned as
        memory operators (remember, update, forget, search, summarise, link, remind, pin,
        share; see :mod:`remem.extract.plan`), relative dates resolved against
        :attr:`clock`, and run in one transaction. ``dry_run`` returns the plan only.

        >>> m.do("Record yesterday's meeting with Li Lei and remind me the day after "
        ...      "tomorrow to write the technical report", user_id="alice")   # doctest: +SKIP
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        body = clean_text(text, "text", self.config.max_text_chars)
        plan = self.planner.plan(body, datetime.fromtimestamp(self.clock(), timezone.utc))
        result = DoResult(request=body, planner=plan.planner, dry_run=dry_run, steps=plan.steps)
        if dry_run:
            return result
        done = Executor(self, scope, now=self.clock, screen=self.agent.screen_text,
                        chunk_tokens=self.config.chunk_tokens).run(plan)
        self._jobs.track(self.store.queued("embed"))
        return result.model_copy(update={"results": done})

    def reminders(self, *, org_id: str | None = None, user_id: str | None = None,
                  agent_id: str | None = None, project: str | None = None,
                  due: bool = False) -> builtins.list[MemoryItem]:
        """The user's open reminders, soonest first (``due``: only those due now by
        :attr:`clock`); the due date is ``metadata["reminder"]["due_date"]``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        if due:
            return due_reminders(self.store, scope, self.clock())
        return open_reminders(self.store, scope)

    def dismiss_reminder(self, memory_id: str, *, done: bool = False,
                         org_id: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        """Dismiss a reminder (``done=True``: mark it done): it leaves the context blocks."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        return settle_reminder(self.store, memory_id, scope, "done" if done else "dismissed",
                               now=self.clock())

    def plan(self, request: str, *, org_id: str | None = None, user_id: str | None = None,
             project: str | None = None, agent_id: str = "leader") -> TeamPlan:
        """The team skills of ``agent_id`` (the leader) that apply to ``request``, each
        with its proposed split: roles (agent ids), their order, dependencies and checks;
        empty when none applies. Skills are learned from what the user tells the leader
        (see :mod:`remem.organize.team`)."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        body = clean_text(request, "request", self.config.max_text_chars)
        return team_plan(self.store, self.reader, scope, body)

    def feedback(self, memory_id: str, verdict: str, note: str | None = None, *,
                 org_id: str | None = None, user_id: str | None = None,
                 project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """Tell the memory agent how a memory did: ``helpful`` strengthens and matures it,
        ``wrong`` forgets it, ``stale`` archives it. Kept in its history with the note."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        if verdict not in decisions.VERDICTS:
            raise ValidationError("verdict", f"{verdict!r} is not a verdict; use helpful, wrong or stale")
        if note is not None:
            note = self.redactor.text(clean_text(note, "note", 2000))
        decisions.feedback(self.store, memory_id, scope, verdict, note)
        return self.store.get(memory_id, scope)

    def tree(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None) -> TopicNode:
        """The mind map of a scope: topics, subtopics and the memories under them."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        return self.agent.mindmap.tree(scope)

    def skills(self, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               status: str | None = None) -> builtins.list[MemoryItem]:
        """Skill candidates and approved skills of a scope (``status`` "candidate" or
        "approved" narrows it); an approved skill's SKILL.md is in ``metadata["skill_md"]``."""
        self._check_open()
        if status not in (None, "candidate", "approved"):
            raise ValidationError("status", f"{status!r}: use candidate or approved")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        found = self.store.derived(scope, ["skill"], limit=1000)
        return [s for s in found if status is None or s.metadata.get("skill_status") == status]

    def approve_skill(self, memory_id: str, *, org_id: str | None = None,
                      user_id: str | None = None, agent_id: str | None = None,
                      project: str | None = None) -> MemoryItem:
        """Approve a skill candidate: it becomes canonical and gets its SKILL.md."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        decisions.approve_skill(self.store, memory_id, scope)
        return self.store.get(memory_id, scope)

    def decay(self, *, now: str | datetime | None = None,
              org_id: str | None = None) -> builtins.list[str]:
        """Archive the memories (of one org, or all) whose strength fell under the
        threshold (pinned ones never); returns their ids. Runs nightly as a job; this runs
        it now."""
        self._check_open()
        from .organize.strength import decay

        at = parse_time(now, "now")
        check_label(org_id, "org_id")
        with self.store.transaction():
            return decay(self.store, self.config.agent, at, org_id)

    def strength(self, memory_id: str, *, now: str | datetime | None = None,
                 org_id: str | None = None, user_id: str | None = None,
                 project: str | None = None, agent_id: str | None = None) -> float:
        """How strong a memory is at ``now`` (default: the present): 1.0 when new or just
        used, halving every half-life of its kind unused, higher with use and maturity.
        Under ``config.agent.archive_below`` the nightly decay archives it (unless pinned)."""
        self._check_open()
        from .organize.strength import strength

        at = parse_time(now, "now")
        item = self.get(memory_id, org_id=org_id, user_id=user_id, project=project,
                        agent_id=agent_id)
        uses, used_at = self.store.use_stats([item.id]).get(item.id, (0, None))
        return strength(item, uses, used_at, time.time() if at is None else at,
                        self.config.agent.half_life_days)

    # --- the audit log ----------------------------------------------------------------

    def record_access(self, *, door: str, action: str, org_id: str | None = None,
                      user_id: str | None = None, actor: str | None = None,
                      key_id: str | None = None, target: str | None = None,
                      status: int | None = None) -> str:
        """Record in the audit log that ``actor`` (with API key ``key_id``) did ``action``
        through ``door`` (rest, mcp or cli) on ``target``, in the walls of ``org_id`` and
        ``user_id``; returns the entry's id. The doors call this; it is no place for text."""
        self._check_open()
        for name, value in (("action", action), ("org_id", org_id), ("user_id", user_id),
                            ("actor", actor), ("key_id", key_id), ("target", target)):
            check_label(value, name)
        assert self.auditor is not None
        return self.auditor.record(door=door, action=action, org_id=org_id, user_id=user_id,
                                   actor=actor, key_id=key_id, target=target, status=status)

    def audit(self, *, org_id: str | None = None, user_id: str | None = None,
              door: str | None = None, actor: str | None = None, key_id: str | None = None,
              action: str | None = None, target: str | None = None,
              since: str | datetime | None = None, until: str | datetime | None = None,
              limit: int = 50, cursor: str | None = None) -> Page:
        """The audit log of an org (default: the default org), or of one user's data in it,
        newest first: who did what through which door, with which key, when. ``action``
        matches as a prefix (``POST``, ``GET /v1/memories``, ``memory_``)."""
        self._check_open()
        for name, value in (("org_id", org_id), ("user_id", user_id), ("actor", actor),
                            ("key_id", key_id), ("action", action), ("target", target)):
            check_label(value, name)
        assert self.auditor is not None
        return self.auditor.read(org_id=org_id, user_id=user_id, door=door, actor=actor,
                                 key_id=key_id, action=action, target=target,
                                 since=parse_time(since, "since"), until=parse_time(until, "until"),
                                 limit=limit, cursor=cursor)

    # --- jobs -------------------------------------------------------------------------

    def jobs(self, *, state: str | None = None, kind: str | None = None,
             org_id: str | None = None, user_id: str | None = None,
             limit: int = 50) -> builtins.list[JobInfo]:
        """Background jobs, newest first: what is queued, running, done or failed, and why.
        ``org_id`` keeps the jobs of that org's data; ``user_id`` those of one user's."""
        self._check_open()
        if state not in (None, "queued", "running", "done", "failed", "cancelled"):
            raise ValidationError("state", f"{state!r}: use queued, running, done, failed or cancelled")
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        check_label(org_id, "org_id")
        check_label(user_id, "user_id")
        if user_id is not None and org_id is None:
            org_id = "default"
        return self.store.jobs(state=state, kind=kind, org_id=org_id, user_id=user_id, limit=limit)

    def retry_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        """Queue a failed (or cancelled) job again (with ``org_id``: only that org's)."""
        self._check_open()
        job = self.store.retry_job(job_id, org_id)
        self._jobs.track([job_id])
        return job

    def cancel_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        """Cancel a queued or failed job (with ``org_id``: only that org's)."""
        self._check_open()
        return self.store.cancel_job(job_id, org_id)

    def export(self, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, include_episodes: bool = True) -> Iterator[MemoryItem]:
        """Every memory in the scope, whatever its status, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self.store.export(scope, include_episodes)

    def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> Stats:
        """Counts of episodes, memories, passages, vectors and jobs, and the file size: of
        the whole store, or of one org (``org_id``), or of one user (``user_id``, of the
        default org unless ``org_id`` names one; the size is then 0)."""
        self._check_open()
        check_label(org_id, "org_id")
        check_label(user_id, "user_id")
        if user_id is not None and org_id is None:
            org_id = "default"
        return Stats(**self.store.stats(org_id=org_id, user_id=user_id))


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

    async def stats(self, **kwargs: Any) -> Stats:
        return await self._run("stats", **kwargs)

    async def remember(self, text: str, **kwargs: Any) -> MemoryItem:
        return await self._run("remember", text, **kwargs)

    async def feedback(self, memory_id: str, verdict: str, note: str | None = None,
                       **kwargs: Any) -> MemoryItem:
        return await self._run("feedback", memory_id, verdict, note, **kwargs)

    async def used(self, memory_ids: Sequence[str], **kwargs: Any) -> None:
        await self._run("used", memory_ids, **kwargs)

    async def context(self, **kwargs: Any) -> Context:
        return await self._run("context", **kwargs)

    async def prefetch(self, **kwargs: Any) -> builtins.list[str]:
        return await self._run("prefetch", **kwargs)

    async def end_session(self, **kwargs: Any) -> builtins.list[str]:
        return await self._run("end_session", **kwargs)

    async def tree(self, **kwargs: Any) -> TopicNode:
        return await self._run("tree", **kwargs)

    async def skills(self, **kwargs: Any) -> builtins.list[MemoryItem]:
        return await self._run("skills", **kwargs)

    async def approve_skill(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("approve_skill", memory_id, **kwargs)

    async def decay(self, **kwargs: Any) -> builtins.list[str]:
        return await self._run("decay", **kwargs)

    async def jobs(self, **kwargs: Any) -> builtins.list[JobInfo]:
        return await self._run("jobs", **kwargs)

    async def retry_job(self, job_id: str, **kwargs: Any) -> JobInfo:
        return await self._run("retry_job", job_id, **kwargs)

    async def cancel_job(self, job_id: str, **kwargs: Any) -> JobInfo:
        return await self._run("cancel_job", job_id, **kwargs)

    async def restore(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("restore", memory_id, **kwargs)

    async def pin(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("pin", memory_id, **kwargs)

    async def log_injection(self, **kwargs: Any) -> Injection:
        return await self._run("log_injection", **kwargs)

    async def injections(self, **kwargs: Any) -> Page:
        return await self._run("injections", **kwargs)

    async def heed(self, **kwargs: Any) -> builtins.list[HeedRate]:
        return await self._run("heed", **kwargs)

    async def share(self, **kwargs: Any) -> Share:
        return await self._run("share", **kwargs)  # type: ignore[no-any-return]

    async def unshare(self, share_id: str, **kwargs: Any) -> Share:
        return await self._run("unshare", share_id, **kwargs)  # type: ignore[no-any-return]

    async def shares(self, **kwargs: Any) -> builtins.list[Share]:
        return await self._run("shares", **kwargs)  # type: ignore[no-any-return]

    async def pack_cube(self, out: Any = None, **kwargs: Any) -> Any:
        return await self._run("pack_cube", out, **kwargs)

    async def install_cube(self, source: Any, **kwargs: Any) -> Any:
        return await self._run("install_cube", source, **kwargs)

    async def uninstall_cube(self, name: str, **kwargs: Any) -> builtins.list[str]:
        return await self._run("uninstall_cube", name, **kwargs)  # type: ignore[no-any-return]

    async def export_pam(self, **kwargs: Any) -> dict[str, Any]:
        return await self._run("export_pam", **kwargs)  # type: ignore[no-any-return]

    async def import_pam(self, document: Any, **kwargs: Any) -> builtins.list[str]:
        return await self._run("import_pam", document, **kwargs)  # type: ignore[no-any-return]

    async def do(self, text: str, **kwargs: Any) -> DoResult:
        return await self._run("do", text, **kwargs)

    async def plan(self, request: str, **kwargs: Any) -> TeamPlan:
        return await self._run("plan", request, **kwargs)

    async def reminders(self, **kwargs: Any) -> builtins.list[MemoryItem]:
        return await self._run("reminders", **kwargs)

    async def dismiss_reminder(self, memory_id: str, **kwargs: Any) -> MemoryItem:
        return await self._run("dismiss_reminder", memory_id, **kwargs)

    async def flush(self, timeout: float | None = None) -> bool:
        return await self._run("flush", timeout)

    async def close(self) -> None:
        await self._run("close")

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
