"""The storage protocol every backend implements, and the records that cross it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..model import (
    AuditEntry,
    HeedRate,
    HistoryEntry,
    Injection,
    JobInfo,
    MemoryItem,
    Page,
    Provenance,
    Scope,
    Share,
    Source,
)

__all__ = ["ApiKeyStore", "AuditLog", "CopyStore", "Filters", "GraphStore", "InjectionLog", "Job",
           "JobStore", "MemoryStore", "NewAudit", "NewInjection", "NewMemory", "RecallStore", "ShareStore",
           "Store", "TopicRowLike", "Transaction", "WorkingMemoryStore"]


@dataclass(frozen=True)
class NewMemory:
    """A memory to insert, with its passages (already split) and source episode ids.

    ``provenance`` None: a derived memory inherits the provenance of its sources (the least
    trusted wins; with none, the default), an episode gets the default (``sdk``, ``user``)."""

    id: str
    kind: str
    text: str
    raw: bool
    scope: Scope
    observed_at: float
    event_time: float | None = None
    role: str | None = None
    subject: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    passages: Sequence[str] = ()
    source_ids: Sequence[str] = ()
    provenance: Provenance | None = None


@dataclass(frozen=True)
class Filters:
    """What a recall may return, beyond the scope wall. Times are epoch seconds."""

    kinds: tuple[str, ...] | None = None
    include_episodes: bool = True
    statuses: tuple[str, ...] = ("active",)
    since: float | None = None
    until: float | None = None
    as_of: float | None = None
    maturity: str | None = None
    subject: str | None = None
    #: trust levels to keep (None: any)
    trust: tuple[str, ...] | None = None
    #: doors to keep (None: any)
    doors: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NewInjection:
    """An injection to record: ``items`` are ``(memory id, section, channels)`` in the
    order the text gave them; ``at`` is epoch seconds."""

    id: str
    at: float
    door: str
    scope: Scope
    query: str | None
    tokens: int
    items: Sequence[tuple[str, str, Sequence[str]]] = ()
    text: str | None = None


@dataclass(frozen=True)
class NewAudit:
    """An audit entry to record (see :class:`~remem.model.AuditEntry`); ``at`` is epoch
    seconds."""

    id: str
    at: float
    door: str
    action: str
    org_id: str
    user_id: str | None = None
    actor: str | None = None
    key_id: str | None = None
    target: str | None = None
    status: int | None = None


@dataclass(frozen=True)
class Job:
    """A claimed background job."""

    rowid: int
    id: str
    kind: str
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True)
class Transaction:
    """An open transaction: opaque to the layers above; ``depth`` 0 is the outermost."""

    depth: int


class TopicRowLike(Protocol):
    """One node of the mind map as a store returns it."""

    rowid: int
    parent: int | None
    label: str
    keywords: dict[str, int]
    size: int


class MemoryStore(Protocol):
    """Episodes and memories: writes, reads, history, and the store's lifecycle.

    Every method that takes a ``scope`` enforces it in its query: nothing outside the
    scope is read, changed or returned. Memories are named by id at this boundary and
    by an integer row id between the store and the retriever.
    """

    path: str

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[Transaction]:
        """One transaction; nested inside another on the same thread, a savepoint (an
        inner failure rolls back alone). Every write method joins the open one."""

    def write(self, *, changes: bool = True) -> AbstractContextManager[Any]:
        """A transaction that, nested inside another, joins it (commits with it);
        ``changes=False`` leaves :meth:`change_token` as it is (writes that change no
        memory, such as the injection log)."""

    def change_token(self) -> int:
        """A number that grows with every committed write, by any process or thread."""

    def insert(self, items: Sequence[NewMemory], embed_job_id: str | None) -> None:
        """Memories with their passages, full text and sources, and one job that embeds
        the passages."""

    def update_text(self, memory_id: str, scope: Scope, text: str, passages: Sequence[str],
                    reason: str | None, embed_job_id: str) -> MemoryItem:
        """A new version of a derived memory; the old text stays in its history."""

    def set_status(self, memory_id: str, scope: Scope, status: str,
                   reason: str | None) -> MemoryItem: ...

    def set_fields(self, memory_id: str, scope: Scope | None, *, action: str, reason: str | None,
                   status: str | None = None, maturity: str | None = None,
                   metadata: dict[str, Any] | None = None, pinned: bool | None = None) -> None:
        """Change status, maturity, metadata or pinning, recorded as one history entry."""

    def purge(self, memory_id: str, scope: Scope) -> list[str]:
        """Delete a memory and every memory derived from it; return the deleted ids."""

    def compact(self, episode_ids: Sequence[str], scope: Scope | None, *,
                reason: str) -> tuple[list[str], list[str]]:
        """Delete episodes for good but keep what was derived from them, in one transaction.

        Each episode's row, text, passages (full text and vectors), history, edges and
        entities go; the turns of its session get their full-text context again without
        its words; the injection log loses the text of what a model was handed with it,
        and working memory the reasons that quote it. Each memory derived from one stays
        as it is, with a ``sources_compacted`` entry in its history (``reason``, and which
        episodes went). Pinned episodes, derived memories and ids outside ``scope`` (None:
        any) are left alone. Returns the ids compacted and the ids of the memories noted."""

    def get(self, memory_id: str, scope: Scope) -> MemoryItem: ...

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]: ...

    def items_by_id(self, ids: Sequence[str]) -> list[MemoryItem]:
        """Memories by id, in insertion order, whatever their scope (for background jobs)."""

    def rowids(self, ids: Sequence[str]) -> dict[str, int]: ...

    def page(self, scope: Scope, filters: Filters, limit: int, cursor: str | None) -> Page: ...

    def export(self, scope: Scope, include_episodes: bool) -> Iterator[MemoryItem]:
        """Every memory in scope, whatever its status, oldest first."""

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEntry]: ...

    def stored_before(self, before: float, *, episodes: bool, kinds: Sequence[str] | None = None,
                      statuses: Sequence[str] | None = None, org_id: str | None = None,
                      user_id: str | None = None, project: str | None = None, limit: int = 500,
                      cursor: str | None = None) -> Page:
        """Unpinned episodes (``episodes=True``) or derived memories that the store took in
        before ``before`` (epoch seconds, by ``created_at``), oldest first, a page at a time
        (``next_cursor``): of ``kinds`` and ``statuses`` when given, and of one org, user and
        project when given (a field left None does not narrow: every org, every user)."""

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]: ...

    def recent_turns(self, scope: Scope, limit: int, *, before: str | None = None) -> list[MemoryItem]:
        """The last ``limit`` active episodes of the scope (its session, when it names
        one), oldest first; with ``before``, only those before that episode."""

    def same_episode(self, scope: Scope, role: str | None, text: str,
                     event_time: float | None) -> str | None:
        """The id of an episode with this speaker, text and time in this session, if any."""

    def session_seen(self, scope: Scope, before_rowid_of: str) -> bool:
        """True when the session already had an episode before this one."""

    def derived(self, scope: Scope, kinds: Sequence[str] | None = None, *,
                statuses: Sequence[str] = ("active",), text: str | None = None,
                limit: int = 500) -> list[MemoryItem]:
        """Derived memories in the scope (any session), newest first."""

    def all_scopes(self, org_id: str | None = None) -> Iterator[Scope]:
        """Every (org, user, agent, project) that has derived memories (in one org)."""

    def touch(self, memory_ids: Sequence[str], *, at: float | None = None) -> None:
        """Count a use of each memory."""

    def use_stats(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float | None]]: ...

    def merge_into(self, memory_id: str, episode_ids: Sequence[str], *, metadata: dict[str, Any],
                   maturity: str, reason: str) -> None:
        """Add sources to a memory and record why, without a new text version."""

    def supersede(self, old_id: str, new_id: str, *, at: float, reason: str) -> list[str]:
        """Mark ``old_id`` superseded by ``new_id`` (valid until ``at``), link them, and flag
        for review the memories derived from the old one; returns the flagged ids."""

    def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
        """Counts of the whole store, or of one org, or of one user of it (then
        ``size_bytes`` is 0: the file holds the others' data too)."""

    def embed_backlog(self) -> int:
        """Passages still waiting for their vector."""

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


class RecallStore(Protocol):
    """The recall channels: ``(memory rowid, score)`` best first, inside scope and filters."""

    def fulltext(self, terms: Sequence[str], scope: Scope, filters: Filters, limit: int,
                 context_weight: float = 0.5) -> list[tuple[int, float]]: ...

    def vector(self, query: np.ndarray, scope: Scope, filters: Filters,
               limit: int) -> list[tuple[int, float]]: ...

    def time_window(self, start: float, end: float, scope: Scope, filters: Filters,
                    limit: int) -> list[tuple[int, float]]: ...

    def roles(self, rowids: Sequence[int]) -> dict[int, str | None]:
        """Who said each memory (the role or speaker of an episode; None if derived)."""

    def neighbors(self, rowids: Sequence[int], window: int, scope: Scope,
                  filters: Filters) -> list[tuple[int, int]]:
        """Episodes next to the given ones in their session: ``(neighbor, seed)`` pairs."""

    def accept(self, rowids: Sequence[int], scope: Scope, filters: Filters) -> set[int]:
        """The subset of ``rowids`` inside the scope wall and passing the filters."""

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]: ...

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]: ...


class GraphStore(Protocol):
    """Edges, entities and the mind map (topics)."""

    def link(self, edges: Sequence[tuple[str, str, str, float]], *, add: bool = False) -> None:
        """Create typed edges ``(src id, dst id, type, weight)``; with ``add``, an existing
        edge is strengthened by ``weight``."""

    def edges_of(self, rowids: Sequence[int]) -> list[tuple[int, int, str, float]]:
        """Edges touching these memories: ``(rowid, other, type, weight)``."""

    def edge_list(self, rowid: int, limit: int = 200) -> list[tuple[int, str, str, float]]:
        """The edges of one memory with their direction: ``(other, type, "out"|"in",
        weight)``, heaviest first."""

    def set_entities(self, memory_id: str, names: Sequence[str]) -> None: ...

    def with_entities(self, scope: Scope, names: Sequence[str], limit: int = 50) -> list[MemoryItem]:
        """Active derived memories in the scope that mention any of ``names``."""

    def entity_neighbors(self, rowids: Sequence[int], limit: int = 50) -> list[tuple[int, int]]:
        """``(other, seed)``: memories mentioning an entity a seed mentions."""

    def topics(self, scope: Scope, *, exact: bool = True) -> Sequence[TopicRowLike]:
        """The topics of exactly this scope, or with ``exact=False`` of every scope in it."""

    def save_topic(self, scope: Scope, topic: Any, *, parent: int | None, label: str,
                   keywords: dict[str, int], size: int) -> int:
        """Create (``topic`` None) or rewrite a topic; returns its rowid."""

    def place(self, memory_ids: Sequence[str], topic_rowid: int) -> None: ...

    def topic_members(self, topic_rowids: Sequence[int], *, statuses: Sequence[str] = ("active",)
                      ) -> dict[int, list[MemoryItem]]: ...

    def topic_members_for(self, terms: Sequence[str], scope: Scope, filters: Filters,
                          limit: int = 10) -> list[int]:
        """Key memories of the mind-map topic the query's words point to."""


class WorkingMemoryStore(Protocol):
    """Each session's working memory."""

    def working_set(self, scope: Scope) -> list[tuple[MemoryItem, float]]:
        """The session's working memory, hottest first, still active and in scope."""

    def warm(self, scope: Scope, heats: dict[str, tuple[float, str]], size: int) -> list[str]:
        """Raise the heat of memories in the session's working memory (adding them), then
        evict the coldest beyond ``size``; returns the evicted ids."""


class JobStore(Protocol):
    """The durable job queue, the vectors its embed jobs write, and job control."""

    def enqueue(self, kind: str, payload: dict[str, Any], *, job_id: str, priority: int = 0,
                key: str | None = None, delay_s: float = 0.0, max_attempts: int = 5,
                org_id: str | None = None, user_id: str | None = None) -> bool:
        """Queue a job (in the open transaction, if any); False when ``key`` is taken.
        ``org_id`` and ``user_id`` say whose data it concerns."""

    def claim_jobs(self, kind: str, limit: int, lease_s: float) -> list[Job]: ...

    def release_jobs(self, jobs: Sequence[Job]) -> None: ...

    def finish_job(self, job: Job, result: dict[str, Any] | None = None) -> None:
        """Mark a claimed job done; raises LeaseLostError when another worker took it."""

    def fail_job(self, job: Job, error: str, retry_in: float | None) -> None: ...

    def queued(self, kind: str) -> list[str]: ...

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]: ...

    def has_pending(self, kinds: Sequence[str]) -> bool: ...

    def has_job_key(self, key: str) -> bool: ...

    def quiet_sessions(self, before: float, limit: int = 100) -> list[tuple[Scope, float]]: ...

    def jobs(self, *, state: str | None = None, kind: str | None = None,
             org_id: str | None = None, user_id: str | None = None,
             limit: int = 50) -> list[JobInfo]: ...

    def job(self, job_id: str, org_id: str | None = None, user_id: str | None = None) -> JobInfo: ...

    def retry_job(self, job_id: str, org_id: str | None = None) -> JobInfo: ...

    def cancel_job(self, job_id: str, org_id: str | None = None) -> JobInfo: ...

    def prune_jobs(self, older_than_s: float) -> int: ...

    def unembedded(self, passage_rowids: Sequence[int]) -> list[tuple[int, str]]: ...

    def put_vectors(self, rows: Sequence[tuple[int, np.ndarray]], done_jobs: Sequence[Job],
                    renew_s: float | None = None) -> None: ...

    def put_memory_vectors(self, memory_id: str, vectors: Sequence[Any]) -> None: ...


class ApiKeyStore(Protocol):
    """API keys of the REST service, as rows of ``KEY_COLUMNS`` (hashes, never keys)."""

    def add_key(self, row: Sequence[Any]) -> None: ...

    def key_rows(self, *, key_id: str | None = None,
                 digest: str | None = None) -> list[tuple[Any, ...]]: ...

    def revoke_key(self, key_id: str, at: float) -> bool: ...

    def key_counts(self) -> tuple[int, int]: ...

    def touch_key(self, key_id: str, at: float) -> None: ...


class CopyStore(Protocol):
    """Row-by-row copies between stores (``remem migrate``), as ``rows.TRANSFER`` lays
    the tables out; ids and row ids are kept."""

    def dump_rows(self, table: str, batch: int = 1000) -> Iterator[list[tuple[Any, ...]]]: ...

    def load_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Insert copied rows; rows already there are left as they are."""

    def finish_load(self) -> None:
        """Rebuild what derives from copied rows (full-text context, id sequences)."""

    def counts(self) -> dict[str, int]:
        """Rows per copied table, and ``vectors``."""


class InjectionLog(Protocol):
    """The injection log: what each door handed to a model, and what of it was used.

    Reads take a scope and stay inside it exactly (a field left None does not narrow);
    a write enforces the retention it is given in the same transaction.
    """

    def log_injection(self, entry: NewInjection, *, keep_days: float | None,
                      keep_rows: int | None) -> None: ...

    def injections(self, scope: Scope, *, door: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> tuple[list[Injection], str | None]: ...

    def injection(self, injection_id: str, scope: Scope) -> Injection: ...

    def injections_of(self, memory_id: str, scope: Scope, limit: int = 20) -> list[Injection]: ...

    def mark_used(self, memory_ids: Sequence[str], scope: Scope, at: float) -> int: ...

    def heed_rates(self, scope: Scope, *, since: float | None = None) -> list[HeedRate]: ...


class ShareStore(Protocol):
    """Grants between scopes (see :class:`~remem.model.Share`). Reads stay inside one org;
    the store checks nothing else: who may grant what is decided above it."""

    def put_share(self, share: Share) -> Share:
        """Store a grant; a grant of the same scope to the same grantee has its access
        changed instead, and is returned with its own id and creation time."""

    def drop_share(self, share_id: str, org_id: str) -> Share | None:
        """Delete a grant of this org; the grant deleted, or None when there was none."""

    def shares(self, org_id: str, *, user_id: str | None = None, project: str | None = None,
               grantee_kind: str | None = None, grantee: str | None = None,
               share_id: str | None = None) -> list[Share]:
        """The org's grants, oldest first; each given argument narrows them (``user_id`` and
        ``project`` name the scope shared, exactly)."""


class AuditLog(Protocol):
    """The audit log: every change and read through the services.

    Reads stay inside the walls they are given: the org, and when ``user_id`` is given,
    that user's entries only. Writes change no memory (:meth:`MemoryStore.change_token`
    stays as it is).
    """

    def record_audit(self, entry: NewAudit) -> None: ...

    def audit(self, org_id: str, user_id: str | None = None, *, door: str | None = None,
              actor: str | None = None, key_id: str | None = None, action: str | None = None,
              target: str | None = None, since: float | None = None, until: float | None = None,
              limit: int = 50, cursor: str | None = None) -> tuple[list[AuditEntry], str | None]:
        """Entries newest first (``action`` matches as a prefix), and the cursor of the next
        page (None at the end)."""


class Store(MemoryStore, RecallStore, GraphStore, WorkingMemoryStore, JobStore, ApiKeyStore,
            CopyStore, InjectionLog, ShareStore, AuditLog, Protocol):
    """Everything the layers above use; each adapter implements all of it."""
