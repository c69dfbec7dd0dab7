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
from ..rows import COLUMNS, JOB_COLUMNS, KEY_COLUMNS, TopicRow, job_info

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

    # --- reading what the agent works on ------------------------------------------------

    def items_by_id(self, ids: Sequence[str]) -> list[MemoryItem]:
        if not ids:
            return []
        return list(self._items(self._all(
            f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY(%s) ORDER BY m.rowid", (list(ids),))))

    def rowids(self, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        return dict(self._all("SELECT id, rowid FROM memories WHERE id = ANY(%s)", (list(ids),)))

    def recent_turns(self, scope: Scope, limit: int, *, before: str | None = None) -> list[MemoryItem]:
        if limit <= 0:
            return []
        where, params = scope_sql(scope, mark=M)
        if before is not None:
            where += " AND m.rowid < (SELECT rowid FROM memories WHERE id = %s)"
            params.append(before)
        rows = self._all(f"SELECT {COLUMNS} FROM memories m WHERE {where} AND m.raw = 1 "
                         f"AND m.status = 'active' ORDER BY m.rowid DESC LIMIT %s", [*params, limit])
        return list(reversed(self._items(rows)))

    def same_episode(self, scope: Scope, role: str | None, text: str,
                     event_time: float | None) -> str | None:
        if scope.session_id is None or event_time is None:
            return None
        row = self._one(
            "SELECT id FROM memories WHERE org_id = %s AND session_id = %s "
            "AND user_id IS NOT DISTINCT FROM %s AND agent_id IS NOT DISTINCT FROM %s "
            "AND project IS NOT DISTINCT FROM %s AND raw = 1 AND role IS NOT DISTINCT FROM %s "
            "AND event_time = %s AND text = %s LIMIT 1",
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
            f"SELECT {COLUMNS} FROM memories m WHERE {' AND '.join(clauses)} "
            f"ORDER BY m.rowid DESC LIMIT %s", [*params, limit])))

    def with_entities(self, scope: Scope, names: Sequence[str], limit: int = 50) -> list[MemoryItem]:
        if not names:
            return []
        where, params = _shared(scope)
        return list(self._items(self._all(
            f"SELECT {COLUMNS} FROM memories m WHERE m.rowid IN (SELECT e.memory_rowid FROM "
            f"entities e WHERE e.name = ANY(%s)) AND {where} AND m.status = 'active' "
            f"ORDER BY m.rowid DESC LIMIT %s", [[n.lower() for n in names], *params, limit])))

    # --- writing what the agent decided -------------------------------------------------

    def _memory(self, memory_id: str, columns: str) -> tuple[Any, ...]:
        row = self._one(f"SELECT {columns} FROM memories WHERE id = %s", (memory_id,))
        if row is None:
            raise NotFoundError(memory_id)
        return tuple(row)

    def merge_into(self, memory_id: str, episode_ids: Sequence[str], *, metadata: dict[str, Any],
                   maturity: str, reason: str) -> None:
        now = time.time()
        with self.transaction():
            org, rowid, version, text, status, *own = self._memory(
                memory_id, "org_id, rowid, version, text, status, door, source, trust")
            self._many("INSERT INTO memory_sources SELECT org_id, %s, rowid FROM memories "
                       "WHERE org_id = %s AND id = %s ON CONFLICT DO NOTHING",
                       [(rowid, org, e) for e in episode_ids])
            prov = least_trusted([row_provenance(own),
                                  *(self._provenances(org, episode_ids) if episode_ids else [])])
            assert prov is not None
            self._run("UPDATE memories SET metadata = %s, maturity = %s, updated_at = %s, "
                      "door = %s, source = %s, trust = %s WHERE org_id = %s AND rowid = %s",
                      (json.dumps(metadata, ensure_ascii=False), maturity, now, prov.door,
                       prov.source, prov.trust, org, rowid))
            self._run("INSERT INTO versions (org_id, memory_rowid, version, action, text, status, "
                      "reason, at) VALUES (%s, %s, %s, 'merged', %s, %s, %s, %s)",
                      (org, rowid, version, text, status, reason, now))

    def supersede(self, old_id: str, new_id: str, *, at: float, reason: str) -> list[str]:
        now = time.time()
        with self.transaction():
            org, old, version, text = self._memory(old_id, "org_id, rowid, version, text")
            (new,) = self._memory(new_id, "rowid")
            self._run("UPDATE memories SET status = 'superseded', valid_to = %s, "
                      "version = version + 1, updated_at = %s WHERE org_id = %s AND rowid = %s",
                      (at, now, org, old))
            self._run("INSERT INTO versions (org_id, memory_rowid, version, action, text, status, "
                      "reason, at) VALUES (%s, %s, %s, 'superseded', %s, 'superseded', %s, %s)",
                      (org, old, version + 1, text, f"{reason} (by {new_id})", now))
            self._run("INSERT INTO edges VALUES (%s, %s, %s, 'supersedes', 1.0, %s) "
                      "ON CONFLICT DO NOTHING", (org, new, old, now))
            flagged = self._all(
                "SELECT m.rowid, m.id, m.metadata FROM edges e JOIN memories m ON m.org_id = e.org_id "
                "AND m.rowid = e.src WHERE e.dst = %s AND e.type = 'derived_from' "
                "AND m.status = 'active' ORDER BY m.rowid", (old,))
            for rowid, _, meta in flagged:
                data = {**json.loads(meta), "review": REVIEW_NOTE.format(old_id=old_id)}
                self._run("UPDATE memories SET metadata = %s WHERE org_id = %s AND rowid = %s",
                          (json.dumps(data, ensure_ascii=False), org, rowid))
        return [i for _, i, _ in flagged]

    def link(self, edges: Sequence[tuple[str, str, str, float]], *, add: bool = False) -> None:
        if not edges:
            return
        now = time.time()
        found = {i: (org, r) for i, org, r in self._all(
            "SELECT id, org_id, rowid FROM memories WHERE id = ANY(%s)",
            (sorted({e[0] for e in edges} | {e[1] for e in edges}),))}
        rows = [(found[s][0], found[s][1], found[d][1], t, w, now) for s, d, t, w in edges
                if s in found and d in found and s != d and found[s][0] == found[d][0]]
        conflict = "DO UPDATE SET weight = edges.weight + excluded.weight" if add else "DO NOTHING"
        with self.transaction():
            self._many(f"INSERT INTO edges VALUES (%s, %s, %s, %s, %s, %s) "
                       f"ON CONFLICT (org_id, src, dst, type) {conflict}", rows)

    def edges_of(self, rowids: Sequence[int]) -> list[tuple[int, int, str, float]]:
        if not rowids:
            return []
        keys = list(rowids)
        return [(int(a), int(b), str(t), float(w)) for a, b, t, w in self._all(
            "SELECT src, dst, type, weight FROM edges WHERE src = ANY(%s) "
            "UNION ALL SELECT dst, src, type, weight FROM edges WHERE dst = ANY(%s)", (keys, keys))]

    def edge_list(self, rowid: int, limit: int = 200) -> list[tuple[int, str, str, float]]:
        return [(int(o), str(t), str(d), float(w)) for o, t, d, w in self._all(
            "SELECT dst, type, 'out', weight FROM edges WHERE src = %s "
            "UNION ALL SELECT src, type, 'in', weight FROM edges WHERE dst = %s "
            "ORDER BY 4 DESC LIMIT %s", (rowid, rowid, limit))]

    def put_memory_vectors(self, memory_id: str, vectors: Sequence[Any]) -> None:
        rows = [r for (r,) in self._all(
            "SELECT p.rowid FROM passages p JOIN memories m ON m.org_id = p.org_id "
            "AND m.rowid = p.memory_rowid WHERE m.id = %s ORDER BY p.seq", (memory_id,))]
        self.put_vectors(list(zip(rows, vectors, strict=True)), [])

    def set_entities(self, memory_id: str, names: Sequence[str]) -> None:
        with self.transaction():
            self._many("INSERT INTO entities SELECT org_id, %s, rowid FROM memories WHERE id = %s "
                       "ON CONFLICT DO NOTHING",
                       [(n.lower(), memory_id) for n in dict.fromkeys(names) if n.strip()])

    def entity_neighbors(self, rowids: Sequence[int], limit: int = 50) -> list[tuple[int, int]]:
        if not rowids:
            return []
        return [(int(a), int(b)) for a, b in self._all(
            "SELECT o.memory_rowid, s.memory_rowid FROM entities s JOIN entities o "
            "ON o.org_id = s.org_id AND o.name = s.name AND o.memory_rowid != s.memory_rowid "
            "WHERE s.memory_rowid = ANY(%s) LIMIT %s", (list(rowids), limit))]

    def touch(self, memory_ids: Sequence[str], *, at: float | None = None) -> None:
        if not memory_ids:
            return
        now = at or time.time()
        with self.transaction():
            self._many("UPDATE memories SET use_count = use_count + 1, used_at = %s WHERE id = %s",
                       [(now, i) for i in memory_ids])

    def use_stats(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, float | None]]:
        if not memory_ids:
            return {}
        return {i: (n, u) for i, n, u in self._all(
            "SELECT id, use_count, used_at FROM memories WHERE id = ANY(%s)", (list(memory_ids),))}

    def set_fields(self, memory_id: str, scope: Scope | None, *, action: str, reason: str | None,
                   status: str | None = None, maturity: str | None = None,
                   metadata: dict[str, Any] | None = None, pinned: bool | None = None) -> None:
        now = time.time()
        with self.transaction():
            where, params = scope_sql(scope, "m", mark=M) if scope is not None else ("TRUE", [])
            row = self._one(f"SELECT m.org_id, m.rowid, m.version, m.text, m.status FROM memories m "
                            f"WHERE m.id = %s AND {where}", [memory_id, *params])
            if row is None:
                raise NotFoundError(memory_id)
            org, rowid, version, text, old_status = row
            new_status = status or old_status
            self._run(
                "UPDATE memories SET status = %s, maturity = COALESCE(%s, maturity), "
                "metadata = COALESCE(%s, metadata), pinned = COALESCE(%s, pinned), "
                "version = version + 1, updated_at = %s, valid_to = CASE WHEN %s THEN %s "
                "ELSE valid_to END WHERE org_id = %s AND rowid = %s",
                (new_status, maturity,
                 None if metadata is None else json.dumps(metadata, ensure_ascii=False),
                 None if pinned is None else int(pinned), now,
                 new_status in ("superseded", "forgotten"), now, org, rowid))
            self._run("INSERT INTO versions (org_id, memory_rowid, version, action, text, status, "
                      "reason, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                      (org, rowid, version + 1, action, text, new_status, reason, now))

    # --- the mind map -------------------------------------------------------------------

    def topics(self, scope: Scope, *, exact: bool = True) -> list[TopicRow]:
        if exact:
            where = "t.org_id = %s AND " + " AND ".join(
                f"t.{n} IS NOT DISTINCT FROM %s" for n in ("user_id", "agent_id", "project"))
            params: list[Any] = [scope.org_id, scope.user_id, scope.agent_id, scope.project]
        else:
            where, params = _shared(scope, "t")
        return [TopicRow(r, p, lab, json.loads(kw), size) for r, p, lab, kw, size in self._all(
            f"SELECT t.rowid, t.parent, t.label, t.keywords, t.size FROM topics t "
            f"WHERE {where} ORDER BY t.rowid", params)]

    def save_topic(self, scope: Scope, topic: TopicRow | None, *, parent: int | None, label: str,
                   keywords: dict[str, int], size: int) -> int:
        now = time.time()
        kw = json.dumps(keywords, ensure_ascii=False)
        with self.transaction():
            if topic is None:
                row = self._local.conn.execute(
                    "INSERT INTO topics (parent, org_id, user_id, agent_id, project, label, keywords, "
                    "size, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "RETURNING rowid",
                    (parent, scope.org_id, scope.user_id, scope.agent_id, scope.project, label, kw,
                     size, now, now)).fetchone()
                self._local.dirty = True
                return int(row[0])
            self._run("UPDATE topics SET parent = %s, label = %s, keywords = %s, size = %s, "
                      "updated_at = %s WHERE rowid = %s", (parent, label, kw, size, now, topic.rowid))
            return topic.rowid

    def place(self, memory_ids: Sequence[str], topic_rowid: int) -> None:
        with self.transaction():
            self._many("UPDATE memories SET topic_rowid = %s WHERE id = %s",
                       [(topic_rowid, i) for i in memory_ids])

    def topic_members(self, topic_rowids: Sequence[int], *, statuses: Sequence[str] = ("active",)
                      ) -> dict[int, list[MemoryItem]]:
        out: dict[int, list[MemoryItem]] = {t: [] for t in topic_rowids}
        if not topic_rowids:
            return out
        rows = self._all(
            f"SELECT {COLUMNS}, m.topic_rowid FROM memories m WHERE m.topic_rowid = ANY(%s) "
            f"AND m.status = ANY(%s) ORDER BY m.use_count DESC, m.rowid",
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
            f"SELECT t.rowid, t.label, t.keywords FROM topics t WHERE {where} AND NOT EXISTS "
            f"(SELECT 1 FROM topics c WHERE c.org_id = t.org_id AND c.parent = t.rowid) "
            f"ORDER BY t.rowid", params), terms)
        if best is None:
            return []
        fwhere, fparams = filters_sql(filters, mark=M)
        return [r for (r,) in self._all(
            f"SELECT m.rowid FROM memories m WHERE m.topic_rowid = %s AND {fwhere} "
            f"ORDER BY m.use_count DESC, m.rowid DESC LIMIT %s", [best, *fparams, limit])]

    # --- working memory -----------------------------------------------------------------

    def working_set(self, scope: Scope) -> list[tuple[MemoryItem, float]]:
        if scope.session_id is None:
            return []
        where, params = _shared(scope)
        rows = self._all(
            f"SELECT {COLUMNS}, w.heat FROM working_memory w JOIN memories m "
            f"ON m.org_id = w.org_id AND m.rowid = w.memory_rowid WHERE w.org_id = %s "
            f"AND w.session_id = %s AND {where} AND m.status = 'active' "
            f"ORDER BY w.heat DESC, w.added_at", [scope.org_id, scope.session_id, *params])
        return list(zip(self._items([r[:-1] for r in rows]), [r[-1] for r in rows], strict=True))

    def warm(self, scope: Scope, heats: dict[str, tuple[float, str]], size: int) -> list[str]:
        assert scope.session_id is not None
        now = time.time()
        ids = self.rowids(list(heats))
        key = (scope.org_id, scope.session_id)
        with self.transaction():
            self._run("UPDATE working_memory SET heat = heat * %s WHERE org_id = %s "
                      "AND session_id = %s", (HEAT_DECAY, *key))
            self._many(
                "INSERT INTO working_memory (org_id, user_id, session_id, memory_rowid, heat, reason, "
                "added_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (org_id, session_id, memory_rowid) DO UPDATE SET "
                "heat = working_memory.heat + excluded.heat, reason = excluded.reason",
                [(scope.org_id, scope.user_id, scope.session_id, ids[i], h, why, now)
                 for i, (h, why) in heats.items() if i in ids])
            cold = self._all(
                "SELECT w.memory_rowid, m.id FROM working_memory w JOIN memories m "
                "ON m.org_id = w.org_id AND m.rowid = w.memory_rowid WHERE w.org_id = %s "
                "AND w.session_id = %s ORDER BY w.heat DESC, w.added_at DESC OFFSET %s",
                (*key, size))
            self._many("DELETE FROM working_memory WHERE org_id = %s AND session_id = %s "
                       "AND memory_rowid = %s", [(*key, r) for r, _ in cold])
        return [i for _, i in cold]

    # --- jobs -----------------------------------------------------------------------------

    def enqueue(self, kind: str, payload: dict[str, Any], *, job_id: str, priority: int = 0,
                key: str | None = None, delay_s: float = 0.0, max_attempts: int = 5,
                org_id: str | None = None, user_id: str | None = None) -> bool:
        now = time.time()
        with self.transaction():
            return bool(self._run(
                "INSERT INTO jobs (id, kind, payload, priority, max_attempts, run_after, "
                "idempotency_key, created_at, updated_at, org_id, user_id) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (job_id, kind, json.dumps(payload, ensure_ascii=False), priority, max_attempts,
                 now + delay_s, key, now, now, org_id or "", user_id)) == 1)

    def has_pending(self, kinds: Sequence[str]) -> bool:
        return self._one("SELECT 1 FROM jobs WHERE kind = ANY(%s) AND ((state = 'queued' AND "
                         "run_after <= %s) OR state = 'running') LIMIT 1",
                         (list(kinds), time.time())) is not None

    def has_job_key(self, key: str) -> bool:
        return self._one("SELECT 1 FROM jobs WHERE idempotency_key = %s LIMIT 1", (key,)) is not None

    def quiet_sessions(self, before: float, limit: int = 100) -> list[tuple[Scope, float]]:
        rows = self._all(
            "SELECT org_id, user_id, agent_id, project, session_id, MAX(observed_at) AS last "
            "FROM memories WHERE raw = 1 AND session_id IS NOT NULL AND observed_at > %s "
            "GROUP BY org_id, user_id, agent_id, project, session_id "
            "HAVING MAX(observed_at) < %s LIMIT %s", (before - 86400, before, limit))
        return [(Scope(org_id=o, user_id=u, agent_id=a, project=p, session_id=s), last)
                for o, u, a, p, s, last in rows]

    def session_seen(self, scope: Scope, before_rowid_of: str) -> bool:
        return self._one(
            "SELECT 1 FROM memories WHERE org_id = %s AND session_id = %s AND raw = 1 AND rowid < "
            "(SELECT rowid FROM memories WHERE id = %s) LIMIT 1",
            (scope.org_id, scope.session_id, before_rowid_of)) is not None

    def finish_job(self, job: Job, result: dict[str, Any] | None = None) -> None:
        now = time.time()
        merge = "" if result is None else \
            ", payload = (payload::jsonb || jsonb_build_object('result', %s::jsonb))::text"
        args = () if result is None else (json.dumps(result),)
        with self.transaction():
            done = self._run(f"UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = %s{merge} "
                             f"WHERE rowid = %s AND state = 'running' AND attempts = %s",
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
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE {' AND '.join(clauses)} "
            f"ORDER BY rowid DESC LIMIT %s", [*params, limit])]

    def job(self, job_id: str, org_id: str | None = None, user_id: str | None = None) -> JobInfo:
        where, params = ("id = %s", [job_id]) if org_id is None else \
            ("id = %s AND org_id = %s", [job_id, org_id])
        if user_id is not None:
            where, params = where + " AND user_id = %s", [*params, user_id]
        row = self._one(f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where}", params)
        if row is None:
            raise JobNotFoundError(job_id)
        return job_info(row)

    def retry_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        self.job(job_id, org_id)
        with self.transaction():
            found = self._run(
                "UPDATE jobs SET state = 'queued', attempts = 0, run_after = %s, last_error = NULL, "
                "updated_at = %s WHERE id = %s AND state IN ('failed', 'cancelled')",
                (time.time(), time.time(), job_id))
        if found == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only failed or cancelled jobs "
                                  "can be retried")
        return self.job(job_id)

    def cancel_job(self, job_id: str, org_id: str | None = None) -> JobInfo:
        self.job(job_id, org_id)
        with self.transaction():
            found = self._run("UPDATE jobs SET state = 'cancelled', updated_at = %s "
                              "WHERE id = %s AND state IN ('queued', 'failed')", (time.time(), job_id))
        if found == 0:
            state = self.job(job_id).state
            raise ValidationError("job_id", f"{job_id} is {state}; only queued or failed jobs "
                                  "can be cancelled")
        return self.job(job_id)

    def prune_jobs(self, older_than_s: float) -> int:
        with self.transaction():
            return int(self._run("DELETE FROM jobs WHERE state = 'done' AND updated_at < %s",
                                 (time.time() - older_than_s,)))

    def all_scopes(self, org_id: str | None = None) -> Iterator[Scope]:
        where, params = ("", []) if org_id is None else ("AND org_id = %s", [org_id])
        for org, user, agent, project in self._all(
                f"SELECT DISTINCT org_id, user_id, agent_id, project FROM memories WHERE raw = 0 "
                f"{where}", params):
            yield Scope(org_id=org, user_id=user, agent_id=agent, project=project)

    # --- API keys -------------------------------------------------------------------------

    def add_key(self, row: Sequence[Any]) -> None:
        with self.transaction():
            self._run(f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                      f"%s, %s)", tuple(row))

    def key_rows(self, *, key_id: str | None = None, digest: str | None = None) -> list[tuple[Any, ...]]:
        clauses, params = ["TRUE"], []
        for column, value in (("id", key_id), ("hash", digest)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        return self._all(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE {' AND '.join(clauses)} "
                         f"ORDER BY created_at, id", params)

    def revoke_key(self, key_id: str, at: float) -> bool:
        with self.transaction():
            self._run("UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                      (at, key_id))
        return self._one("SELECT 1 FROM api_keys WHERE id = %s", (key_id,)) is not None

    def key_counts(self) -> tuple[int, int]:
        row = self._one("SELECT COUNT(*), COUNT(*) FILTER (WHERE revoked_at IS NULL) FROM api_keys")
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def touch_key(self, key_id: str, at: float) -> None:
        with self.transaction():
            self._run("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (at, key_id))
