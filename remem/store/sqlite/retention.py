"""The retention policy's part of the SQLite store: finding what is old, and compacting
episodes (deleting them for good while what was derived from them stays).

:class:`RetentionOps` is mixed into :class:`~remem.store.sqlite.SQLiteStore`; the rules
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
from ..rows import COLUMNS

__all__ = ["RetentionOps"]

#: An episode an extract job still has to read: what it says is not in the memories yet.
_UNREAD = ("EXISTS (SELECT 1 FROM jobs j, json_each(j.payload, '$.episodes') je "
           "WHERE j.kind = 'extract' AND j.state IN ('queued', 'running', 'failed') "
           "AND je.value = m.id)")


class RetentionOps:
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
            where += f" AND NOT {_UNREAD}"
        rows = self.conn.execute(
            f"SELECT {COLUMNS} FROM memories m WHERE {where} AND m.rowid > ? "
            f"ORDER BY m.rowid LIMIT ?", [*params, page_after(cursor), limit + 1]).fetchall()
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
                f"SELECT m.rowid, m.id, m.org_id FROM memories m WHERE m.id IN ({marks}) "
                f"AND m.raw = 1 AND m.pinned = 0 AND NOT {_UNREAD} AND {where} ORDER BY m.rowid",
                [*episode_ids, *params]).fetchall()
            if not rows:
                return [], []
            gone = {r: i for r, i, _ in rows}
            doomed = list(gone)
            dm = ",".join("?" * len(doomed))
            lost: dict[int, list[str]] = {}
            for memory, source in conn.execute(
                    f"SELECT memory_rowid, episode_rowid FROM memory_sources WHERE episode_rowid "
                    f"IN ({dm}) AND memory_rowid NOT IN ({dm}) ORDER BY memory_rowid, episode_rowid",
                    [*doomed, *doomed]):
                lost.setdefault(memory, []).append(gone[source])
            # every turn of their sessions: a context may hold a turn it was not next to,
            # when the turns between were hidden at the time
            session = [r for (r,) in conn.execute(
                f"SELECT DISTINCT n.rowid FROM memories e JOIN memories n ON n.org_id = e.org_id "
                f"AND n.session_id = e.session_id AND n.user_id IS e.user_id "
                f"AND n.agent_id IS e.agent_id AND n.project IS e.project AND n.raw = 1 "
                f"WHERE e.rowid IN ({dm}) AND e.session_id IS NOT NULL "
                f"AND n.rowid NOT IN ({dm})", [*doomed, *doomed])]
            words = purged_words(t for (t,) in conn.execute(
                f"SELECT text FROM versions WHERE memory_rowid IN ({dm}) UNION "
                f"SELECT text FROM memories WHERE rowid IN ({dm})", [*doomed, *doomed]))
            conn.execute(
                f"UPDATE injections SET text = NULL, query = NULL WHERE rowid IN (SELECT "
                f"injection_rowid FROM injection_items WHERE memory_rowid IN ({dm}))", doomed)
            conn.execute(f"DELETE FROM memories WHERE rowid IN ({dm})", doomed)
            noted = []
            for memory, sources in lost.items():
                memory_id, version, text, status = conn.execute(
                    "SELECT id, version, text, status FROM memories WHERE rowid = ?",
                    (memory,)).fetchone()
                conn.execute(
                    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, "
                    "at) VALUES (?, ?, 'sources_compacted', ?, ?, ?, ?)",
                    (memory, version, text, status, compacted_note(sources, reason), now))
                noted.append(memory_id)
            self._refresh_context(conn, session)
            for org in {o for _, _, o in rows}:
                for sid, rowid, why in conn.execute(
                        "SELECT session_id, memory_rowid, reason FROM working_memory "
                        "WHERE org_id = ? AND reason IS NOT NULL", (org,)).fetchall():
                    if mentions(why, words):
                        conn.execute("UPDATE working_memory SET reason = NULL WHERE org_id = ? "
                                     "AND session_id = ? AND memory_rowid = ?", (org, sid, rowid))
            # the full-text index keeps deleted terms in its segments until they are merged
            conn.execute("INSERT INTO passages_fts (passages_fts) VALUES ('optimize')")
        return [gone[r] for r in doomed], noted
