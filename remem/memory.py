"""The facade: ``Memory`` and ``AsyncMemory``, the one public entry point.

Memory is built from its configuration in :mod:`remem.facade.wiring`; its methods are
grouped by concern in :mod:`remem.facade` and hand their work to the layer that owns it.
AsyncMemory (:mod:`remem.facade.aio`) wraps it for asyncio code.
"""

from __future__ import annotations

import atexit
import builtins
import os
import time
import weakref
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ._inputs import (
    check_label,
    clean_text,
    parse_kinds,
    parse_provenance,
    parse_scope,
    parse_time,
)
from .config import Config
from .embed import Embedder
from .errors import NotFoundError, ValidationError
from .extract.plan_factory import Planner
from .facade.aio import AsyncMemory
from .facade.base import STATUSES
from .facade.items import ItemMethods
from .facade.logs import LogMethods
from .facade.parametric import ParametricMethods
from .facade.requests import RequestMethods
from .facade.review import ReviewMethods
from .facade.sharing import SharingMethods
from .facade.store_info import StoreMethods
from .facade.wiring import build
from .model import (
    EPISODE_KINDS,
    AddResult,
    Context,
    Hit,
    MemoryItem,
    Page,
)
from .store import Filters, Store

__all__ = ["AsyncMemory", "Memory"]

_MATURITIES = ("candidate", "confirmed", "canonical")


def _close_at_exit(ref: weakref.ReferenceType[Memory]) -> None:
    memory = ref()
    if memory is not None:
        memory.close()


class Memory(ItemMethods, ReviewMethods, LogMethods, RequestMethods, SharingMethods, ParametricMethods,
             StoreMethods):
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
        self.auditor = parts.auditor
        self._keys = parts.keys
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

    def run_jobs(self) -> None:
        """Run background jobs in this thread until :meth:`stop_jobs` is called (from a
        signal handler or another thread): a process that only works the queue
        (``remem worker``) beside processes that add with ``Config(run_worker=False)``."""
        self._check_open()
        self.worker.run_forever()

    def stop_jobs(self) -> None:
        """Make :meth:`run_jobs`, or the background thread, finish the job at hand and
        stop; queued work stays queued."""
        self.worker.stop()

    # --- writing ----------------------------------------------------------------------

    def add(self, messages: str | dict[str, Any] | Sequence[dict[str, Any] | str], *,
            user_id: str | None = None, agent_id: str | None = None, project: str | None = None,
            session_id: str | None = None, org_id: str | None = None,
            timestamp: str | datetime | None = None,
            metadata: dict[str, Any] | None = None,
            on_ready: Callable[[AddResult], object] | None = None,
            writer: str | None = None, door: str = "sdk") -> AddResult:
        """Store each message verbatim as an episode, in one transaction.

        ``messages`` is a string, a dict, or a list of dicts with ``role`` or ``speaker``,
        ``content`` or ``text``, and optional ``metadata`` and ``timestamp`` (ISO 8601;
        per message, else the call's, else now). Returns the episode ids, one per
        message in order, and the ids of the background jobs queued (embedding, extraction,
        prefetch). ``on_ready`` is called (in the worker's thread) with the same result
        once those jobs are over: the turns are then searchable by meaning and what they
        say is in the memories. ``writer``: as for :meth:`remember`.

        ``door`` names the way the turns came in (``sdk``, ``rest``, ``mcp``, ``hook``,
        ``cli``, ``import``, ``proxy``, ``agent``): each episode records it with its source
        (its speaker's role) and the trust they earn in ``provenance``, and so does every
        memory derived from it (see :mod:`remem.govern.provenance`).
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.add(messages, scope, timestamp=timestamp, metadata=metadata,
                                on_ready=on_ready, writer=writer, door=door)

    def add_events(self, events: Sequence[dict[str, Any]] | dict[str, Any], *,
                   user_id: str | None = None, agent_id: str | None = None,
                   project: str | None = None, session_id: str | None = None,
                   org_id: str | None = None, timestamp: str | datetime | None = None,
                   metadata: dict[str, Any] | None = None,
                   on_ready: Callable[[AddResult], object] | None = None,
                   door: str = "sdk") -> AddResult:
        """Store coding-agent events (tool calls, file edits, errors, task start/end) as
        episodes of kind ``event``; the event itself is kept in ``metadata["event"]``.
        Their source is ``tool`` (trust ``external``); ``door`` as for :meth:`add`."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.add_events(events, scope, timestamp=timestamp, metadata=metadata,
                                       on_ready=on_ready, door=door)

    def remember(self, text: str, *, kind: str = "fact", subject: str | None = None,
                 org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 session_id: str | None = None, role: str = "user", pinned: bool = False,
                 metadata: dict[str, Any] | None = None, writer: str | None = None,
                 event_time: str | datetime | None = None,
                 intent: str = "statement", door: str = "sdk") -> MemoryItem:
        """Propose a memory directly (an agent's "remember this"); returns the memory it
        became: a new one, an existing one it merged into, or one that supersedes an old
        one. The text is also kept verbatim as an episode, its source. ``event_time`` is
        when what it says happened; ``intent`` ``update`` or ``correction`` says it
        changes something known (the memory agent then looks harder for what it replaces).

        ``writer`` names the user who writes, when it is not the scope's owner: team
        memory, or a user's scope shared for writing (PermissionDeniedError without a
        write grant); the memory records it in ``metadata["writer"]``. ``role`` says who
        wrote the text (``user``, ``assistant``, ``tool``, ``import``) and ``door`` how it
        came in (as for :meth:`add`): the memory's ``provenance``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self._ingest.remember(text, scope, kind=kind, subject=subject, role=role,
                                     pinned=pinned, metadata=metadata, writer=writer,
                                     event_time=event_time, intent=intent, door=door)

    # --- reading ----------------------------------------------------------------------

    def search(self, query: str, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, k: int = 10, kinds: Sequence[str] | None = None,
               since: str | datetime | None = None, until: str | datetime | None = None,
               as_of: str | datetime | None = None, budget_tokens: int | None = None,
               include_episodes: bool = True, include_superseded: bool = False,
               include_archived: bool = False, include_shared: bool = True,
               trust: str | Sequence[str] | None = None,
               door: str | Sequence[str] | None = None) -> list[Hit]:
        """The memories that best answer ``query`` within the scope, best first.

        Each hit has its ``score``, the ``channels`` that found it (with its rank in
        each), ``reasons`` and the ``sources`` it came from. ``budget_tokens`` packs
        hits until the budget is spent; ``as_of`` shows what was valid at that time (by
        each memory's event time and validity, whenever it was added: a replayed history
        is searched as it stood) and resolves "last week" against it. What other users
        shared with the reader (see :meth:`share`) is searched too, each such hit labelled
        with ``shared_by`` (the grant) and a reason; ``include_shared=False`` leaves it out.
        ``trust`` (``user``, ``agent``, ``external``) and ``door`` keep the memories whose
        provenance has one of the values given.
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
        trusts, doors = parse_provenance(trust, door)
        filters = Filters(
            kinds=parse_kinds(kinds), include_episodes=include_episodes,
            statuses=statuses, since=parse_time(since, "since"), until=parse_time(until, "until"),
            as_of=as_of_ts, trust=trusts, doors=doors,
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
             limit: int = 50, cursor: str | None = None,
             trust: str | Sequence[str] | None = None,
             door: str | Sequence[str] | None = None) -> Page:
        """Memories in the scope, newest first, one page at a time (``page.next_cursor``).

        Derived memories only, unless ``include_episodes``; active ones only, unless
        ``include_inactive``. A project's list includes the user's memories that belong
        to no project, and the team's (``project`` / ``user_id`` None on the item).
        ``statuses`` names the statuses to list (instead of ``include_inactive``);
        ``as_of`` lists what was valid at that time (superseded memories among them);
        ``since`` / ``until`` bound the event time; ``maturity`` (candidate, confirmed,
        canonical) and ``subject`` keep the memories that have that value; ``trust`` and
        ``door`` (one value or several) those whose provenance has one of them.
        """
        self._check_open()
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id, nested=project is not None)
        if statuses is not None:
            statuses = tuple(statuses)
            unknown = sorted(set(statuses) - set(STATUSES))
            if unknown or not statuses:
                raise ValidationError("statuses", f"{unknown or 'none'}: use some of {', '.join(STATUSES)}")
        elif include_inactive:
            statuses = STATUSES
        else:
            statuses = ("active",)
        if maturity is not None and maturity not in _MATURITIES:
            raise ValidationError("maturity", f"{maturity!r}: use one of {', '.join(_MATURITIES)}")
        check_label(subject, "subject")
        kinds = parse_kinds(kinds) or None
        trusts, doors = parse_provenance(trust, door)
        filters = Filters(kinds=kinds, trust=trusts, doors=doors,
                          include_episodes=include_episodes
                          or bool(kinds and set(kinds) & set(EPISODE_KINDS)),
                          statuses=statuses, as_of=parse_time(as_of, "as_of"),
                          since=parse_time(since, "since"), until=parse_time(until, "until"),
                          maturity=maturity, subject=subject)
        return self.store.page(scope, filters, limit, cursor)

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
