"""The memory agent's part of the SQLite store: derived memories, merges, supersession,
edges, entities, the mind map, strength, feedback, working memory and job control.

:class:`SQLiteOps` is mixed into :class:`~remem.store.sqlite.SQLiteStore`; every write
is one transaction, and every method that takes a scope stays inside it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import JobNotFoundError, LeaseLostError, NotFoundError, ValidationError
from ...model import JobInfo, MemoryItem, Scope
from ..base import Job
from ..clauses import filters_sql, scope_sql
from ..policy import HEAT_DECAY, REVIEW_NOTE, best_topic, least_trusted, row_provenance
from ..rows import TopicRow, job_info
from . import statements as sql

__all__ = ["SQLiteOps"]

def _scope_where(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    """The scope wall for memories shared across sessions: session_id does not narrow."""
    return scope_sql(scope.model_copy(update={"session_id": None}), alias)


class SQLiteOps:
    """Queries and writes of the memory agent (mixed into SQLiteStore)."""

    # provided by SQLiteStore
    conn: sqlite3.Connection
    write: Any
    _items: Any
    _provenances: Any
    put_vectors: Any
    _around: Any
    _refresh_context: Any

    # --- reading what the agent works on ------------------------------------------------

    def items_by_id(self, ids: Sequence[str]) -> list[MemoryItem]:
        """Memories by id, in rowid order, whatever their scope (for background jobs)."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            sql.ITEMS_BY_ID_SELECT_MEMORIES.format(marks=marks),
            list(ids)).fetchall()
        return list(self._items(rows))

    def rowids(self, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return dict(self.conn.execute(
            sql.ROWIDS_SELECT_MEMORIES.format(marks=marks), list(ids)).fetchall())

    def recent_turns(self, scope: Scope, limit: int, *, before: str | None = None) -> list[MemoryItem]:
        """The last ``limit`` active episodes of the scope (its session, when it names
        one), oldest first; with ``before``, only those before that episode."""
        if limit <= 0:
            return []
        where, params = scope_sql(scope)
        if before is not None:
            where += " AND m.rowid < (SELECT rowid FROM memories WHERE id = ?)"
            params.append(before)
        rows = self.conn.execute(
            sql.RECENT_TURNS_SELECT_MEMORIES.format(where=where), [*params, limit]).fetchall()
        return list(reversed(self._items(rows)))

    def same_episode(self, scope: Scope, role: str | None, text: str,
                     event_time: float | None) -> str | None:
        """The id of an episode with this speaker, text and time in this session, if any."""
        if scope.session_id is None or event_time is None:
            return None
        row = self.conn.execute(
            sql.SAME_EPISODE_SELECT_MEMORIES,
            (scope.org_id, scope.session_id, scope.user_id, scope.agent_id, scope.project, role,
             event_time, text)).fetchone()
        return None if row is None else str(row[0])

    def derived(self, scope: Scope, kinds: Sequence[str] | None = None, *,
                statuses: Sequence[str] = ("active",), text: str | None = None,
                limit: int = 500) -> list[MemoryItem]:
        """Derived memories in the scope (any session), newest first; ``text`` keeps
        those with exactly that text."""
        where, params = _scope_where(scope)
        clauses = [where, "m.raw = 0", f"m.status IN ({','.join('?' * len(statuses))})"]
        params += list(statuses)
        if text is not None:
            clauses.append("m.text = ?")
            params.append(text)
        if kinds:
            clauses.append(f"m.kind IN ({','.join('?' * len(kinds))})")
            params += list(kinds)
        rows = self.conn.execute(
            sql.DERIVED_SELECT_MEMORIES.format(clauses=' AND '.join(clauses)), [*params, limit]).fetchall()
        return list(self._items(rows))

    def with_entities(self, scope: Scope, names: Sequence[str], limit: int = 50) -> list[MemoryItem]:
        """Active derived memories in the scope that mention any of ``names``."""
        if not names:
            return []
        where, params = _scope_where(scope)
        marks = ",".join("?" * len(names))
        rows = self.conn.execute(
            sql.WITH_ENTITIES.format(marks=marks, where=where),
            [*[n.lower() for n in names], *params, limit]).fetchall()
        return list(self._items(rows))

    # --- writing what the agent decided -------------------------------------------------

    def merge_into(self, memory_id: str, episode_ids: Sequence[str], *, metadata: dict[str, Any],
                   maturity: str, reason: str) -> None:
        """Add sources to a memory and record why, without a new text version; its
        provenance becomes the least trusted of its own and the new sources'."""
        now = time.time()
        with self.write() as conn:
            row = conn.execute(sql.MERGE_INTO_SELECT_MEMORIES, (memory_id,)).fetchone()
            if row is None:
                raise NotFoundError(memory_id)
            conn.executemany(
                sql.MERGE_INTO_INSERT_MEMORY_SOURCES,
                [(row[0], e) for e in episode_ids])
            prov = least_trusted([row_provenance(row[4:7]),
                                  *(self._provenances(row[7], episode_ids) if episode_ids else [])])
            assert prov is not None
            conn.execute(sql.MERGE_INTO_UPDATE_MEMORIES,
                         (json.dumps(metadata, ensure_ascii=False), maturity, now, prov.door,
                          prov.source, prov.trust, row[0]))
            conn.execute(
                sql.MERGE_INTO_INSERT_VERSIONS, (row[0], row[1], row[2], row[3], reason, now))

    def supersede(self, old_id: str, new_id: str, *, at: float, reason: str) -> list[str]:
        """Mark ``old_id`` superseded by ``new_id`` (valid until ``at``), link them, and flag
        for review the memories derived from the old one; returns the flagged ids."""
        now = time.time()
        with self.write() as conn:
            old = conn.execute(sql.SUPERSEDE_SELECT_MEMORIES,
                               (old_id,)).fetchone()
            new = conn.execute(sql.ROWID_BY_ID, (new_id,)).fetchone()
            if old is None or new is None:
                raise NotFoundError(old_id if old is None else new_id)
            conn.execute(
                sql.SUPERSEDE_UPDATE_MEMORIES, (at, now, old[0]))
            conn.execute(
                sql.SUPERSEDE_INSERT_VERSIONS,
                (old[0], old[1] + 1, old[2], f"{reason} (by {new_id})", now))
            conn.execute(sql.SUPERSEDE_INSERT_EDGES,
                         (new[0], old[0], now))
            flagged = conn.execute(
                sql.SUPERSEDE_SELECT_EDGES,
                (old[0],)).fetchall()
            for rowid, _, meta in flagged:
                data = {**json.loads(meta), "review": REVIEW_NOTE.format(old_id=old_id)}
                conn.execute(sql.SET_METADATA,
                             (json.dumps(data, ensure_ascii=False), rowid))
        return [i for _, i, _ in flagged]

    def link(self, edges: Sequence[tuple[str, str, str, float]], *, add: bool = False) -> None:
        """Create typed edges ``(src id, dst id, type, weight)``; with ``add``, an existing
        edge is strengthened by ``weight`` instead of left as it is."""
        if not edges:
            return
        now = time.time()
        ids = self.rowids(sorted({e[0] for e in edges} | {e[1] for e in edges}))
        rows = [(ids[s], ids[d], t, w, now) for s, d, t, w in edges if s in ids and d in ids and s != d]
        conflict = "DO UPDATE SET weight = weight + excluded.weight" if add else "DO NOTHING"
        with self.write() as conn:
            conn.executemany(sql.LINK_INSERT_EDGES.format(conflict=conflict), rows)

    def edges_of(self, rowids: Sequence[int]) -> list[tuple[int, int, str, float]]:
        """Edges touching these memories, both directions: ``(rowid, other, type, weight)``."""
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        return [tuple(r) for r in self.conn.execute(  # type: ignore[misc]
            sql.EDGES_OF_SELECT.format(marks=marks),
            [*rowids, *rowids])]

    def edge_list(self, rowid: int, limit: int = 200) -> list[tuple[int, str, str, float]]:
        """The edges of one memory with their direction: ``(other, type, "out"|"in", weight)``,
        heaviest first."""
        return [tuple(r) for r in self.conn.execute(  # type: ignore[misc]
            sql.EDGE_LIST_SELECT_EDGES, (rowid, rowid, limit))]

    def put_memory_vectors(self, memory_id: str, vectors: Sequence[Any]) -> None:
        """Store the vectors of a memory's passages, in passage order."""
        rows = [r for (r,) in self.conn.execute(
            sql.PUT_MEMORY_VECTORS_SELECT_PASSAGES, (memory_id,))]
        self.put_vectors(list(zip(rows, vectors, strict=True)), [])

    def set_entities(self, memory_id: str, names: Sequence[str]) -> None:
        with self.write() as conn:
            conn.executemany(
                sql.SET_ENTITIES_INSERT,
                [(n.lower(), memory_id) for n in dict.fromkeys(names) if n.strip()])

    def entity_neighbors(self, rowids: Sequence[int], limit: int = 50) -> list[tuple[int, int]]:
        """``(other, seed)`` pairs of memories that mention an entity a seed mentions."""
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        return [tuple(r) for r in self.conn.execute(  # type: ignore[misc]
            sql.ENTITY_NEIGHBORS_SELECT_ENTITIES.format(marks=marks), [*rowids, limit])]

    def touch(self, memory_ids: Sequence[str], *, at: float | None = None) -> None:
        """Count a use of each memory (it was recalled into a context, or found helpful)."""
        if not memory_ids:
            return
        now = at or time.time()
        with self.write() as conn:
            conn.executemany(sql.TOUCH_UPDATE_MEMORIES, [(now, i) for i in memory_ids])

    def use_stats(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float | None]]:
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        return {i: (n, u) for i, n, u in self.conn.execute(
            sql.USE_STATS_SELECT_MEMORIES.format(marks=marks),
            list(memory_ids))}

    def set_fields(self, memory_id: str, scope: Scope | None, *, action: str, reason: str | None,
                   status: str | None = None, maturity: str | None = None,
                   metadata: dict[str, Any] | None = None, pinned: bool | None = None) -> None:
        """Change status, maturity, metadata or pinning, recorded as one history entry."""
        now = time.time()
        with self.write() as conn:
            where, params = scope_sql(scope or Scope(), "m") if scope is not None else ("1", [])
            row = conn.execute(
                sql.SET_FIELDS_SELECT_MEMORIES.format(where=where), [memory_id, *params]).fetchone()
            if row is None:
                raise NotFoundError(memory_id)
            new_status = status or row[3]
            # a turn hidden (or shown again) changes what its neighbours' context holds
            near = self._around(conn, [row[0]]) if new_status != row[3] else set()
            conn.execute(
                sql.SET_FIELDS_UPDATE_MEMORIES,
                (new_status, maturity,
                 None if metadata is None else json.dumps(metadata, ensure_ascii=False),
                 None if pinned is None else int(pinned), now, new_status, now, row[0]))
            conn.execute(
                sql.SET_STATUS_INSERT_VERSIONS,
                (row[0], row[1] + 1, action, row[2], new_status, reason, now))
            self._refresh_context(conn, near)

    # --- the mind map -------------------------------------------------------------------

    def topics(self, scope: Scope, *, exact: bool = True) -> list[TopicRow]:
        """The topics of exactly this scope (the tree memories are placed in), or, with
        ``exact=False``, of every scope inside it (a field left out matches any)."""
        if exact:
            where = "t.org_id = ? AND " + " AND ".join(
                f"t.{n} IS ?" for n in ("user_id", "agent_id", "project"))
            params: list[Any] = [scope.org_id, scope.user_id, scope.agent_id, scope.project]
        else:
            where, params = _scope_where(scope, "t")
        return [TopicRow(r, p, lab, json.loads(kw), size) for r, p, lab, kw, size in self.conn.execute(
            sql.TOPICS_SELECT.format(where=where), params)]

    def save_topic(self, scope: Scope, topic: TopicRow | None, *, parent: int | None, label: str,
                   keywords: dict[str, int], size: int) -> int:
        """Create (``topic`` None) or rewrite a topic; returns its rowid."""
        now = time.time()
        kw = json.dumps(keywords, ensure_ascii=False)
        with self.write() as conn:
            if topic is None:
                cur = conn.execute(
                    sql.SAVE_TOPIC_INSERT_TOPICS,
                    (parent, scope.org_id, scope.user_id, scope.agent_id, scope.project, label, kw,
                     size, now, now))
                assert cur.lastrowid is not None
                return cur.lastrowid
            conn.execute(sql.SAVE_TOPIC_UPDATE_TOPICS,
                         (parent, label, kw, size, now, topic.rowid))
            return topic.rowid

    def place(self, memory_ids: Sequence[str], topic_rowid: int) -> None:
        with self.write() as conn:
            conn.executemany(sql.PLACE_UPDATE_MEMORIES,
                             [(topic_rowid, i) for i in memory_ids])

    def topic_members(self, topic_rowids: Sequence[int], *, statuses: Sequence[str] = ("active",)
                      ) -> dict[int, list[MemoryItem]]:
        out: dict[int, list[MemoryItem]] = {t: [] for t in topic_rowids}
        if not topic_rowids:
            return out
        marks = ",".join("?" * len(topic_rowids))
        smarks = ",".join("?" * len(statuses))
        rows = self.conn.execute(
            sql.TOPIC_MEMBERS_SELECT_MEMORIES.format(marks=marks, smarks=smarks),
            [*topic_rowids, *statuses]).fetchall()
        for row, item in zip(rows, self._items([r[:-1] for r in rows]), strict=True):
            out[row[-1]].append(item)
        return out

    def topic_members_for(self, terms: Sequence[str], scope: Scope, filters: Any,
                          limit: int = 10) -> list[int]:
        """The most used memories of the leaf topic whose keywords the query's words hit
        most (at least two of them, or one that names the topic), best first."""
        if not terms:
            return []
        where, params = _scope_where(scope, "t")
        best = best_topic(self.conn.execute(
            sql.TOPIC_MEMBERS_FOR_SELECT_TOPICS.format(where=where), params), terms)
        if best is None:
            return []
        fwhere, fparams = filters_sql(filters)
        return [r for (r,) in self.conn.execute(
            sql.TOPIC_MEMBERS_FOR_SELECT_MEMORIES.format(fwhere=fwhere), [best, *fparams, limit])]

    # --- working memory -----------------------------------------------------------------

    def working_set(self, scope: Scope) -> list[tuple[MemoryItem, float]]:
        """The session's working memory, hottest first, still active and in scope."""
        if scope.session_id is None:
            return []
        where, params = _scope_where(scope)
        rows = self.conn.execute(
            sql.WORKING_SET_SELECT_WORKING_MEMORY.format(where=where),
            [scope.org_id, scope.session_id, *params]).fetchall()
        return list(zip(self._items([r[:-1] for r in rows]), [r[-1] for r in rows], strict=True))

    def warm(self, scope: Scope, heats: dict[str, tuple[float, str]], size: int) -> list[str]:
        """Raise the heat of memories in the session's working memory (adding them), then
        evict the coldest beyond ``size``; returns the evicted ids."""
        assert scope.session_id is not None
        now = time.time()
        ids = self.rowids(list(heats))
        with self.write() as conn:
            conn.execute(sql.WARM_UPDATE_WORKING_MEMORY, (HEAT_DECAY, scope.org_id, scope.session_id))
            conn.executemany(
                sql.WARM_INSERT_WORKING_MEMORY,
                [(scope.org_id, scope.user_id, scope.session_id, ids[i], h, why, now)
                 for i, (h, why) in heats.items() if i in ids])
            cold = conn.execute(
                sql.WARM_SELECT_WORKING_MEMORY,
                (scope.org_id, scope.session_id, size)).fetchall()
            conn.executemany(sql.WARM_DELETE_WORKING_MEMORY,
                             [(scope.org_id, scope.session_id, r) for r, _ in cold])
        return [i for _, i in cold]

    # --- jobs -----------------------------------------------------------------------------

    def enqueue(self, kind: str, payload: dict[str, Any], *, job_id: str, priority: int = 0,
                key: str | None = None, delay_s: float = 0.0, max_attempts: int = 5,
                org_id: str | None = None, user_id: str | None = None) -> bool:
        """Queue a job (in the caller's transaction if one is open); False when ``key`` is
        taken. ``org_id`` and ``user_id`` say whose data it concerns (None: the whole store,
        the whole org)."""
        now = time.time()
        with self.write() as c:
            return c.execute(
                sql.ENQUEUE_INSERT_JOBS,
                (job_id, kind, json.dumps(payload, ensure_ascii=False), priority, max_attempts,
                 now + delay_s, key, now, now, org_id, user_id)).rowcount == 1

    def has_pending(self, kinds: Sequence[str]) -> bool:
        """True while a job of one of these kinds is queued and due, or running."""
        marks = ",".join("?" * len(kinds))
        return self.conn.execute(
            sql.HAS_PENDING_SELECT_JOBS.format(marks=marks), [*kinds, time.time()]).fetchone() is not None

    def has_job_key(self, key: str) -> bool:
        return self.conn.execute(sql.HAS_JOB_KEY_SELECT_JOBS,
                                 (key,)).fetchone() is not None

    def quiet_sessions(self, before: float, limit: int = 100) -> list[tuple[Scope, float]]:
        """Sessions whose last turn came before ``before`` (and within a day of it)."""
        rows = self.conn.execute(
            sql.QUIET_SESSIONS_SELECT_MEMORIES,
            (before - 86400, before, limit)).fetchall()
        return [(Scope(org_id=o, user_id=u, agent_id=a, project=p, session_id=s), last)
                for o, u, a, p, s, last in rows]

    def session_seen(self, scope: Scope, before_rowid_of: str) -> bool:
        """True when the session already had an episode before this one."""
        return self.conn.execute(
            sql.SESSION_SEEN_SELECT_MEMORIES,
            (scope.org_id, scope.session_id, before_rowid_of)).fetchone() is not None

    def finish_job(self, job: Job, result: dict[str, Any] | None = None) -> None:
        """Mark a claimed job done with its result, in the caller's transaction if one is
        open; raises :class:`LeaseLostError` (rolling that transaction back) when another
        worker took the job over meanwhile."""
        now = time.time()
        with self.write() as conn:
            cur = conn.execute(
                sql.FINISH_JOB_UPDATE_JOBS,
                (now, None if result is None else 1, json.dumps(result or {}), job.rowid, job.attempts))
            if cur.rowcount != 1:
                raise LeaseLostError(f"job {job.id} was taken over by another worker; "
                                     "its results are discarded")

    def jobs(self, *, state: str | None = None, kind: str | None = None,
             org_id: str | None = None, user_id: str | None = None,
             limit: int = 50) -> list[JobInfo]:
        """Jobs, newest first; with ``org_id``, only that org's; with ``user_id`` too, only
        those about that user's data."""
        clauses, params = ["1"], []
        if org_id is not None:
            clauses.append("org_id = ?")
            params.append(org_id)
        if user_id is not None:
            clauses.append("user_id = ?")
            params.append(user_id)
        if state is not None:
            clauses.append("state = ?")
            params.append(state)
        if kind is not None:
            clauses.append("kind = ?")
            params.append(kind)
        return [job_info(r) for r in self.conn.execute(
            sql.JOBS_SELECT.format(clauses=' AND '.join(clauses)), [*params, limit])]

    def job(self, job_id: str, org_id: str | None = None, user_id: str | None = None) -> JobInfo:
        """One job; with ``org_id`` (and ``user_id``), only if it is that org's (user's)."""
        row = self.conn.execute(sql.JOB_SELECT_JOBS,
                                (job_id, org_id, org_id, user_id, user_id)).fetchone()
        if row is None:
            raise JobNotFoundError(job_id)
        return job_info(row)

    def retry_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        """Queue a failed or cancelled job again, with fresh attempts."""
        self.job(job_id, org_id)
        with self.write() as conn:
            cur = conn.execute(
                sql.RETRY_JOB_UPDATE_JOBS,
                (time.time(), time.time(), job_id))
        if cur.rowcount == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only failed or cancelled jobs "
                                  "can be retried")
        return self.job(job_id)

    def cancel_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        """Cancel a queued job (a running one finishes its step first)."""
        self.job(job_id, org_id)
        with self.write() as conn:
            cur = conn.execute(sql.CANCEL_JOB_UPDATE_JOBS,
                               (time.time(), job_id))
        if cur.rowcount == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only queued or failed jobs "
                                  "can be cancelled")
        return self.job(job_id)

    def prune_jobs(self, older_than_s: float) -> int:
        """Delete jobs done more than ``older_than_s`` ago; returns how many."""
        with self.write() as conn:
            return conn.execute(sql.PRUNE_JOBS_DELETE,
                                (time.time() - older_than_s,)).rowcount

    def all_scopes(self, org_id: str | None = None) -> Iterator[Scope]:
        """Every (org, user, agent, project) that has derived memories (in one org)."""
        for org, user, agent, project in self.conn.execute(
                sql.ALL_SCOPES_SELECT_MEMORIES, (org_id, org_id)):
            yield Scope(org_id=org, user_id=user, agent_id=agent, project=project)

    # --- API keys -------------------------------------------------------------------------

    def add_key(self, row: Sequence[Any]) -> None:
        """Store a new API key (a row of ``KEY_COLUMNS``; only its hash, never the key)."""
        with self.write() as conn:
            conn.execute(sql.ADD_KEY_INSERT_API_KEYS,
                         tuple(row))

    def key_rows(self, *, key_id: str | None = None, digest: str | None = None) -> list[tuple[Any, ...]]:
        """API keys (all, or the one with this id or hash), oldest first."""
        clauses, params = ["1"], []
        for column, value in (("id", key_id), ("hash", digest)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        return [tuple(r) for r in self.conn.execute(
            sql.KEY_ROWS_SELECT_API_KEYS.format(clauses=' AND '.join(clauses)), params)]

    def revoke_key(self, key_id: str, at: float) -> bool:
        """Revoke a key (a revoked one stays as it is); False when no key has this id."""
        with self.write() as conn:
            conn.execute(sql.REVOKE_KEY_UPDATE_API_KEYS,
                         (at, key_id))
            return conn.execute(sql.REVOKE_KEY_SELECT_API_KEYS, (key_id,)).fetchone() is not None

    def key_counts(self) -> tuple[int, int]:
        """How many keys were ever created, and how many are not revoked."""
        row = self.conn.execute(sql.KEY_COUNTS_SELECT_API_KEYS).fetchone()
        return int(row[0]), int(row[1])

    def touch_key(self, key_id: str, at: float) -> None:
        """Record when a key was last used."""
        with self.write() as conn:
            conn.execute(sql.TOUCH_KEY_UPDATE_API_KEYS, (at, key_id))
