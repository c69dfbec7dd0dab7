"""The injection log of the SQLite store: what each door handed to a model, whether the
agent used it afterwards, and the heed rates that follow.

:class:`InjectionOps` is mixed into :class:`~remem.store.sqlite.SQLiteStore`. Reads stay
inside the scope they are given (exactly: a field left out does not narrow); a write
enforces the retention it is given, in the same transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ...errors import NotFoundError
from ...model import HeedRate, Injected, Injection, Scope
from ..base import NewInjection
from ..clauses import scope_sql
from ..policy import page_before

__all__ = ["InjectionOps"]

_COLUMNS = ("i.rowid, i.id, i.at, i.door, i.org_id, i.user_id, i.agent_id, i.project, "
            "i.session_id, i.query, i.tokens, i.text")


def _where(scope: Scope, alias: str = "i") -> tuple[str, list[Any]]:
    return scope_sql(scope.model_copy(update={"nested": False}), alias)


class InjectionOps:
    """Writes and reads of the injection log (mixed into SQLiteStore)."""

    # provided by SQLiteStore
    conn: sqlite3.Connection
    write: Any

    def log_injection(self, entry: NewInjection, *, keep_days: float | None,
                      keep_rows: int | None) -> None:
        """Record one injection with its items in order; then drop what is older than
        ``keep_days`` (before ``entry.at``) and all but the newest ``keep_rows`` entries.
        Items naming no memory of the scope's org are left out."""
        s = entry.scope
        with self.write(changes=False) as conn:
            cur = conn.execute(
                "INSERT INTO injections (id, at, door, org_id, user_id, agent_id, project, "
                "session_id, query, tokens, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.id, entry.at, entry.door, s.org_id, s.user_id, s.agent_id, s.project,
                 s.session_id, entry.query, entry.tokens, entry.text))
            rowid = cur.lastrowid
            ids = [memory_id for memory_id, _, _ in entry.items]
            rows: dict[str, int] = {}
            if ids:
                marks = ",".join("?" * len(ids))
                rows = dict(conn.execute(
                    f"SELECT id, rowid FROM memories WHERE id IN ({marks}) AND org_id = ?",
                    [*ids, s.org_id]).fetchall())
            conn.executemany(
                "INSERT OR IGNORE INTO injection_items (injection_rowid, rank, memory_rowid, "
                "section, channels) VALUES (?, ?, ?, ?, ?)",
                [(rowid, rank, rows[memory_id], section, json.dumps(list(channels)))
                 for rank, (memory_id, section, channels) in enumerate(entry.items, 1)
                 if memory_id in rows])
            if keep_days is not None:
                conn.execute("DELETE FROM injections WHERE at < ?", (entry.at - keep_days * 86400,))
            if keep_rows is not None:
                conn.execute(
                    "DELETE FROM injections WHERE rowid <= (SELECT rowid FROM injections "
                    "ORDER BY rowid DESC LIMIT 1 OFFSET ?)", (keep_rows,))

    def _injections(self, rows: Sequence[Sequence[Any]]) -> list[Injection]:
        if not rows:
            return []
        marks = ",".join("?" * len(rows))
        items: dict[int, list[Injected]] = {r[0]: [] for r in rows}
        for injection, rank, memory_id, kind, section, channels, used_at in self.conn.execute(
            f"SELECT it.injection_rowid, it.rank, m.id, m.kind, it.section, it.channels, "
            f"it.used_at FROM injection_items it JOIN memories m ON m.rowid = it.memory_rowid "
            f"WHERE it.injection_rowid IN ({marks}) ORDER BY it.injection_rowid, it.rank",
            [r[0] for r in rows]):
            items[injection].append(Injected(memory_id=memory_id, kind=kind, rank=rank,
                                             section=section, channels=json.loads(channels),
                                             used=used_at is not None))
        return [Injection(id=r[1], at=datetime.fromtimestamp(r[2], timezone.utc), door=r[3],
                          org_id=r[4], user_id=r[5], agent_id=r[6], project=r[7], session_id=r[8],
                          query=r[9], tokens=r[10], text=r[11], items=items[r[0]]) for r in rows]

    def injections(self, scope: Scope, *, door: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> tuple[list[Injection], str | None]:
        """The scope's injections, newest first, one page at a time, with the cursor of
        the next page (None at the end)."""
        where, params = _where(scope)
        if door is not None:
            where += " AND i.door = ?"
            params.append(door)
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM injections i WHERE {where} AND i.rowid < ? "
            f"ORDER BY i.rowid DESC LIMIT ?", [*params, page_before(cursor), limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return self._injections(rows), str(rows[-1][0]) if more else None

    def injection(self, injection_id: str, scope: Scope) -> Injection:
        """One injection by id, inside the scope."""
        where, params = _where(scope)
        rows = self.conn.execute(f"SELECT {_COLUMNS} FROM injections i WHERE i.id = ? AND {where}",
                                 [injection_id, *params]).fetchall()
        if not rows:
            raise NotFoundError(injection_id)
        return self._injections(rows)[0]

    def injections_of(self, memory_id: str, scope: Scope, limit: int = 20) -> list[Injection]:
        """The latest injections inside the scope that gave this memory, newest first."""
        where, params = _where(scope)
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM injections i WHERE {where} AND i.rowid IN ("
            f"SELECT it.injection_rowid FROM injection_items it JOIN memories m "
            f"ON m.rowid = it.memory_rowid WHERE m.id = ?) ORDER BY i.rowid DESC LIMIT ?",
            [*params, memory_id, limit]).fetchall()
        return self._injections(rows)

    def mark_used(self, memory_ids: Sequence[str], scope: Scope, at: float) -> int:
        """Mark each memory used in the latest injection inside the scope (by its org and
        user) that gave it before ``at``; returns how many items were marked."""
        if not memory_ids:
            return 0
        where, params = _where(Scope(org_id=scope.org_id, user_id=scope.user_id))
        marked = 0
        with self.write(changes=False) as conn:
            for memory_id in memory_ids:
                cur = conn.execute(
                    f"UPDATE injection_items SET used_at = ? WHERE used_at IS NULL AND "
                    f"(injection_rowid, memory_rowid) = (SELECT it.injection_rowid, it.memory_rowid "
                    f"FROM injection_items it JOIN injections i ON i.rowid = it.injection_rowid "
                    f"JOIN memories m ON m.rowid = it.memory_rowid WHERE m.id = ? AND i.at <= ? "
                    f"AND {where} ORDER BY it.injection_rowid DESC LIMIT 1)",
                    [at, memory_id, at, *params])
                marked += cur.rowcount
        return marked

    def heed_rates(self, scope: Scope, *, since: float | None = None) -> list[HeedRate]:
        """For each door and kind, how many memories were injected and how many used."""
        where, params = _where(scope)
        if since is not None:
            where += " AND i.at >= ?"
            params.append(since)
        return [HeedRate(door=door, kind=kind, injected=n, used=u) for door, kind, n, u in
                self.conn.execute(
                    f"SELECT i.door, m.kind, COUNT(*), COUNT(it.used_at) FROM injections i "
                    f"JOIN injection_items it ON it.injection_rowid = i.rowid "
                    f"JOIN memories m ON m.rowid = it.memory_rowid WHERE {where} "
                    f"GROUP BY i.door, m.kind ORDER BY i.door, m.kind", params)]
