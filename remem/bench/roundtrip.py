"""``remem bench migrate``: a store copied to PostgreSQL and back answers as it did.

The LoCoMo conversations go into a SQLite store through ``remem bench locomo`` (or an
earlier run's kept store is used); ``remem migrate`` copies it to an empty PostgreSQL
database and from there to a new SQLite file. Every question is then asked of the three,
one after the other, and the top ``k`` memories of each (ids, in order) are compared:

- ``identical_after_round_trip``: share of questions whose top ``k`` the SQLite copy made
  from PostgreSQL returns exactly as the original (the figure that must be 1.0);
- ``identical_on_postgresql``: the same for the PostgreSQL store itself, whose full text
  ranks by ``tsvector`` rather than FTS5's BM25, so that a difference there is expected;
- ``overlap_on_postgresql``: the mean share of the original's top ``k`` that PostgreSQL
  also returns.

No background work runs on the copies (``run_worker=False``), so none of them changes
while the questions are asked; each gets the same questions in the same order, at one
fixed present.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from ..migrate import migrate
from . import locomo
from .progress import Reporter

__all__ = ["run"]


def _top(memory: Memory, scope: str, question: str, k: int) -> list[str]:
    return [hit.memory.id for hit in memory.search(question, user_id=scope, k=k)]


def run(data: str | Path, pg_url: str, *, limit: int | None = None, k: int = 10,
        store: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Fill (or reuse) a SQLite store with the first ``limit`` LoCoMo conversations of
    ``data``, copy it to the empty PostgreSQL database ``pg_url`` and back, and compare
    every question's top ``k`` on the three; see the module for the figures."""
    conversations = locomo.load(data)[:limit]
    with tempfile.TemporaryDirectory(prefix="remem-roundtrip-") as tmp:
        folder = Path(store) if store is not None else Path(tmp) / "source"
        source = folder / "remem.db"
        if not source.exists():
            locomo.run(data, limit=limit, store=folder, progress=progress)
        back = Path(tmp) / "back.db"
        t0 = time.perf_counter()
        there = migrate(source, pg_url)
        to_pg_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        migrate(pg_url, back)
        back_s = time.perf_counter() - t0
        quiet, now = Config(run_worker=False), time.time()
        # one present for all three, so that recency scores the same on each
        stores = {name: Memory(target, config=quiet, clock=lambda: now)
                  for name, target in (("sqlite", source), ("postgresql", pg_url), ("back", back))}
        same_back = same_pg = asked = 0
        overlap = 0.0
        differ: list[dict[str, Any]] = []
        questions = [(c.sample_id, q.text) for c in conversations for q in c.questions]
        shown = Reporter("questions", len(questions)) if progress else None
        try:
            for scope, question in questions:
                tops = {name: _top(m, scope, question, k) for name, m in stores.items()}
                asked += 1
                same_back += tops["back"] == tops["sqlite"]
                same_pg += tops["postgresql"] == tops["sqlite"]
                overlap += len(set(tops["postgresql"]) & set(tops["sqlite"])) / max(1, len(tops["sqlite"]))
                if tops["back"] != tops["sqlite"] and len(differ) < 5:
                    differ.append({"question": question, "sqlite": tops["sqlite"], "back": tops["back"]})
                if shown is not None:
                    shown.advance()
        finally:
            if shown is not None:
                shown.close()
            for m in stores.values():
                m.close()
    return {
        "conversations": len(conversations),
        "questions": asked,
        "k": k,
        "rows_copied": there.counts,
        "to_postgresql_s": round(to_pg_s, 1),
        "back_to_sqlite_s": round(back_s, 1),
        "identical_after_round_trip": round(same_back / max(1, asked), 4),
        "identical_on_postgresql": round(same_pg / max(1, asked), 4),
        "overlap_on_postgresql": round(overlap / max(1, asked), 4),
        "differences_after_round_trip": differ,
    }
