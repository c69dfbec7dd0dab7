"""Copying the PostgreSQL store row by row, for ``remem migrate`` (mixed into PostgresStore)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...text import segment
from ..rows import TRANSFER
from . import statements as sql

__all__ = ["PostgresCopy"]

#: tables whose rows name a memory but not its org: the org is read from the memory
_BY_MEMORY = {"memory_sources": "memory_rowid", "passages": "memory_rowid",
              "versions": "memory_rowid", "edges": "src", "entities": "memory_rowid",
              "injection_items": "memory_rowid"}
_IDENTITY = ("memories", "passages", "versions", "topics", "jobs", "injections")


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
        where = f" WHERE key NOT IN {sql.LOCAL_KEYS} AND org_id = ''" if table == "meta" else ""
        order = sql.COPY_ORDER.get(table, "rowid")
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
            rows = self._all(sql.DUMP_ROWS.format(columns=', '.join(cols), table=table, where=page_where,
                                                  order=order, batch=int(batch)), params)
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
                self._many(sql.SET_META_INSERT, [tuple(r) for r in rows])
            elif table == "passages":
                self._many(
                    sql.LOAD_ROWS_INSERT_PASSAGES,
                    [(r[0], r[1], r[2], r[3], r[4], segment(r[3]),
                      None if r[5] is None else np.frombuffer(r[5], dtype=np.float32), r[1])
                     for r in rows])
            elif table in _BY_MEMORY:
                marks = ", ".join(["%s"] * len(cols))
                self._many(sql.LOAD_ROWS_BY_MEMORY.format(table=table, cols=', '.join(cols), marks=marks),
                           [(*r, r[cols.index(_BY_MEMORY[table])]) for r in rows])
            else:
                fixed = [tuple("" if c == "org_id" and v is None and table == "jobs" else v
                               for c, v in zip(cols, r, strict=True)) for r in rows]
                self._many(sql.LOAD_ROWS.format(table=table, columns=', '.join(cols),
                                                marks=', '.join(['%s'] * len(cols))), fixed)

    def finish_load(self) -> None:
        with self.transaction():
            for table in _IDENTITY:  # new rows continue after the copied ids
                self._run(sql.RESET_ROWID_SEQUENCE.format(table=table))
        raw = [r for (r,) in self._all(sql.FINISH_LOAD_SELECT_MEMORIES)]
        for i in range(0, len(raw), 500):
            with self.transaction():
                self._refresh_context(raw[i : i + 500])

    def counts(self) -> dict[str, int]:
        out = {}
        for table in TRANSFER:
            where = f" WHERE key NOT IN {sql.LOCAL_KEYS} AND org_id = ''" if table == "meta" else ""
            out[table] = int(self._one(sql.COUNTS_SELECT.format(table=table, where=where))[0])
        out["vectors"] = int(self._one(sql.COUNT_VECTORS)[0])
        return out
