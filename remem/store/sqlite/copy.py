"""Copying the SQLite store row by row, for ``remem migrate`` (mixed into SQLiteStore)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from ...text import segment
from ..rows import LOCAL_META, TRANSFER

__all__ = ["SQLiteCopy"]

_ORDER = {"meta": "key", "memory_sources": "memory_rowid, episode_rowid", "edges": "src, dst, type",
          "entities": "name, memory_rowid", "working_memory": "org_id, session_id, memory_rowid",
          "api_keys": "id", "injection_items": "injection_rowid, rank", "shares": "id"}
_SELECT = {
    "passages": "SELECT p.rowid, p.memory_rowid, p.seq, p.text, p.tokens, v.vec FROM passages p "
                "LEFT JOIN vectors v ON v.passage_rowid = p.rowid ORDER BY p.rowid",
    "meta": f"SELECT key, value FROM meta WHERE key NOT IN {LOCAL_META!r} ORDER BY key",
}


class SQLiteCopy:
    """``dump_rows`` / ``load_rows`` / ``finish_load`` / ``counts`` of the SQLite store."""

    conn: sqlite3.Connection
    write: Any
    _refresh_context: Any

    def dump_rows(self, table: str, batch: int = 1000) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` as :data:`~remem.store.rows.TRANSFER` lays it out."""
        sql = _SELECT.get(table) or (f"SELECT {', '.join(TRANSFER[table])} FROM {table} "
                                     f"ORDER BY {_ORDER.get(table, 'rowid')}")
        cur = self.conn.execute(sql)
        while rows := cur.fetchmany(batch):
            yield [tuple(r) for r in rows]

    def load_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Insert copied rows, keeping their ids; rows already there are left as they are."""
        cols = TRANSFER[table]
        with self.write() as conn:
            if table == "passages":
                conn.executemany("INSERT OR IGNORE INTO passages (rowid, memory_rowid, seq, text, tokens) "
                                 "VALUES (?, ?, ?, ?, ?)", [r[:5] for r in rows])
                conn.executemany("INSERT INTO passages_fts (rowid, body, context) SELECT ?, ?, '' "
                                 "WHERE NOT EXISTS (SELECT 1 FROM passages_fts WHERE rowid = ?)",
                                 [(r[0], segment(r[3]), r[0]) for r in rows])
                conn.executemany("INSERT OR IGNORE INTO vectors (passage_rowid, vec) VALUES (?, ?)",
                                 [(r[0], r[5]) for r in rows if r[5] is not None])
                return
            verb = "INSERT OR REPLACE" if table == "meta" else "INSERT OR IGNORE"
            conn.executemany(f"{verb} INTO {table} ({', '.join(cols)}) "
                             f"VALUES ({', '.join('?' * len(cols))})", [tuple(r) for r in rows])

    def finish_load(self) -> None:
        """Rebuild what derives from the copied rows: each turn's full-text context."""
        raw = [r for (r,) in self.conn.execute("SELECT rowid FROM memories WHERE raw = 1 ORDER BY rowid")]
        for i in range(0, len(raw), 500):
            with self.write() as conn:
                self._refresh_context(conn, raw[i : i + 500])

    def counts(self) -> dict[str, int]:
        """Rows per copied table, and ``vectors``."""
        out = {}
        for table in TRANSFER:
            where = f" WHERE key NOT IN {LOCAL_META!r}" if table == "meta" else ""
            out[table] = int(self.conn.execute(f"SELECT COUNT(*) FROM {table}{where}").fetchone()[0])
        out["vectors"] = int(self.conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        return out
