"""The retention policy's part of the PostgreSQL store: finding what is old, and
compacting episodes; the statements mirror :mod:`remem.store.sqlite.retention` one for one."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...model import Page, Scope
from ..clauses import aged_sql, scope_sql
from ..policy import compacted_note, mentions, page_after, purged_words
from . import statements as sql

__all__ = ["PostgresRetention"]

M = "%s"



class PostgresRetention:
    """``stored_before`` and ``compact`` (mixed into PostgresStore)."""

    # provided by PostgresStore
    _all: Any
    _run: Any
    _items: Any
    transaction: Any
    _refresh_context: Any

    def stored_before(self, before: float, *, episodes: bool, kinds: Sequence[str] | None = None,
                      statuses: Sequence[str] | None = None, org_id: str | None = None,
                      user_id: str | None = None, project: str | None = None, limit: int = 500,
                      cursor: str | None = None) -> Page:
        where, params = aged_sql(before, episodes=episodes, kinds=kinds, statuses=statuses,
                                 org_id=org_id, user_id=user_id, project=project, mark=M)
        if episodes:
            where += f" AND NOT {sql.UNREAD_EPISODE}"
        rows = self._all(sql.STORED_BEFORE_SELECT_MEMORIES.format(where=where),
                         [*params, page_after(cursor), limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(self._items(rows), str(rows[-1][0]) if more else None)

    def compact(self, episode_ids: Sequence[str], scope: Scope | None, *,
                reason: str) -> tuple[list[str], list[str]]:
        if not episode_ids:
            return [], []
        now = time.time()
        where, params = scope_sql(scope, mark=M) if scope is not None else ("TRUE", [])
        with self.transaction():
            rows = self._all(
                sql.COMPACTABLE_EPISODES.format(where=where),
                [list(episode_ids), *params])
            if not rows:
                return [], []
            gone = {int(r): str(i) for r, i, _ in rows}
            doomed = list(gone)
            lost: dict[int, list[str]] = {}
            for memory, source in self._all(
                    sql.COMPACT_SELECT_MEMORY_SOURCES,
                    (doomed, doomed)):
                lost.setdefault(int(memory), []).append(gone[int(source)])
            # every turn of their sessions: a context may hold a turn it was not next to,
            # when the turns between were hidden at the time
            session = [int(r) for (r,) in self._all(
                sql.COMPACT_NEIGHBOURS, (doomed, doomed))]
            words = purged_words(t for (t,) in self._all(
                sql.PURGE_SELECT_VERSIONS, (doomed, doomed)))
            self._run(sql.PURGE_UPDATE_INJECTIONS, (doomed,))
            self._run(sql.PURGE_DELETE_MEMORIES, (doomed,))
            noted = []
            for memory, sources in lost.items():
                ((org, memory_id, version, text, status),) = self._all(
                    sql.COMPACT_MEMORY_VERSION,
                    (memory,))
                self._run(sql.COMPACT_INSERT_VERSIONS, (org, memory, version, text, status,
                                      compacted_note(sources, reason), now))
                noted.append(str(memory_id))
            self._refresh_context(session)
            for org in {o for _, _, o in rows}:
                for sid, rowid, why in self._all(
                        sql.COMPACT_SELECT_WORKING_MEMORY, (org,)):
                    if mentions(why, words):
                        self._run(sql.PURGE_UPDATE_WORKING_MEMORY, (org, sid, rowid))
        return [gone[r] for r in doomed], noted
