"""The injection log of the SQLite store: what each door handed to a model, whether the
agent used it afterwards, and the heed rates that follow.

:class:`SQLiteInjections` is mixed into :class:`~remem.store.sqlite.SQLiteStore`. Reads stay
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
from . import statements as sql

__all__ = ["SQLiteInjections"]




def _where(scope: Scope, alias: str = "i") -> tuple[str, list[Any]]:
    return scope_sql(scope.model_copy(update={"nested": False}), alias)


class SQLiteInjections:
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
                sql.LOG_INJECTION_INSERT_INJECTIONS,
                (entry.id, entry.at, entry.door, s.org_id, s.user_id, s.agent_id, s.project,
                 s.session_id, entry.query, entry.tokens, entry.text))
            rowid = cur.lastrowid
            ids = [memory_id for memory_id, _, _ in entry.items]
            rows: dict[str, int] = {}
            if ids:
                marks = ",".join("?" * len(ids))
                rows = dict(conn.execute(
                    sql.LOG_INJECTION_SELECT_MEMORIES.format(marks=marks),
                    [*ids, s.org_id]).fetchall())
            conn.executemany(
                sql.LOG_INJECTION_INSERT_INJECTION_ITEMS,
                [(rowid, rank, rows[memory_id], section, json.dumps(list(channels)))
                 for rank, (memory_id, section, channels) in enumerate(entry.items, 1)
                 if memory_id in rows])
            if keep_days is not None:
                conn.execute(sql.DROP_INJECTIONS_BEFORE, (entry.at - keep_days * 86400,))
            if keep_rows is not None:
                conn.execute(
                    sql.DROP_INJECTIONS_BEYOND, (keep_rows,))

    def _injections(self, rows: Sequence[Sequence[Any]]) -> list[Injection]:
        if not rows:
            return []
        marks = ",".join("?" * len(rows))
        items: dict[int, list[Injected]] = {r[0]: [] for r in rows}
        for injection, rank, memory_id, kind, section, channels, used_at in self.conn.execute(
            sql.INJECTIONS_SELECT_INJECTION_ITEMS.format(marks=marks),
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
            sql.INJECTIONS_SELECT.format(where=where), [*params, page_before(cursor), limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return self._injections(rows), str(rows[-1][0]) if more else None

    def injection(self, injection_id: str, scope: Scope) -> Injection:
        """One injection by id, inside the scope."""
        where, params = _where(scope)
        rows = self.conn.execute(sql.INJECTION_SELECT_INJECTIONS.format(where=where),
                                 [injection_id, *params]).fetchall()
        if not rows:
            raise NotFoundError(injection_id)
        return self._injections(rows)[0]

    def injections_of(self, memory_id: str, scope: Scope, limit: int = 20) -> list[Injection]:
        """The latest injections inside the scope that gave this memory, newest first."""
        where, params = _where(scope)
        rows = self.conn.execute(
            sql.INJECTIONS_OF_SELECT.format(where=where),
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
                    sql.MARK_USED_UPDATE_INJECTION_ITEMS.format(where=where),
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
                    sql.HEED_RATES_SELECT_INJECTIONS.format(where=where), params)]
