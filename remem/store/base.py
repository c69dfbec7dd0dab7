"""The storage protocol every backend implements, and the records that cross it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..model import HeedRate, HistoryEntry, Injection, MemoryItem, Page, Scope, Source

__all__ = ["Filters", "InjectionLog", "Job", "NewInjection", "NewMemory", "Store"]


@dataclass(frozen=True)
class NewMemory:
    """A memory to insert, with its passages (already split) and source episode ids."""

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
class Job:
    """A claimed background job."""

    rowid: int
    id: str
    kind: str
    payload: dict[str, Any]
    attempts: int


class Store(Protocol):
    """Persistence of episodes, memories, passages, vectors, history, edges and jobs.

    Every method that takes a ``scope`` enforces it in its query: nothing outside the
    scope is read, changed or returned. Memories are named by id at this boundary and
    by an integer row id between the store and the retriever.
    """

    path: str

    def close(self) -> None: ...

    # writes: each is one transaction
    def insert(self, items: Sequence[NewMemory], embed_job_id: str | None) -> None:
        """Memories with their passages, full text and sources, and one job that embeds
        the passages."""

    def update_text(self, memory_id: str, scope: Scope, text: str, passages: Sequence[str],
                    reason: str | None, embed_job_id: str) -> MemoryItem:
        """A new version of a derived memory; the old text stays in its history."""

    def set_status(self, memory_id: str, scope: Scope, status: str,
                   reason: str | None) -> MemoryItem: ...

    def purge(self, memory_id: str, scope: Scope) -> list[str]:
        """Delete a memory and every memory derived from it; return the deleted ids."""

    # reads
    def get(self, memory_id: str, scope: Scope) -> MemoryItem: ...

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]: ...

    def page(self, scope: Scope, filters: Filters, limit: int, cursor: str | None) -> Page: ...

    def export(self, scope: Scope, include_episodes: bool) -> Iterator[MemoryItem]: ...

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEntry]: ...

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]: ...

    def stats(self) -> dict[str, Any]: ...

    # recall channels: (memory rowid, score) best first, inside the scope and filters
    def fulltext(self, terms: Sequence[str], scope: Scope, filters: Filters, limit: int,
                 context_weight: float = 0.5) -> list[tuple[int, float]]: ...

    def vector(self, query: np.ndarray, scope: Scope, filters: Filters,
               limit: int) -> list[tuple[int, float]]: ...

    def roles(self, rowids: Sequence[int]) -> dict[int, str | None]:
        """Who said each memory (the role or speaker of an episode; None if derived)."""

    def neighbors(self, rowids: Sequence[int], window: int, scope: Scope,
                  filters: Filters) -> list[tuple[int, int]]:
        """Episodes next to the given ones in their session: ``(neighbor, seed)`` pairs."""

    def edges_of(self, rowids: Sequence[int]) -> list[tuple[int, int, str, float]]:
        """Edges touching these memories: ``(rowid, other, type, weight)``."""

    def entity_neighbors(self, rowids: Sequence[int], limit: int = 50) -> list[tuple[int, int]]:
        """``(other, seed)``: memories mentioning an entity a seed mentions."""

    def accept(self, rowids: Sequence[int], scope: Scope, filters: Filters) -> set[int]: ...

    def topic_members_for(self, terms: Sequence[str], scope: Scope, filters: Filters,
                          limit: int = 10) -> list[int]:
        """Key memories of the mind-map topic the query's words point to."""

    def time_window(self, start: float, end: float, scope: Scope, filters: Filters,
                    limit: int) -> list[tuple[int, float]]: ...

    # background jobs
    def unembedded(self, passage_rowids: Sequence[int]) -> list[tuple[int, str]]: ...

    def put_vectors(self, rows: Sequence[tuple[int, np.ndarray]], done_jobs: Sequence[Job],
                    renew_s: float | None = None) -> None: ...

    def claim_jobs(self, kind: str, limit: int, lease_s: float) -> list[Job]: ...

    def release_jobs(self, jobs: Sequence[Job]) -> None: ...

    def fail_job(self, job: Job, error: str, retry_in: float | None) -> None: ...

    def queued(self, kind: str) -> list[str]: ...

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


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
