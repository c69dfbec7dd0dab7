"""What the learned fusion sees of a candidate: cheap, query-relative features.

Every feature is computed from what the recall channels returned and the candidate's own
row, so no extra database or model call is needed. A candidate no channel scored gets
the value that channel would give its last place or less (0 for a rank, the lowest
similarity seen for the vector score).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from ..model import MemoryItem
from ..text import estimate_tokens, words
from .query import QueryPlan, entity_words, time_span

_NUMBER = re.compile(r"\b(1[89]|20)\d\d\b|\b\d+\s*(days?|weeks?|months?|years?)\b")

__all__ = ["CHANNELS", "FEATURES", "feature_matrix", "item_words"]

#: The recall channels whose ranks are features, in a fixed order.
CHANNELS = ("fulltext", "vector", "time", "speaker", "neighbor", "graph", "topic", "evidence",
            "aspects")

#: Feature names, in the order of the columns of :func:`feature_matrix`.
FEATURES = tuple(f"rank_{c}" for c in CHANNELS) + (
    "rank_fused", "bm25", "cosine", "cosine_gap", "term_overlap", "name_overlap",
    "speaker_named", "derived", "recency", "in_span", "length", "channels", "session_mass",
    "question", "latest_asked", "earliest_asked", "time_answer", "name_answer",
)


def _rank_value(rank: int | None) -> float:
    """1 at rank 1, falling slowly (0.18 at rank 100); 0 when the channel missed it."""
    return 0.0 if rank is None else 1.0 / (1.0 + math.log(rank))


_COL = {name: i for i, name in enumerate(FEATURES)}
_RANK_COLS = tuple((c, _COL[f"rank_{c}"]) for c in CHANNELS)


def item_words(item: MemoryItem) -> frozenset[str]:
    """The distinct words of a memory's text (what near-duplicates are judged by)."""
    return frozenset(words(item.text))


def feature_matrix(plan: QueryPlan, rowids: Sequence[int], items: Mapping[int, MemoryItem],
                   ranks: Mapping[int, Mapping[str, int]], fused: Mapping[int, float],
                   bm25: Mapping[int, float], cosine: Mapping[int, float], *,
                   bags: Mapping[int, frozenset[str]] | None = None,
                   tokens: Mapping[int, int] | None = None) -> np.ndarray:
    """One row per candidate of ``rowids`` (in that order), one column per ``FEATURES``.

    ``ranks`` is each candidate's 1-based rank per channel, ``fused`` the hand-weighted
    rank fusion score, ``bm25`` and ``cosine`` the full-text and vector channels' scores.
    ``bags`` (:func:`item_words`) and ``tokens`` (``estimate_tokens``) of the items, when
    the caller has them already, save working them out again.
    """
    n = len(rowids)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    col = _COL
    terms = set(plan.terms)
    names = plan.names
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    cos_floor = min(cosine.values(), default=0.0)
    cos_top = max(cosine.values(), default=0.0)
    times = [items[r].event_time.timestamp() if r in items and items[r].event_time else None
             for r in rowids]
    known = [t for t in times if t is not None]
    t_lo, t_hi = (min(known), max(known)) if known else (0.0, 0.0)
    by_fused = sorted(rowids, key=lambda r: (-fused.get(r, 0.0), r))
    fused_rank = {r: i for i, r in enumerate(by_fused, start=1)}
    rank_value = {r: _rank_value(i) for r, i in fused_rank.items()}
    # how much of the pool's weight a candidate's session holds: evidence comes in sessions
    mass: dict[str | None, float] = {}
    for r in rowids:
        if r in items:
            sid = items[r].session_id
            mass[sid] = mass.get(sid, 0.0) + rank_value[r]
    top_mass = max(mass.values(), default=0.0) or 1.0
    n_channels = len(CHANNELS)
    for i, r in enumerate(rowids):
        row = [0.0] * len(FEATURES)
        got = ranks.get(r, {})
        for c, j in _RANK_COLS:
            rank = got.get(c)
            if rank is not None:
                row[j] = 1.0 / (1.0 + math.log(rank))
        row[col["rank_fused"]] = rank_value[r]
        row[col["bm25"]] = max(bm25.get(r, 0.0), 0.0) / top_bm25
        cos = cosine.get(r, cos_floor)
        row[col["cosine"]] = cos
        row[col["cosine_gap"]] = cos - cos_top
        row[col["channels"]] = len(got) / n_channels
        item = items.get(r)
        if item is None:
            out[i] = row
            continue
        bag = bags[r] if bags is not None and r in bags else item_words(item)
        have = bag | {w.lower() for w in item.role.split()} if item.role else bag
        if terms:
            row[col["term_overlap"]] = len(terms & have) / len(terms)
        if names:
            row[col["name_overlap"]] = len(names & have) / len(names)
            row[col["speaker_named"]] = float((item.role or "").lower() in names)
        row[col["derived"]] = float(not item.is_episode)
        t = times[i]
        if t is not None and t_hi > t_lo:
            recency = (t - t_lo) / (t_hi - t_lo)
            row[col["recency"]] = recency
            # a question about the latest (or the first) of several says which end counts
            if plan.order == "last":
                row[col["latest_asked"]] = recency
            elif plan.order == "first":
                row[col["earliest_asked"]] = 1.0 - recency
        if t is not None and plan.span is not None:
            row[col["in_span"]] = float(plan.span[0] <= t <= plan.span[1])
        cost = tokens[r] if tokens is not None and r in tokens else estimate_tokens(item.text)
        row[col["length"]] = math.log1p(cost) / 5.0
        if item.session_id is not None:
            row[col["session_mass"]] = mass.get(item.session_id, 0.0) / top_mass
        row[col["question"]] = float(item.text.rstrip().endswith(("?", "？")))
        if plan.wants == "time" and item.event_time is not None:
            # "when ..." is answered by a turn that says when, against its own time
            row[col["time_answer"]] = float(time_span(item.text, item.event_time) is not None
                                            or _NUMBER.search(item.text) is not None)
        elif plan.wants in ("place", "person"):
            row[col["name_answer"]] = float(bool(entity_words(item.text) - names))
        out[i] = row
    return out
