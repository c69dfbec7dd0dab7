"""Rules every adapter applies the same way, kept here once: what a purge takes with it,
how working memory cools, which job keys are given back when a job starts, what a derived
memory's provenance is."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import ValidationError
from ..model import TRUST_LEVELS, Provenance
from ..text import segment

__all__ = ["COALESCE_PREFIX", "CONTEXT_CHARS", "HEAT_DECAY", "REVIEW_NOTE", "batch_contexts",
           "best_topic", "compacted_note", "counted_sql", "least_trusted", "mentions",
           "neighbours_context", "owner_of", "page_after", "page_before", "provenance_of",
           "purge_closure", "purged_words", "row_provenance"]

#: Each warming of a session's working memory first multiplies every heat by this.
HEAT_DECAY = 0.8
#: Idempotency keys with this prefix hold only while their job waits: once it runs, the
#: same work may be queued again (one waiting prefetch per session, not one per turn).
COALESCE_PREFIX = "coalesce:"
#: The metadata note on a memory derived from one that was superseded.
REVIEW_NOTE = "derived from {old_id}, now superseded"


def least_trusted(found: Iterable[Provenance]) -> Provenance | None:
    """The least trusted of these provenances (the first of them on a tie); None for none.
    A derived memory has its least trusted source's provenance."""
    worst: Provenance | None = None
    for item in found:
        if worst is None or TRUST_LEVELS.index(item.trust) > TRUST_LEVELS.index(worst.trust):
            worst = item
    return worst


def provenance_of(item: Any, batch: dict[str, Provenance],
                  lookup: Callable[[str, Sequence[str]], list[Provenance]]) -> Provenance:
    """The provenance to store with a new memory (a ``NewMemory``): its own if it has one;
    else, for a derived memory, its least trusted source's, read from ``batch`` (the
    batch's own episodes, by id) or ``lookup(org_id, ids)``; else the default."""
    if item.provenance is not None:
        return item.provenance  # type: ignore[no-any-return]
    if item.raw or not item.source_ids:
        return Provenance()
    found = [batch[i] for i in item.source_ids if i in batch]
    rest = [i for i in item.source_ids if i not in batch]
    if rest:
        found += lookup(item.scope.org_id, rest)
    return least_trusted(found) or Provenance()


def row_provenance(row: Sequence[Any]) -> Provenance:
    """A ``(door, source, trust)`` row as a Provenance."""
    return Provenance.model_construct(door=row[0], source=row[1], trust=row[2])


def compacted_note(episode_ids: Sequence[str], reason: str) -> str:
    """The history note of a memory whose source episodes were compacted."""
    shown = ", ".join(episode_ids[:5]) + (f" and {len(episode_ids) - 5} more"
                                          if len(episode_ids) > 5 else "")
    return f"sources compacted ({reason}): {shown}"


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


def owner_of(items: Sequence[Any]) -> str | None:
    """The user whose data new memories are, when they are all one user's."""
    users = {item.scope.user_id for item in items}
    return users.pop() if len(users) == 1 else None


def counted_sql(org_id: str | None, user_id: str | None, *, alias: str = "m",
                mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause of counts confined to an org, or to one user of it."""
    clauses, params = ["1 = 1"], []
    if org_id is not None:
        clauses.append(f"{alias}.org_id = {mark}")
        params.append(org_id)
        if user_id is not None:
            clauses.append(f"{alias}.user_id = {mark}")
            params.append(user_id)
    return " AND ".join(clauses), params


def purged_words(texts: Iterable[str]) -> set[str]:
    """What marks text derived from purged ones: their word pairs, and their long words."""
    marks: set[str] = set()
    for text in texts:
        words = re.findall(r"\w+", text.lower())
        marks.update(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
        marks.update(w for w in words if len(w) >= 8)
    return marks


def mentions(text: str, marks: set[str]) -> bool:
    """True when ``text`` holds a word pair or a long word of purged text."""
    words = re.findall(r"\w+", text.lower())
    pairs = (f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
    return any(w in marks for w in words) or any(pair in marks for pair in pairs)


def page_after(cursor: str | None) -> int:
    """The rowid an ascending page starts above: a cursor from a previous page, checked."""
    return 0 if cursor is None else page_before(cursor)


def page_before(cursor: str | None) -> int:
    """The rowid a page starts below: a cursor from a previous page, checked."""
    if cursor is None:
        return 2**63 - 1
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 19 or int(cursor) > 2**63 - 1:
        raise ValidationError("cursor", f"{cursor!r} is not a cursor from a previous page")
    return int(cursor)


def best_topic(leaves: Iterable[tuple[int, str, str]], terms: Sequence[str]) -> int | None:
    """Among leaf topics (rowid, label, keyword counts as JSON), the one a query's terms
    name best: two of its keywords, or one that is in its label."""
    words = set(terms)
    best, best_score = None, 0.0
    for rowid, label, keywords in leaves:
        counts = json.loads(keywords)
        hit = [w for w in words if w in counts]
        named = any(w in label.split(" · ") for w in hit)
        if len(hit) >= 2 or named:
            score = len(hit) + sum(counts[w] for w in hit) / (sum(counts.values()) or 1)
            if score > best_score:
                best, best_score = rowid, score
    return best


#: Characters of each neighbouring turn in an episode's full-text context.
CONTEXT_CHARS = 1000


def batch_contexts(items: Sequence[Any], rowids: Sequence[int],
                   before_first: Callable[[int], tuple[int, str] | None],
                   ) -> tuple[dict[int, str], list[int]]:
    """The full-text context of each new turn of a batch, and the turns before the batch
    whose context must now hold the batch's first turn.

    New rows have the highest rowids, so within a session a new turn's neighbours are the
    batch's own turns, but for the first one's predecessor (``before_first(rowid)``: its
    rowid and text, or None): one lookup per session instead of several per turn."""
    chains: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
    for item, rowid in zip(items, rowids, strict=True):
        s = item.scope
        if item.raw and s.session_id is not None:
            key = (s.org_id, s.user_id, s.agent_id, s.project, s.session_id)
            chains.setdefault(key, []).append((rowid, item.text))
    contexts: dict[int, str] = {}
    before: list[int] = []
    for chain in chains.values():
        first = before_first(chain[0][0])
        if first is not None:
            before.append(first[0])
        texts = [None if first is None else first[1], *(t for _, t in chain), None]
        for i, (rowid, _) in enumerate(chain):
            contexts[rowid] = neighbours_context(texts[i], texts[i + 2])
    return contexts, before


def neighbours_context(before: str | None, after: str | None) -> str:
    """A turn's full-text context: the texts of the turns before and after it (if any),
    cut to ``CONTEXT_CHARS`` and segmented for full text."""
    return " ".join(segment(t[:CONTEXT_CHARS]) for t in (before, after) if t is not None)
