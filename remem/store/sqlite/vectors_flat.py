"""The former vector search: one numpy matrix for the whole store, masked by scope (kept
for `remem bench scale`, which times it beside the scoped index).

The matrix is rebuilt from SQLite's BLOBs and kept current by loading rows added since
the last look; any deletion reloads it all. A small scope in a large store pays for
copying its rows out of the matrix on every search.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

import numpy as np

from ...model import Scope
from . import statements as sql

_SCOPE_FIELDS = ("org_id", "user_id", "agent_id", "project", "session_id")




class FlatVectorIndex:
    """In-memory copy of the ``vectors`` table with the scope of each row."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._n = 0
        self._last = 0
        self._generation: str | None = None
        self._matrix = np.empty((1024, self.dim), dtype=np.float32)
        self._memory = np.empty(1024, dtype=np.int64)
        self._codes = np.empty((1024, len(_SCOPE_FIELDS)), dtype=np.int32)
        self._interned: dict[str | None, int] = {None: 0}

    def _code(self, value: str | None) -> int:
        code = self._interned.get(value)
        if code is None:
            code = self._interned[value] = len(self._interned)
        return code

    def _grow(self, need: int) -> None:
        cap = len(self._memory)
        if need <= cap:
            return
        while cap < need:
            cap *= 2
        self._matrix = np.resize(self._matrix, (cap, self.dim))
        self._memory = np.resize(self._memory, cap)
        self._codes = np.resize(self._codes, (cap, len(_SCOPE_FIELDS)))

    def sync(self, conn: sqlite3.Connection) -> None:
        """Load what was added since the last call; reload all after any deletion."""
        generation = conn.execute(
            sql.SYNC_SELECT_META
        ).fetchone()[0]
        if generation != self._generation:
            self._reset()
            self._generation = generation
        (last,) = conn.execute(sql.SYNC_SELECT_VECTORS).fetchone()
        if last == self._last:
            return
        rows = conn.execute(sql.FLAT_VECTORS_LOAD, (self._last,)).fetchall()
        if not rows:
            return
        self._grow(self._n + len(rows))
        start = self._n
        blob = b"".join(r[7] for r in rows)
        self._matrix[start : start + len(rows)] = np.frombuffer(blob, dtype=np.float32).reshape(
            len(rows), self.dim
        )
        self._memory[start : start + len(rows)] = [r[1] for r in rows]
        self._codes[start : start + len(rows)] = [[self._code(v) for v in r[2:7]] for r in rows]
        self._n += len(rows)
        self._last = rows[-1][0]

    def search(
        self,
        conn: sqlite3.Connection,
        query: np.ndarray,
        scope: Scope,
        limit: int,
        accept: Callable[[list[int]], set[int]],
    ) -> list[tuple[int, float]]:
        """The ``limit`` best memories by cosine similarity of their best passage.

        ``accept`` receives candidate memory rowids and returns those that pass the
        store's SQL scope and filter check; only those are returned.
        """
        with self._lock:
            self.sync(conn)
            n = self._n
            if n == 0:
                return []
            mask = np.ones(n, dtype=bool)
            for col, name in enumerate(_SCOPE_FIELDS):
                value = getattr(scope, name)
                if value is None and name != "org_id":
                    continue
                code = self._interned.get(value, -1)
                match = self._codes[:n, col] == code
                if scope.nested and name in ("user_id", "agent_id", "project"):
                    above = self._codes[:n, col] == 0  # None: the level above
                    if name != "user_id" and scope.user_id is None:
                        above &= self._codes[:n, _SCOPE_FIELDS.index("user_id")] == 0
                    match |= above
                mask &= match
            selected = np.flatnonzero(mask)
            if len(selected) == 0:
                return []
            if len(selected) < n // 4:
                scores = self._matrix[selected] @ query
                memory = self._memory[selected]
            else:
                scores = self._matrix[:n] @ query
                scores[~mask] = -np.inf
                memory = self._memory[:n]
        results: list[tuple[int, float]] = []
        want = limit
        while True:
            take = min(len(scores), want * 2)
            top = np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.arange(len(scores))
            top = top[np.argsort(-scores[top], kind="stable")]
            best: dict[int, float] = {}
            for i in top:
                if not np.isfinite(scores[i]):
                    break
                best.setdefault(int(memory[i]), float(scores[i]))
            ok = accept(list(best))
            results = [(m, s) for m, s in best.items() if m in ok][:limit]
            if len(results) >= limit or take >= len(scores) or want > 8 * limit:
                return results
            want *= 4
