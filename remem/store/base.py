"""The storage protocol every backend implements, and the records that cross it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..model import HistoryEntry, MemoryItem, Page, Scope, Source

__all__ = ["Filters", "Job", "NewMemory", "Store"]


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
    scope is read, changed or returned.
    """

    path: str

    def close(self) -> None: ...

    # writes
    def insert(self, items: Sequence[NewMemory], jobs: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        """Insert memories, their passages, full-text rows and sources, and jobs
        (``(id, kind, payload)``), all in one transaction."""

    def update_text(self, memory_id: str, scope: Scope, text: str, passages: Sequence[str],
                    reason: str | None) -> MemoryItem: ...

    def set_status(self, memory_id: str, scope: Scope, status: str, reason: str | None) -> MemoryItem: ...

    def purge(self, memory_id: str, scope: Scope) -> list[str]:
        """Delete a memory and every memory derived from it; return the deleted ids."""

    # reads
    def get(self, memory_id: str, scope: Scope) -> MemoryItem: ...

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]: ...

    def list(self, scope: Scope, filters: Filters, limit: int, cursor: str | None) -> Page: ...

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEntry]: ...

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]: ...

    def stats(self) -> dict[str, Any]: ...

    def export(self, scope: Scope, include_episodes: bool) -> Iterable[MemoryItem]: ...

    # recall channels: each returns (memory rowid, score) best first, within scope and filters
    def fulltext(self, match: str, scope: Scope, filters: Filters, limit: int) -> list[tuple[int, float]]: ...

    def vector(self, query: np.ndarray, scope: Scope, filters: Filters, limit: int) -> list[tuple[int, float]]: ...

    def neighbors(self, rowids: Sequence[int], window: int, scope: Scope, filters: Filters) -> list[tuple[int, int]]:
        """Episodes next to the given ones in their session: ``(neighbor, seed)`` pairs."""

    def time_window(self, start: float, end: float, scope: Scope, filters: Filters, limit: int) -> list[tuple[int, float]]: ...

    # embedding and jobs
    def unembedded(self, passage_rowids: Sequence[int] | None, limit: int) -> list[tuple[int, str]]: ...

    def put_vectors(self, rows: Sequence[tuple[int, np.ndarray]], done_jobs: Sequence[int]) -> None: ...

    def claim_jobs(self, kind: str, limit: int, lease_s: float) -> list[Job]: ...

    def fail_job(self, job: Job, error: str, retry_in: float | None) -> None: ...

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]: ...

    def meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...
