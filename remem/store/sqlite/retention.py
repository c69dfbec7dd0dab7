"""The retention policy's part of the SQLite store: finding what is old, and compacting
episodes (deleting them for good while what was derived from them stays).

:class:`SQLiteRetention` is mixed into :class:`~remem.store.sqlite.SQLiteStore`; the rules
(which items, how old, what to do) live in :mod:`remem.govern.retention`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ...model import Page, Scope
from ..clauses import aged_sql, scope_sql
from ..policy import compacted_note, mentions, page_after, purged_words
from . import statements as sql

__all__ = ["SQLiteRetention"]




class SQLiteRetention:
    """``stored_before`` and ``compact`` (mixed into SQLiteStore)."""

    # provided by SQLiteStore
    conn: sqlite3.Connection
    write: Any
    _items: Any
    _refresh_context: Any

    def stored_before(self, before: float, *, episodes: bool, kinds: Sequence[str] | None = None,
                      statuses: Sequence[str] | None = None, org_id: str | None = None,
                      user_id: str | None = None, project: str | None = None, limit: int = 500,
                      cursor: str | None = None) -> Page:
        """Unpinned episodes (or derived memories) stored before ``before``, oldest first;
        an episode an extract job has still to read is not among them."""
        where, params = aged_sql(before, episodes=episodes, kinds=kinds, statuses=statuses,
                                 org_id=org_id, user_id=user_id, project=project)
        if episodes:
            where += f" AND NOT {sql.UNREAD_EPISODE}"
        rows = self.conn.execute(
            sql.STORED_BEFORE_SELECT_MEMORIES.format(where=where),
            [*params, page_after(cursor), limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(self._items(rows), str(rows[-1][0]) if more else None)

    def compact(self, episode_ids: Sequence[str], scope: Scope | None, *,
                reason: str) -> tuple[list[str], list[str]]:
        """Delete episodes for good, keeping the memories derived from them (noted in
        their history); see :meth:`remem.store.base.MemoryStore.compact`."""
        if not episode_ids:
            return [], []
        now = time.time()
        where, params = scope_sql(scope) if scope is not None else ("1 = 1", [])
        marks = ",".join("?" * len(episode_ids))
        with self.write() as conn:
            rows = conn.execute(
                sql.COMPACTABLE_EPISODES.format(marks=marks, where=where),
                [*episode_ids, *params]).fetchall()
            if not rows:
                return [], []
            gone = {r: i for r, i, _ in rows}
            doomed = list(gone)
            dm = ",".join("?" * len(doomed))
            lost: dict[int, list[str]] = {}
            for memory, source in conn.execute(
                    sql.COMPACT_SELECT_MEMORY_SOURCES.format(dm=dm),
                    [*doomed, *doomed]):
                lost.setdefault(memory, []).append(gone[source])
            # every turn of their sessions: a context may hold a turn it was not next to,
            # when the turns between were hidden at the time
            session = [r for (r,) in conn.execute(
                sql.COMPACT_NEIGHBOURS.format(dm=dm), [*doomed, *doomed])]
            words = purged_words(t for (t,) in conn.execute(
                sql.COMPACT_SELECT_VERSIONS.format(dm=dm), [*doomed, *doomed]))
            conn.execute(
                sql.COMPACT_UPDATE_INJECTIONS.format(dm=dm), doomed)
            conn.execute(sql.COMPACT_DELETE_MEMORIES.format(dm=dm), doomed)
            noted = []
            for memory, sources in lost.items():
                memory_id, version, text, status = conn.execute(
                    sql.COMPACT_MEMORY_VERSION,
                    (memory,)).fetchone()
                conn.execute(
                    sql.COMPACT_INSERT_VERSIONS,
                    (memory, version, text, status, compacted_note(sources, reason), now))
                noted.append(memory_id)
            self._refresh_context(conn, session)
            for org in {o for _, _, o in rows}:
                for sid, rowid, why in conn.execute(
                        sql.PURGE_SELECT_WORKING_MEMORY, (org,)).fetchall():
                    if mentions(why, words):
                        conn.execute(sql.PURGE_UPDATE_WORKING_MEMORY, (org, sid, rowid))
            # the full-text index keeps deleted terms in its segments until they are merged
            conn.execute(sql.PURGE_INSERT_PASSAGES_FTS)
        return [gone[r] for r in doomed], noted
