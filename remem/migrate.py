"""Moving a store to another backend: ``migrate(source, target)`` copies every table
(episodes, memories, passages with their vectors, versions, edges, the mind map,
working memory, jobs, API keys, meta), then checks row counts and checksums.

Ids and row ids are kept, so the copy answers every search as the source does. Rows the
target already has are left as they are, so an interrupted migration is re-run safely.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import StoreError
from .store import Store, create_store
from .store.factory import stored_embedder
from .store.rows import TRANSFER

__all__ = ["MigrationReport", "migrate"]


@dataclass(frozen=True)
class MigrationReport:
    """Rows per table in the target after the copy (equal to the source's), and the
    embedder both record."""

    counts: dict[str, int] = field(default_factory=dict)
    embedder: str = ""


def _checksum(rows: Any) -> int:
    """An order-free checksum of a table's rows (the sum of each row's digest)."""
    total = 0
    for batch in rows:
        for row in batch:
            total += int.from_bytes(hashlib.sha256(repr(row).encode()).digest()[:16], "big")
    return total % 2**128


def _check_target(src: Store, dst: Store, target: str | os.PathLike[str]) -> None:
    """Refuse a target holding memories the source does not (same id, same row id): a
    copy keeps row ids, and another store's rows would collide with them."""
    for batch in dst.dump_rows("memories"):
        ids = {row[1]: row[0] for row in batch}
        known = src.rowids(list(ids))
        foreign = [i for i, rowid in ids.items() if known.get(i) != rowid]
        if foreign:
            raise StoreError(f"{target} already holds memories that are not in the source "
                             f"(e.g. {foreign[0]}); migrate into an empty store, or into an "
                             "earlier copy of this one")


def migrate(source: str | os.PathLike[str], target: str | os.PathLike[str], *,
            progress: Callable[[str, int], None] | None = None) -> MigrationReport:
    """Copy the store at ``source`` into ``target`` (created if new; an existing one must
    use the same embedder) and verify it; raises :class:`~remem.errors.StoreError` if
    the counts or checksums differ.

    >>> migrate("sqlite:///team.db", "postgresql://remem@db.internal/remem")
    """
    found = stored_embedder(source)
    if found is None:
        raise StoreError(f"{source} holds no remem store; give the path or URL of one to copy")
    embedder, dim = found
    src = create_store(source, dim=dim, embedder=embedder)
    try:
        dst = create_store(target, dim=dim, embedder=embedder)
        try:
            _check_target(src, dst, target)
            for table in TRANSFER:
                copied = 0
                for batch in src.dump_rows(table):
                    dst.load_rows(table, batch)
                    copied += len(batch)
                if progress is not None:
                    progress(table, copied)
            dst.finish_load()
            want, got = src.counts(), dst.counts()
            differ = {t: (want[t], got.get(t)) for t in want if want[t] != got.get(t)}
            if differ:
                raise StoreError(f"the copy differs from the source in {differ} (source, target) "
                                 "rows; the target had other data, or the source changed meanwhile")
            bad = [t for t in TRANSFER if _checksum(src.dump_rows(t)) != _checksum(dst.dump_rows(t))]
            if bad:
                raise StoreError(f"the copy's {', '.join(bad)} differ from the source's; "
                                 "re-run the migration into an empty target")
            return MigrationReport(counts=got, embedder=embedder)
        finally:
            dst.close()
    finally:
        src.close()
