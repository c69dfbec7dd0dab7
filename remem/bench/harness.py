"""Drive one system through a dataset as a deployment would, and time it.

Sessions go in in time order, turn by turn (one ``add`` per turn, at the turn's own
time), with a ``flush`` at each session's end; with ``whole_sessions`` each session goes
in with one call instead. Every scored question is then asked at its own time (``as_of``)
and its ranking kept. Nothing here scores; :mod:`remem.bench.summary` does.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..embed import Embedder
from ..text import estimate_tokens
from .baselines import System, make_system
from .cost import RssSampler
from .datasets import Conversation, Dataset, Question, Turn
from .metrics import flatten

__all__ = ["Answered", "SystemRun", "context_of", "run_system"]

MB = 1024 * 1024


@dataclass
class Answered:
    """One question asked in ``scope``: the ranked turn ids, the search time, the context
    handed on (turn ids are unique only within a scope)."""

    scope: str
    question: Question
    ranked: list[str]
    search_ms: float
    context: list[str]
    context_tokens: int


@dataclass
class SystemRun:
    """Everything measured while one system ran through a dataset."""

    system: str
    answered: list[Answered] = field(default_factory=list)
    add_ms_per_turn: list[float] = field(default_factory=list)
    flush_ms: list[float] = field(default_factory=list)
    ingest_s: float = 0.0
    turns: int = 0
    store_bytes: int = 0
    peak_rss_mb: float = 0.0
    rss_growth_mb: float = 0.0
    notes: str | None = None


def _turn_in(turn: Turn) -> tuple[str, str, dict[str, str]]:
    return turn.speaker, turn.text, {"turn_id": turn.id}


def _ingest(system: System, conv: Conversation, whole_sessions: bool, run: SystemRun) -> None:
    for session in conv.sessions:
        start = time.perf_counter()
        if whole_sessions:
            system.add_session(conv.scope, session.id, session.time,
                               [_turn_in(t) for t in session.turns])
            per_turn = (time.perf_counter() - start) * 1000 / len(session.turns)
            run.add_ms_per_turn.extend([per_turn] * len(session.turns))
        else:
            for turn in session.turns:
                t0 = time.perf_counter()
                system.add_session(conv.scope, session.id, turn.time, [_turn_in(turn)])
                run.add_ms_per_turn.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        system.flush()
        run.flush_ms.append((time.perf_counter() - t0) * 1000)
        run.ingest_s += time.perf_counter() - start
        run.turns += len(session.turns)


def context_of(ranked: list[str], k: int | None) -> list[str]:
    """The turns handed to a model: the top ``k``, or every one when ``k`` is None."""
    return list(ranked) if k is None else ranked[:k]


def run_system(name: str, dataset: Dataset, *, depth: int = 100, context_k: int = 10,
               whole_sessions: bool = False, embedder: Embedder | None = None,
               folder: Path | None = None, advance: Callable[[], None] | None = None,
               make: Callable[..., System] = make_system) -> SystemRun:
    """Ingest every conversation into system ``name`` and ask every scored question.

    ``depth`` hits are asked for; the top ``context_k`` turns form the context a model
    would get (every turn for ``full-context``). Construction errors propagate.
    """
    run = SystemRun(name)
    keep_all = name == "full-context"
    with tempfile.TemporaryDirectory(prefix=f"remem-bench-{name}-") as tmp, RssSampler() as rss:
        root = folder or Path(tmp)
        system = make(name, root, embedder=embedder)
        run.notes = getattr(system, "notes", None)
        try:
            for conv in dataset.conversations:
                _ingest(system, conv, whole_sessions, run)
                texts = {t.id: t.text for t in conv.turns().values()}
                for q in conv.questions:
                    if q.skip:
                        continue
                    t0 = time.perf_counter()
                    hits = system.search(conv.scope, q.text, depth, as_of=q.asked_at)
                    ms = (time.perf_counter() - t0) * 1000
                    ranked = [t for t in flatten(hits) if t in texts]
                    context = context_of(ranked, None if keep_all else context_k)
                    tokens = sum(estimate_tokens(texts[t]) for t in context)
                    run.answered.append(Answered(conv.scope, q, ranked, ms, context, tokens))
                if advance:
                    advance()
            run.store_bytes = system.size_bytes()
        finally:
            system.close()
    run.peak_rss_mb = round(rss.peak / MB, 1)
    run.rss_growth_mb = round((rss.peak - rss.start) / MB, 1)
    return run
