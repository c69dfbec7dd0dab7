"""The retention policy's part of the PostgreSQL store: finding what is old, and
compacting episodes; the statements mirror :mod:`remem.store.sqlite.retention` one for one."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...model import Page, Scope
from ..clauses import aged_sql, scope_sql
from ..policy import compacted_note, mentions, page_after, purged_words
from ..rows import COLUMNS

__all__ = ["PostgresRetention"]

M = "%s"
#: An episode an extract job still has to read: what it says is not in the memories yet.
_UNREAD = ("EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'extract' "
           "AND j.state IN ('queued', 'running', 'failed') "
           "AND (j.payload::jsonb -> 'episodes') ? m.id)")


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
            where += f" AND NOT {_UNREAD}"
        rows = self._all(f"SELECT {COLUMNS} FROM memories m WHERE {where} AND m.rowid > %s "
                         f"ORDER BY m.rowid LIMIT %s", [*params, page_after(cursor), limit + 1])
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
                f"SELECT m.rowid, m.id, m.org_id FROM memories m WHERE m.id = ANY(%s) "
                f"AND m.raw = 1 AND m.pinned = 0 AND NOT {_UNREAD} AND {where} ORDER BY m.rowid",
                [list(episode_ids), *params])
            if not rows:
                return [], []
            gone = {int(r): str(i) for r, i, _ in rows}
            doomed = list(gone)
            lost: dict[int, list[str]] = {}
            for memory, source in self._all(
                    "SELECT memory_rowid, episode_rowid FROM memory_sources WHERE episode_rowid "
                    "= ANY(%s) AND NOT memory_rowid = ANY(%s) ORDER BY memory_rowid, episode_rowid",
                    (doomed, doomed)):
                lost.setdefault(int(memory), []).append(gone[int(source)])
            # every turn of their sessions: a context may hold a turn it was not next to,
            # when the turns between were hidden at the time
            session = [int(r) for (r,) in self._all(
                "SELECT DISTINCT n.rowid FROM memories e JOIN memories n ON n.org_id = e.org_id "
                "AND n.session_id = e.session_id AND n.user_id IS NOT DISTINCT FROM e.user_id "
                "AND n.agent_id IS NOT DISTINCT FROM e.agent_id "
                "AND n.project IS NOT DISTINCT FROM e.project AND n.raw = 1 "
                "WHERE e.rowid = ANY(%s) AND e.session_id IS NOT NULL "
                "AND NOT n.rowid = ANY(%s)", (doomed, doomed))]
            words = purged_words(t for (t,) in self._all(
                "SELECT text FROM versions WHERE memory_rowid = ANY(%s) UNION "
                "SELECT text FROM memories WHERE rowid = ANY(%s)", (doomed, doomed)))
            self._run("UPDATE injections SET text = NULL, query = NULL WHERE (org_id, rowid) IN "
                      "(SELECT org_id, injection_rowid FROM injection_items WHERE memory_rowid = "
                      "ANY(%s))", (doomed,))
            self._run("DELETE FROM memories WHERE rowid = ANY(%s)", (doomed,))
            noted = []
            for memory, sources in lost.items():
                ((org, memory_id, version, text, status),) = self._all(
                    "SELECT org_id, id, version, text, status FROM memories WHERE rowid = %s",
                    (memory,))
                self._run("INSERT INTO versions (org_id, memory_rowid, version, action, text, "
                          "status, reason, at) VALUES (%s, %s, %s, 'sources_compacted', %s, %s, "
                          "%s, %s)", (org, memory, version, text, status,
                                      compacted_note(sources, reason), now))
                noted.append(str(memory_id))
            self._refresh_context(session)
            for org in {o for _, _, o in rows}:
                for sid, rowid, why in self._all(
                        "SELECT session_id, memory_rowid, reason FROM working_memory "
                        "WHERE org_id = %s AND reason IS NOT NULL", (org,)):
                    if mentions(why, words):
                        self._run("UPDATE working_memory SET reason = NULL WHERE org_id = %s AND "
                                  "session_id = %s AND memory_rowid = %s", (org, sid, rowid))
        return [gone[r] for r in doomed], noted
