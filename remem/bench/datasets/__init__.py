"""Benchmark datasets, normalised to one shape: conversations of sessions of turns, and
questions with their evidence and the time they are asked.

A dataset is one small module with a ``load(path) -> Dataset`` function, registered in
``LOADERS`` by name and imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from importlib import import_module
from pathlib import Path

__all__ = ["LOADERS", "Conversation", "Dataset", "Question", "Session", "Turn", "load_dataset",
           "parse_selection"]


@dataclass(frozen=True)
class Turn:
    """One message: its id (unique in its conversation), who said it, what, and when."""

    id: str
    session_id: str
    speaker: str
    text: str
    time: datetime


@dataclass(frozen=True)
class Session:
    """Turns said together, in order, from ``time`` on."""

    id: str
    time: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A question with its gold answer, evidence turns and sessions, and when it is asked.

    ``category`` is a label such as ``"1 multi-hop"``; ``skip`` says why a question is
    left out of retrieval metrics (``None`` when it is scored).
    """

    id: str
    text: str
    category: str
    answer: str
    evidence_turns: tuple[str, ...]
    evidence_sessions: tuple[str, ...]
    asked_at: datetime
    skip: str | None = None


@dataclass(frozen=True)
class Conversation:
    """One haystack: its own scope, its sessions in time order, and its questions."""

    scope: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def turns(self) -> dict[str, Turn]:
        """Every turn by id."""
        return {t.id: t for s in self.sessions for t in s.turns}


@dataclass
class Dataset:
    """A loaded benchmark.

    ``categories`` maps each category label to a description; ``main_categories`` are the
    ones averaged together in the headline figures (the others are reported alone).
    ``notes`` counts what loading repaired or skipped; ``protocol`` says how it is scored.
    """

    name: str
    conversations: list[Conversation]
    categories: dict[str, str]
    main_categories: tuple[str, ...]
    protocol: str
    notes: dict[str, int] = field(default_factory=dict)

    def limited(self, limit: int | None) -> Dataset:
        """The first ``limit`` conversations (a LongMemEval conversation is one question)."""
        if limit is None:
            return self
        return Dataset(self.name, self.conversations[:limit], self.categories,
                       self.main_categories, self.protocol, dict(self.notes))

    def selected(self, spec: str | None) -> Dataset:
        """The conversations ``spec`` names by position (:func:`parse_selection`)."""
        if spec is None:
            return self
        keep = parse_selection(spec, len(self.conversations))
        return Dataset(self.name, [self.conversations[i] for i in keep], self.categories,
                       self.main_categories, self.protocol, dict(self.notes))


def parse_selection(spec: str, size: int) -> list[int]:
    """Positions from ``"0-4"``, ``"5,7,9"`` or ``"0-499:5"`` (every fifth), 0-based, each
    end included; a clear ValueError for anything else or a position past ``size``."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        body, _, step_s = part.partition(":")
        first, dash, last = body.partition("-")
        try:
            lo = int(first)
            hi = int(last) if dash else lo
            step = int(step_s) if step_s else 1
        except ValueError:
            raise ValueError(f"{part!r}: write positions as 0-4, 5,7 or 0-499:5") from None
        if lo < 0 or hi < lo or step < 1:
            raise ValueError(f"{part!r}: a range runs from a position to one not before it")
        if hi >= size:
            raise ValueError(f"{part!r}: there are only {size} conversations (0-{size - 1})")
        out.extend(range(lo, hi + 1, step))
    return list(dict.fromkeys(out))


LOADERS: dict[str, str] = {
    "locomo": "remem.bench.datasets.locomo:load",
    "longmemeval": "remem.bench.datasets.longmemeval:load",
}


def load_dataset(name: str, path: str | Path) -> Dataset:
    """Load dataset ``name`` (a key of ``LOADERS``) from ``path``."""
    if name not in LOADERS:
        raise ValueError(f"unknown dataset {name!r}; choose {', '.join(sorted(LOADERS))}")
    module, func = LOADERS[name].split(":")
    loader: Callable[[str | Path], Dataset] = getattr(import_module(module), func)
    return loader(path)
