"""The injection log of the PostgreSQL store (mixed into PostgresStore); the statements
mirror :mod:`remem.store.sqlite.injections` one for one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ...errors import NotFoundError
from ...model import HeedRate, Injected, Injection, Scope
from ..base import NewInjection
from ..clauses import scope_sql
from ..policy import page_before
from . import statements as sql

__all__ = ["PostgresInjections"]




def _where(scope: Scope, alias: str = "i") -> tuple[str, list[Any]]:
    return scope_sql(scope.model_copy(update={"nested": False}), alias, mark="%s")


class PostgresInjections:
    """Writes and reads of the injection log (mixed into PostgresStore)."""

    _all: Any
    _one: Any
    _run: Any
    _many: Any
    _local: Any
    write: Any

    def log_injection(self, entry: NewInjection, *, keep_days: float | None,
                      keep_rows: int | None) -> None:
        s = entry.scope
        with self.write(changes=False):
            row = self._local.conn.execute(
                sql.LOG_INJECTION_INSERT_INJECTIONS,
                (entry.id, entry.at, entry.door, s.org_id, s.user_id, s.agent_id, s.project,
                 s.session_id, entry.query, entry.tokens, entry.text)).fetchone()
            rowid = int(row[0])
            ids = [memory_id for memory_id, _, _ in entry.items]
            rows: dict[str, int] = {}
            if ids:
                rows = dict(self._all(sql.LOG_INJECTION_SELECT_MEMORIES,
                                      (ids, s.org_id)))
            self._many(
                sql.LOG_INJECTION_INSERT_INJECTION_ITEMS,
                [(s.org_id, rowid, rank, rows[memory_id], section, json.dumps(list(channels)))
                 for rank, (memory_id, section, channels) in enumerate(entry.items, 1)
                 if memory_id in rows])
            if keep_days is not None:
                self._run(sql.DROP_INJECTIONS_BEFORE, (entry.at - keep_days * 86400,))
            if keep_rows is not None:
                self._run(sql.DROP_INJECTIONS_BEYOND, (keep_rows,))

    def _injections(self, rows: Sequence[Sequence[Any]]) -> list[Injection]:
        if not rows:
            return []
        items: dict[int, list[Injected]] = {r[0]: [] for r in rows}
        for injection, rank, memory_id, kind, section, channels, used_at in self._all(
                sql.INJECTIONS_SELECT_INJECTION_ITEMS, ([r[0] for r in rows],)):
            items[injection].append(Injected(memory_id=memory_id, kind=kind, rank=rank,
                                             section=section, channels=json.loads(channels),
                                             used=used_at is not None))
        return [Injection(id=r[1], at=datetime.fromtimestamp(r[2], timezone.utc), door=r[3],
                          org_id=r[4], user_id=r[5], agent_id=r[6], project=r[7], session_id=r[8],
                          query=r[9], tokens=r[10], text=r[11], items=items[r[0]]) for r in rows]

    def injections(self, scope: Scope, *, door: str | None = None, limit: int = 50,
                   cursor: str | None = None) -> tuple[list[Injection], str | None]:
        where, params = _where(scope)
        if door is not None:
            where += " AND i.door = %s"
            params.append(door)
        rows = self._all(sql.INJECTIONS_SELECT.format(where=where), [*params, page_before(cursor), limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        return self._injections(rows), str(rows[-1][0]) if more else None

    def injection(self, injection_id: str, scope: Scope) -> Injection:
        where, params = _where(scope)
        rows = self._all(sql.INJECTION_SELECT_INJECTIONS.format(where=where),
                         [injection_id, *params])
        if not rows:
            raise NotFoundError(injection_id)
        return self._injections(rows)[0]

    def injections_of(self, memory_id: str, scope: Scope, limit: int = 20) -> list[Injection]:
        where, params = _where(scope)
        return self._injections(self._all(
            sql.INJECTIONS_OF_SELECT.format(where=where), [*params, memory_id, limit]))

    def mark_used(self, memory_ids: Sequence[str], scope: Scope, at: float) -> int:
        if not memory_ids:
            return 0
        where, params = _where(Scope(org_id=scope.org_id, user_id=scope.user_id))
        marked = 0
        with self.write(changes=False):
            for memory_id in memory_ids:
                marked += self._run(
                    sql.MARK_USED_UPDATE_INJECTION_ITEMS.format(where=where), [at, memory_id, at, *params])
        return marked

    def heed_rates(self, scope: Scope, *, since: float | None = None) -> list[HeedRate]:
        where, params = _where(scope)
        if since is not None:
            where += " AND i.at >= %s"
            params.append(since)
        return [HeedRate(door=door, kind=kind, injected=n, used=u) for door, kind, n, u in self._all(
            sql.HEED_RATES_SELECT_INJECTIONS.format(where=where), params)]
