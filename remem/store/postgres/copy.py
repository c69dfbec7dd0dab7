"""Copying the PostgreSQL store row by row, for ``remem migrate`` (mixed into PostgresStore)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...text import segment
from ..rows import LOCAL_META, TRANSFER

__all__ = ["PostgresCopy"]

_ORDER = {"meta": "key", "memory_sources": "memory_rowid, episode_rowid", "edges": "src, dst, type",
          "entities": "name, memory_rowid", "working_memory": "org_id, session_id, memory_rowid",
          "api_keys": "id", "injection_items": "injection_rowid, rank", "shares": "id"}
#: tables whose rows name a memory but not its org: the org is read from the memory
_BY_MEMORY = {"memory_sources": "memory_rowid", "passages": "memory_rowid",
              "versions": "memory_rowid", "edges": "src", "entities": "memory_rowid",
              "injection_items": "memory_rowid"}
_IDENTITY = ("memories", "passages", "versions", "topics", "jobs", "injections")
_LOCAL = "(" + ", ".join(f"'{k}'" for k in LOCAL_META) + ")"


class PostgresCopy:
    """``dump_rows`` / ``load_rows`` / ``finish_load`` / ``counts`` of the PostgreSQL store."""

    _conn: Any
    _all: Any
    _one: Any
    _run: Any
    _many: Any
    _local: Any
    transaction: Any
    _refresh_context: Any

    def dump_rows(self, table: str, batch: int = 1000) -> Iterator[list[tuple[Any, ...]]]:
        cols = list(TRANSFER[table])
        where = f" WHERE key NOT IN {_LOCAL} AND org_id = ''" if table == "meta" else ""
        order = _ORDER.get(table, "rowid")
        last: tuple[Any, ...] | None = None
        # keyset pages, so no cursor stays open between batches
        key = [c.strip() for c in order.split(",")]
        while True:
            page_where = where
            params: list[Any] = []
            if last is not None:
                cmp = f"({', '.join(key)}) > ({', '.join(['%s'] * len(key))})"
                page_where = f"{where} AND {cmp}" if where else f" WHERE {cmp}"
                params = list(last)
            rows = self._all(f"SELECT {', '.join(cols)} FROM {table}{page_where} ORDER BY {order} "
                             f"LIMIT {int(batch)}", params)
            if not rows:
                return
            out = []
            for row in rows:
                r = list(row)
                if table == "passages" and r[5] is not None:
                    vec = r[5].to_numpy() if hasattr(r[5], "to_numpy") else r[5]
                    r[5] = np.asarray(vec, dtype=np.float32).tobytes()
                if table == "jobs" and r[cols.index("org_id")] == "":
                    r[cols.index("org_id")] = None
                out.append(tuple(r))
            yield out
            last = tuple(rows[-1][cols.index(k)] for k in key)

    def load_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        cols = TRANSFER[table]
        with self.transaction():
            if table == "meta":
                self._many("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (org_id, key) "
                           "DO UPDATE SET value = excluded.value", [tuple(r) for r in rows])
            elif table == "passages":
                self._many(
                    "INSERT INTO passages (org_id, rowid, memory_rowid, seq, text, tokens, body, vec) "
                    "SELECT m.org_id, %s, %s, %s, %s, %s, to_tsvector('english', %s), %s "
                    "FROM memories m WHERE m.rowid = %s ON CONFLICT DO NOTHING",
                    [(r[0], r[1], r[2], r[3], r[4], segment(r[3]),
                      None if r[5] is None else np.frombuffer(r[5], dtype=np.float32), r[1])
                     for r in rows])
            elif table in _BY_MEMORY:
                marks = ", ".join(["%s"] * len(cols))
                self._many(f"INSERT INTO {table} (org_id, {', '.join(cols)}) SELECT m.org_id, {marks} "
                           f"FROM memories m WHERE m.rowid = %s ON CONFLICT DO NOTHING",
                           [(*r, r[cols.index(_BY_MEMORY[table])]) for r in rows])
            else:
                fixed = [tuple("" if c == "org_id" and v is None and table == "jobs" else v
                               for c, v in zip(cols, r, strict=True)) for r in rows]
                self._many(f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                           f"({', '.join(['%s'] * len(cols))}) ON CONFLICT DO NOTHING", fixed)

    def finish_load(self) -> None:
        with self.transaction():
            for table in _IDENTITY:  # new rows continue after the copied ids
                self._run(f"SELECT setval(pg_get_serial_sequence('{table}', 'rowid'), "
                          f"GREATEST((SELECT MAX(rowid) FROM {table}), 1))")
        raw = [r for (r,) in self._all("SELECT rowid FROM memories WHERE raw = 1 ORDER BY rowid")]
        for i in range(0, len(raw), 500):
            with self.transaction():
                self._refresh_context(raw[i : i + 500])

    def counts(self) -> dict[str, int]:
        out = {}
        for table in TRANSFER:
            where = f" WHERE key NOT IN {_LOCAL} AND org_id = ''" if table == "meta" else ""
            out[table] = int(self._one(f"SELECT COUNT(*) FROM {table}{where}")[0])
        out["vectors"] = int(self._one("SELECT COUNT(*) FROM passages WHERE vec IS NOT NULL")[0])
        return out
