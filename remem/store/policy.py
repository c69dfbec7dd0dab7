"""Rules every adapter applies the same way, kept here once: what a purge takes with it,
how working memory cools, which job keys are given back when a job starts."""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["COALESCE_PREFIX", "HEAT_DECAY", "REVIEW_NOTE", "purge_closure"]

#: Each warming of a session's working memory first multiplies every heat by this.
HEAT_DECAY = 0.8
#: Idempotency keys with this prefix hold only while their job waits: once it runs, the
#: same work may be queued again (one waiting prefetch per session, not one per turn).
COALESCE_PREFIX = "coalesce:"
#: The metadata note on a memory derived from one that was superseded.
REVIEW_NOTE = "derived from {old_id}, now superseded"


def purge_closure(start: int, derived_of: Callable[[int], Iterable[int]]) -> list[int]:
    """``start`` and every memory derived from it, transitively (cited as a source or
    linked ``derived_from``), in the order found."""
    todo, doomed = [start], dict[int, None]()
    while todo:
        rowid = todo.pop()
        if rowid in doomed:
            continue
        doomed[rowid] = None
        todo += derived_of(rowid)
    return list(doomed)
