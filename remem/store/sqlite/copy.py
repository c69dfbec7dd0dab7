"""Copying the SQLite store row by row, for ``remem migrate`` (mixed into SQLiteStore)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ...text import segment
from ..rows import LOCAL_META, TRANSFER
from . import statements as sql

__all__ = ["SQLiteCopy"]




class SQLiteCopy:
    """``dump_rows`` / ``load_rows`` / ``finish_load`` / ``counts`` of the SQLite store."""

    conn: sqlite3.Connection
    write: Any
    _refresh_context: Any

    def dump_rows(self, table: str, batch: int = 1000) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` as :data:`~remem.store.rows.TRANSFER` lays it out."""
        query = sql.COPY_SELECT.get(table) or (f"SELECT {', '.join(TRANSFER[table])} FROM {table} "
                                     f"ORDER BY {sql.COPY_ORDER.get(table, 'rowid')}")
        cur = self.conn.execute(query)
        while rows := cur.fetchmany(batch):
            yield [tuple(r) for r in rows]

    def load_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Insert copied rows, keeping their ids; rows already there are left as they are."""
        cols = TRANSFER[table]
        with self.write() as conn:
            if table == "passages":
                conn.executemany(sql.LOAD_ROWS_INSERT_PASSAGES, [r[:5] for r in rows])
                conn.executemany(sql.LOAD_ROWS_INSERT_PASSAGES_FTS,
                                 [(r[0], segment(r[3]), r[0]) for r in rows])
                conn.executemany(sql.LOAD_ROWS_INSERT_VECTORS,
                                 [(r[0], r[5]) for r in rows if r[5] is not None])
                return
            verb = "INSERT OR REPLACE" if table == "meta" else "INSERT OR IGNORE"
            conn.executemany(sql.LOAD_ROWS.format(verb=verb, table=table, columns=', '.join(cols),
                                                 marks=', '.join('?' * len(cols))),
                             [tuple(r) for r in rows])

    def finish_load(self) -> None:
        """Rebuild what derives from the copied rows: each turn's full-text context."""
        raw = [r for (r,) in self.conn.execute(sql.FINISH_LOAD_SELECT_MEMORIES)]
        for i in range(0, len(raw), 500):
            with self.write() as conn:
                self._refresh_context(conn, raw[i : i + 500])

    def counts(self) -> dict[str, int]:
        """Rows per copied table, and ``vectors``."""
        out = {}
        for table in TRANSFER:
            where = f" WHERE key NOT IN {LOCAL_META!r}" if table == "meta" else ""
            counted = sql.COUNTS_SELECT.format(table=table, where=where)
            out[table] = int(self.conn.execute(counted).fetchone()[0])
        out["vectors"] = int(self.conn.execute(sql.COUNT_VECTORS).fetchone()[0])
        return out
