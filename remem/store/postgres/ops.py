"""The memory agent's part of the PostgreSQL store: derived memories, merges,
supersession, edges, entities, the mind map, strength, working memory, jobs and API keys.

:class:`PostgresOps` is mixed into :class:`~remem.store.postgres.store.PostgresStore`; the
statements mirror :mod:`remem.store.sqlite.ops` one for one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ...errors import JobNotFoundError, LeaseLostError, NotFoundError, ValidationError
from ...model import JobInfo, MemoryItem, Scope
from ..base import Filters, Job
from ..clauses import filters_sql, scope_sql
from ..policy import HEAT_DECAY, REVIEW_NOTE, best_topic, least_trusted, row_provenance
from ..rows import TopicRow, job_info
from . import statements as sql

__all__ = ["PostgresOps"]

M = "%s"


def _shared(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    """The scope wall for memories shared across sessions: session_id does not narrow."""
    return scope_sql(scope.model_copy(update={"session_id": None}), alias, mark=M)


class PostgresOps:
    """Queries and writes of the memory agent (mixed into PostgresStore)."""

    # provided by PostgresStore
    _all: Any
    _one: Any
    _run: Any
    _many: Any
    _local: Any
    _items: Any
    _provenances: Any
    transaction: Any
    put_vectors: Any
    derived_of: Any
    _around: Any
    _refresh_context: Any

    # --- reading what the agent works on ------------------------------------------------

    def items_by_id(self, ids: Sequence[str]) -> list[MemoryItem]:
        if not ids:
            return []
        return list(self._items(self._all(
            sql.ITEMS_BY_ID_SELECT_MEMORIES, (list(ids),))))

    def rowids(self, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        return dict(self._all(sql.ROWIDS_SELECT_MEMORIES, (list(ids),)))

    def recent_turns(self, scope: Scope, limit: int, *, before: str | None = None) -> list[MemoryItem]:
        if limit <= 0:
            return []
        where, params = scope_sql(scope, mark=M)
        if before is not None:
            where += " AND m.rowid < (SELECT rowid FROM memories WHERE id = %s)"
            params.append(before)
        rows = self._all(sql.RECENT_TURNS_SELECT_MEMORIES.format(where=where), [*params, limit])
        return list(reversed(self._items(rows)))

    def same_episode(self, scope: Scope, role: str | None, text: str,
                     event_time: float | None) -> str | None:
        if scope.session_id is None or event_time is None:
            return None
        row = self._one(
            sql.SAME_EPISODE_SELECT_MEMORIES,
            (scope.org_id, scope.session_id, scope.user_id, scope.agent_id, scope.project, role,
             event_time, text))
        return None if row is None else str(row[0])

    def derived(self, scope: Scope, kinds: Sequence[str] | None = None, *,
                statuses: Sequence[str] = ("active",), text: str | None = None,
                limit: int = 500) -> list[MemoryItem]:
        where, params = _shared(scope)
        clauses = [where, "m.raw = 0", "m.status = ANY(%s)"]
        params.append(list(statuses))
        if text is not None:
            clauses.append("m.text = %s")
            params.append(text)
        if kinds:
            clauses.append("m.kind = ANY(%s)")
            params.append(list(kinds))
        return list(self._items(self._all(
            sql.DERIVED_SELECT_MEMORIES.format(clauses=' AND '.join(clauses)), [*params, limit])))

    def with_entities(self, scope: Scope, names: Sequence[str], limit: int = 50) -> list[MemoryItem]:
        if not names:
            return []
        where, params = _shared(scope)
        return list(self._items(self._all(
            sql.WITH_ENTITIES.format(where=where),
            [[n.lower() for n in names], *params, limit])))

    # --- writing what the agent decided -------------------------------------------------

    def _memory(self, memory_id: str, columns: str) -> tuple[Any, ...]:
        row = self._one(sql.MEMORY_SELECT_MEMORIES.format(columns=columns), (memory_id,))
        if row is None:
            raise NotFoundError(memory_id)
        return tuple(row)

    def merge_into(self, memory_id: str, episode_ids: Sequence[str], *, metadata: dict[str, Any],
                   maturity: str, reason: str) -> None:
        now = time.time()
        with self.transaction():
            org, rowid, version, text, status, *own = self._memory(
                memory_id, "org_id, rowid, version, text, status, door, source, trust")
            self._many(sql.MERGE_INTO_INSERT_MEMORY_SOURCES,
                       [(rowid, org, e) for e in episode_ids])
            prov = least_trusted([row_provenance(own),
                                  *(self._provenances(org, episode_ids) if episode_ids else [])])
            assert prov is not None
            self._run(sql.MERGE_INTO_UPDATE_MEMORIES,
                      (json.dumps(metadata, ensure_ascii=False), maturity, now, prov.door,
                       prov.source, prov.trust, org, rowid))
            self._run(sql.MERGE_INTO_INSERT_VERSIONS,
                      (org, rowid, version, text, status, reason, now))

    def supersede(self, old_id: str, new_id: str, *, at: float, reason: str) -> list[str]:
        now = time.time()
        with self.transaction():
            org, old, version, text = self._memory(old_id, "org_id, rowid, version, text")
            (new,) = self._memory(new_id, "rowid")
            self._run(sql.SUPERSEDE_UPDATE_MEMORIES,
                      (at, now, org, old))
            self._run(sql.SUPERSEDE_INSERT_VERSIONS,
                      (org, old, version + 1, text, f"{reason} (by {new_id})", now))
            self._run(sql.SUPERSEDE_INSERT_EDGES, (org, new, old, now))
            flagged = self._all(
                sql.SUPERSEDE_SELECT_EDGES, (old,))
            for rowid, _, meta in flagged:
                data = {**json.loads(meta), "review": REVIEW_NOTE.format(old_id=old_id)}
                self._run(sql.SET_METADATA,
                          (json.dumps(data, ensure_ascii=False), org, rowid))
        return [i for _, i, _ in flagged]

    def link(self, edges: Sequence[tuple[str, str, str, float]], *, add: bool = False) -> None:
        if not edges:
            return
        now = time.time()
        found = {i: (org, r) for i, org, r in self._all(
            sql.LINK_SELECT_MEMORIES,
            (sorted({e[0] for e in edges} | {e[1] for e in edges}),))}
        rows = [(found[s][0], found[s][1], found[d][1], t, w, now) for s, d, t, w in edges
                if s in found and d in found and s != d and found[s][0] == found[d][0]]
        conflict = "DO UPDATE SET weight = edges.weight + excluded.weight" if add else "DO NOTHING"
        with self.transaction():
            self._many(sql.LINK_INSERT_EDGES.format(conflict=conflict), rows)

    def edges_of(self, rowids: Sequence[int]) -> list[tuple[int, int, str, float]]:
        if not rowids:
            return []
        keys = list(rowids)
        return [(int(a), int(b), str(t), float(w)) for a, b, t, w in self._all(
            sql.EDGES_OF_SELECT, (keys, keys))]

    def edge_list(self, rowid: int, limit: int = 200) -> list[tuple[int, str, str, float]]:
        return [(int(o), str(t), str(d), float(w)) for o, t, d, w in self._all(
            sql.EDGE_LIST_SELECT_EDGES, (rowid, rowid, limit))]

    def put_memory_vectors(self, memory_id: str, vectors: Sequence[Any]) -> None:
        rows = [r for (r,) in self._all(
            sql.PUT_MEMORY_VECTORS_SELECT_PASSAGES, (memory_id,))]
        self.put_vectors(list(zip(rows, vectors, strict=True)), [])

    def set_entities(self, memory_id: str, names: Sequence[str]) -> None:
        with self.transaction():
            self._many(sql.SET_ENTITIES_INSERT,
                       [(n.lower(), memory_id) for n in dict.fromkeys(names) if n.strip()])

    def entity_neighbors(self, rowids: Sequence[int], limit: int = 50) -> list[tuple[int, int]]:
        if not rowids:
            return []
        return [(int(a), int(b)) for a, b in self._all(
            sql.ENTITY_NEIGHBORS_SELECT_ENTITIES, (list(rowids), limit))]

    def touch(self, memory_ids: Sequence[str], *, at: float | None = None) -> None:
        if not memory_ids:
            return
        now = at or time.time()
        with self.transaction():
            self._many(sql.TOUCH_UPDATE_MEMORIES,
                       [(now, i) for i in memory_ids])

    def use_stats(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float | None]]:
        if not memory_ids:
            return {}
        return {i: (n, u) for i, n, u in self._all(
            sql.USE_STATS_SELECT_MEMORIES, (list(memory_ids),))}

    def set_fields(self, memory_id: str, scope: Scope | None, *, action: str, reason: str | None,
                   status: str | None = None, maturity: str | None = None,
                   metadata: dict[str, Any] | None = None, pinned: bool | None = None) -> None:
        now = time.time()
        with self.transaction():
            where, params = scope_sql(scope, "m", mark=M) if scope is not None else ("TRUE", [])
            row = self._one(sql.SET_FIELDS_SELECT_MEMORIES.format(where=where), [memory_id, *params])
            if row is None:
                raise NotFoundError(memory_id)
            org, rowid, version, text, old_status = row
            new_status = status or old_status
            # a turn hidden (or shown again) changes what its neighbours' context holds
            near = self._around([rowid]) if new_status != old_status else set()
            self._run(
                sql.SET_FIELDS_UPDATE_MEMORIES,
                (new_status, maturity,
                 None if metadata is None else json.dumps(metadata, ensure_ascii=False),
                 None if pinned is None else int(pinned), now,
                 new_status in ("superseded", "forgotten"), now, org, rowid))
            self._run(sql.SET_STATUS_INSERT_VERSIONS,
                      (org, rowid, version + 1, action, text, new_status, reason, now))
            self._refresh_context(near)

    # --- the mind map -------------------------------------------------------------------

    def topics(self, scope: Scope, *, exact: bool = True) -> list[TopicRow]:
        if exact:
            where = "t.org_id = %s AND " + " AND ".join(
                f"t.{n} IS NOT DISTINCT FROM %s" for n in ("user_id", "agent_id", "project"))
            params: list[Any] = [scope.org_id, scope.user_id, scope.agent_id, scope.project]
        else:
            where, params = _shared(scope, "t")
        return [TopicRow(r, p, lab, json.loads(kw), size) for r, p, lab, kw, size in self._all(
            sql.TOPICS_SELECT.format(where=where), params)]

    def save_topic(self, scope: Scope, topic: TopicRow | None, *, parent: int | None, label: str,
                   keywords: dict[str, int], size: int) -> int:
        now = time.time()
        kw = json.dumps(keywords, ensure_ascii=False)
        with self.transaction():
            if topic is None:
                row = self._local.conn.execute(
                    sql.SAVE_TOPIC_INSERT_TOPICS,
                    (parent, scope.org_id, scope.user_id, scope.agent_id, scope.project, label, kw,
                     size, now, now)).fetchone()
                self._local.dirty = True
                return int(row[0])
            self._run(sql.SAVE_TOPIC_UPDATE_TOPICS, (parent, label, kw, size, now, topic.rowid))
            return topic.rowid

    def place(self, memory_ids: Sequence[str], topic_rowid: int) -> None:
        with self.transaction():
            self._many(sql.PLACE_UPDATE_MEMORIES,
                       [(topic_rowid, i) for i in memory_ids])

    def topic_members(self, topic_rowids: Sequence[int], *, statuses: Sequence[str] = ("active",)
                      ) -> dict[int, list[MemoryItem]]:
        out: dict[int, list[MemoryItem]] = {t: [] for t in topic_rowids}
        if not topic_rowids:
            return out
        rows = self._all(
            sql.TOPIC_MEMBERS_SELECT_MEMORIES,
            (list(topic_rowids), list(statuses)))
        for row, item in zip(rows, self._items([r[:-1] for r in rows]), strict=True):
            out[row[-1]].append(item)
        return out

    def topic_members_for(self, terms: Sequence[str], scope: Scope, filters: Filters,
                          limit: int = 10) -> list[int]:
        if not terms:
            return []
        where, params = _shared(scope, "t")
        best = best_topic(self._all(
            sql.TOPIC_MEMBERS_FOR_SELECT_TOPICS.format(where=where), params), terms)
        if best is None:
            return []
        fwhere, fparams = filters_sql(filters, mark=M)
        return [r for (r,) in self._all(
            sql.TOPIC_MEMBERS_FOR_SELECT_MEMORIES.format(fwhere=fwhere), [best, *fparams, limit])]

    # --- working memory -----------------------------------------------------------------

    def working_set(self, scope: Scope) -> list[tuple[MemoryItem, float]]:
        if scope.session_id is None:
            return []
        where, params = _shared(scope)
        rows = self._all(
            sql.WORKING_SET_SELECT_WORKING_MEMORY.format(where=where),
            [scope.org_id, scope.session_id, *params])
        return list(zip(self._items([r[:-1] for r in rows]), [r[-1] for r in rows], strict=True))

    def warm(self, scope: Scope, heats: dict[str, tuple[float, str]], size: int) -> list[str]:
        assert scope.session_id is not None
        now = time.time()
        ids = self.rowids(list(heats))
        key = (scope.org_id, scope.session_id)
        with self.transaction():
            self._run(sql.WARM_UPDATE_WORKING_MEMORY, (HEAT_DECAY, *key))
            self._many(
                sql.WARM_INSERT_WORKING_MEMORY,
                [(scope.org_id, scope.user_id, scope.session_id, ids[i], h, why, now)
                 for i, (h, why) in heats.items() if i in ids])
            cold = self._all(
                sql.WARM_SELECT_WORKING_MEMORY,
                (*key, size))
            self._many(sql.WARM_DELETE_WORKING_MEMORY, [(*key, r) for r, _ in cold])
        return [i for _, i in cold]

    # --- jobs -----------------------------------------------------------------------------

    def enqueue(self, kind: str, payload: dict[str, Any], *, job_id: str, priority: int = 0,
                key: str | None = None, delay_s: float = 0.0, max_attempts: int = 5,
                org_id: str | None = None, user_id: str | None = None) -> bool:
        now = time.time()
        with self.transaction():
            return bool(self._run(
                sql.ENQUEUE_INSERT_JOBS,
                (job_id, kind, json.dumps(payload, ensure_ascii=False), priority, max_attempts,
                 now + delay_s, key, now, now, org_id or "", user_id)) == 1)

    def has_pending(self, kinds: Sequence[str]) -> bool:
        return self._one(sql.HAS_PENDING_SELECT_JOBS,
                         (list(kinds), time.time())) is not None

    def has_job_key(self, key: str) -> bool:
        return self._one(sql.HAS_JOB_KEY_SELECT_JOBS, (key,)) is not None

    def quiet_sessions(self, before: float, limit: int = 100) -> list[tuple[Scope, float]]:
        rows = self._all(
            sql.QUIET_SESSIONS_SELECT_MEMORIES, (before - 86400, before, limit))
        return [(Scope(org_id=o, user_id=u, agent_id=a, project=p, session_id=s), last)
                for o, u, a, p, s, last in rows]

    def session_seen(self, scope: Scope, before_rowid_of: str) -> bool:
        return self._one(
            sql.SESSION_SEEN_SELECT_MEMORIES,
            (scope.org_id, scope.session_id, before_rowid_of)) is not None

    def finish_job(self, job: Job, result: dict[str, Any] | None = None) -> None:
        now = time.time()
        merge = "" if result is None else \
            ", payload = (payload::jsonb || jsonb_build_object('result', %s::jsonb))::text"
        args = () if result is None else (json.dumps(result),)
        with self.transaction():
            done = self._run(sql.FINISH_JOB_UPDATE_JOBS.format(merge=merge),
                             (now, *args, job.rowid, job.attempts))
            if done != 1:
                raise LeaseLostError(f"job {job.id} was taken over by another worker; "
                                     "its results are discarded")

    def jobs(self, *, state: str | None = None, kind: str | None = None,
             org_id: str | None = None, user_id: str | None = None,
             limit: int = 50) -> list[JobInfo]:
        clauses, params = ["TRUE"], []
        for column, value in (("org_id", org_id), ("user_id", user_id), ("state", state),
                              ("kind", kind)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        return [job_info(r) for r in self._all(
            sql.JOBS_SELECT.format(clauses=' AND '.join(clauses)), [*params, limit])]

    def job(self, job_id: str, org_id: str | None = None, user_id: str | None = None) -> JobInfo:
        where, params = ("id = %s", [job_id]) if org_id is None else \
            ("id = %s AND org_id = %s", [job_id, org_id])
        if user_id is not None:
            where, params = where + " AND user_id = %s", [*params, user_id]
        row = self._one(sql.JOB_SELECT_JOBS.format(where=where), params)
        if row is None:
            raise JobNotFoundError(job_id)
        return job_info(row)

    def retry_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        self.job(job_id, org_id)
        with self.transaction():
            found = self._run(
                sql.RETRY_JOB_UPDATE_JOBS,
                (time.time(), time.time(), job_id))
        if found == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only failed or cancelled jobs "
                                  "can be retried")
        return self.job(job_id)

    def cancel_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        self.job(job_id, org_id)
        with self.transaction():
            found = self._run(sql.CANCEL_JOB_UPDATE_JOBS, (time.time(), job_id))
        if found == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only queued or failed jobs "
                                  "can be cancelled")
        return self.job(job_id)

    def prune_jobs(self, older_than_s: float) -> int:
        with self.transaction():
            return int(self._run(sql.PRUNE_JOBS_DELETE,
                                 (time.time() - older_than_s,)))

    def all_scopes(self, org_id: str | None = None) -> Iterator[Scope]:
        where, params = ("", []) if org_id is None else ("AND org_id = %s", [org_id])
        for org, user, agent, project in self._all(
                sql.ALL_SCOPES_SELECT_MEMORIES.format(where=where), params):
            yield Scope(org_id=org, user_id=user, agent_id=agent, project=project)

    # --- API keys -------------------------------------------------------------------------

    def add_key(self, row: Sequence[Any]) -> None:
        with self.transaction():
            self._run(sql.ADD_KEY_INSERT_API_KEYS, tuple(row))

    def key_rows(self, *, key_id: str | None = None, digest: str | None = None) -> list[tuple[Any, ...]]:
        clauses, params = ["TRUE"], []
        for column, value in (("id", key_id), ("hash", digest)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        return self._all(sql.KEY_ROWS_SELECT_API_KEYS.format(clauses=' AND '.join(clauses)), params)

    def revoke_key(self, key_id: str, at: float) -> bool:
        with self.transaction():
            self._run(sql.REVOKE_KEY_UPDATE_API_KEYS,
                      (at, key_id))
        return self._one(sql.REVOKE_KEY_SELECT_API_KEYS, (key_id,)) is not None

    def key_counts(self) -> tuple[int, int]:
        row = self._one(sql.KEY_COUNTS_SELECT_API_KEYS)
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def touch_key(self, key_id: str, at: float) -> None:
        with self.transaction():
            self._run(sql.TOUCH_KEY_UPDATE_API_KEYS, (at, key_id))
