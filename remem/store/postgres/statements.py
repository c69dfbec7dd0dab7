"""Every statement of the PostgreSQL store, as named constants, grouped by the module that
runs it; a constant holding ``{name}`` fields is a template the caller fills with
``.format(...)`` (a fragment such as a WHERE clause built from the scope), its values
always bound as ``%s`` parameters."""

from __future__ import annotations

from ..rows import AUDIT_COLUMNS, COLUMNS, JOB_COLUMNS, KEY_COLUMNS, LOCAL_META, SHARE_COLUMNS

# --- fragments, and statements more than one place runs -----------------------------------

#: The text search configuration of the full-text columns.
TSCONFIG = "english"
#: The injection log's columns (alias ``i``).
INJECTION_COLUMNS = ("i.rowid, i.id, i.at, i.door, i.org_id, i.user_id, i.agent_id, i.project, "
                     "i.session_id, i.query, i.tokens, i.text")
#: The one grant between a scope and a grantee (bound as org, user, project, kind, grantee).
SAME_SHARE = ("org_id = %s AND COALESCE(user_id, '') = COALESCE(%s, '') AND "
              "COALESCE(project, '') = COALESCE(%s, '') AND grantee_kind = %s AND grantee = %s")
#: An episode an extract job still has to read: what it says is not in the memories yet.
UNREAD_EPISODE = ("EXISTS (SELECT 1 FROM jobs j WHERE j.kind = 'extract' "
                  "AND j.state IN ('queued', 'running', 'failed') "
                  "AND (j.payload::jsonb -> 'episodes') ? m.id)")
#: The meta keys that belong to one store and are never copied, as an SQL list.
LOCAL_KEYS = "(" + ", ".join(f"'{k}'" for k in LOCAL_META) + ")"
#: For ``remem migrate``: the order each table is copied in (rowid when not named here).
COPY_ORDER = {"meta": "key", "memory_sources": "memory_rowid, episode_rowid", "edges": "src, dst, type",
              "entities": "name, memory_rowid", "working_memory": "org_id, session_id, memory_rowid",
              "api_keys": "id", "injection_items": "injection_rowid, rank", "shares": "id"}


# --- store.py -------------------------------------------------------------------------------

META_TABLE_EXISTS = "SELECT to_regclass('meta')"
STORED_EMBEDDER = "SELECT key, value FROM meta WHERE org_id = '' AND key IN ('embedder', 'dim')"
SET_ITERATIVE_SCAN = "SET hnsw.iterative_scan = relaxed_order"
SET_EF_SEARCH = "SET hnsw.ef_search = 200"
#: building the vector index once after a bulk load (the index itself: see below)
BUILD_SETTINGS = ("SELECT set_config('maintenance_work_mem', %s, false), "
                  "set_config('max_parallel_maintenance_workers', %s, false)")
BUMP_CHANGES = "SELECT nextval('remem_changes')"
CHANGE_TOKEN = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM remem_changes"
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(%s)"
MIGRATIONS_TABLE_EXISTS = "SELECT to_regclass('remem_migrations')"
CREATE_VECTOR_EXTENSION = "CREATE EXTENSION IF NOT EXISTS vector"
CREATE_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS remem_migrations (number INTEGER PRIMARY KEY, applied_at DOUBLE "
    "PRECISION NOT NULL)"
)
SCHEMA_VERSION_SELECT = "SELECT COALESCE(MAX(number), 0) FROM remem_migrations"
RECORD_MIGRATION = "INSERT INTO remem_migrations VALUES (%s, %s)"
RECORD_EMBEDDER = "INSERT INTO meta (key, value) VALUES ('embedder', %s) ON CONFLICT DO NOTHING"
RECORD_DIM = "INSERT INTO meta (key, value) VALUES ('dim', %s) ON CONFLICT DO NOTHING"
DROP_VECTOR_INDEX = "DROP INDEX IF EXISTS passages_vec"
DROP_VECTOR_COLUMN = "ALTER TABLE passages DROP COLUMN vec"
ADD_VECTOR_COLUMN = "ALTER TABLE passages ADD COLUMN vec VECTOR({dim})"
VECTOR_STORAGE_MAIN = "ALTER TABLE passages ALTER COLUMN vec SET STORAGE MAIN"
CREATE_VECTOR_INDEX = (
    "CREATE INDEX IF NOT EXISTS passages_vec ON passages USING hnsw (vec vector_cosine_ops)"
)
RESET_VECTORS_UPDATE_PASSAGES = "UPDATE passages SET vec = NULL WHERE vec IS NOT NULL"
RESET_VECTORS_DELETE_JOBS = "DELETE FROM jobs WHERE kind = 'embed' AND state IN ('queued', 'running')"
RESET_VECTORS_SELECT_PASSAGES = "SELECT rowid FROM passages ORDER BY rowid"
META_SELECT = "SELECT value FROM meta WHERE org_id = '' AND key = %s"
SET_META_INSERT = (
    "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (org_id, key) DO UPDATE SET value = "
    "excluded.value"
)
INSERT_PASSAGE_ROWS_PASSAGES = (
    f"INSERT INTO passages (org_id, memory_rowid, seq, text, tokens, body, context, context_text) "
    f"VALUES (%s, %s, %s, %s, %s, to_tsvector('{TSCONFIG}', %s), to_tsvector('{TSCONFIG}', %s), %s) "
    f"RETURNING rowid"
)
ADJACENT_SELECT_MEMORIES = (
    "SELECT n.rowid, n.text FROM memories e CROSS JOIN LATERAL (SELECT n.rowid, n.text FROM memories "
    "n WHERE n.org_id = e.org_id AND n.session_id = e.session_id AND n.user_id IS NOT DISTINCT FROM "
    "e.user_id AND n.agent_id IS NOT DISTINCT FROM e.agent_id AND n.project IS NOT DISTINCT FROM "
    "e.project AND n.raw = 1 AND n.status = 'active' AND n.rowid {op} e.rowid ORDER BY n.rowid "
    "{order} LIMIT 1) n WHERE e.rowid = %s AND e.session_id IS NOT NULL"
)
REFRESH_CONTEXT_UPDATE_PASSAGES = (
    f"WITH u AS (UPDATE passages SET context = to_tsvector('{TSCONFIG}', %s), context_text = %s "
    f"WHERE org_id = (SELECT org_id FROM memories WHERE rowid = %s) AND memory_rowid = %s "
    f"RETURNING rowid) INSERT INTO fulltext_log (passage_rowid) SELECT rowid FROM u"
)
#: the in-memory full-text index (fulltext.py): in one statement, its snapshot (the
#: reader's next cursor), how far the log was trimmed, and the entries of transactions
#: the reader's last snapshot did not see (PgQ's way: no entry is read twice, and one that
#: commits after a later one is read when it commits); then the rows
FULLTEXT_CHANGED = (
    "SELECT NULL::bigint, pg_current_snapshot()::text UNION ALL SELECT -1, value FROM meta WHERE "
    "org_id = '' AND key = 'fulltext_log_trimmed' UNION ALL SELECT passage_rowid, NULL FROM "
    "fulltext_log WHERE xid >= pg_snapshot_xmin(%s::pg_snapshot)::text::bigint AND NOT "
    "pg_visible_in_snapshot(xid::text::xid8, %s::pg_snapshot)"
)
FULLTEXT_ROWS = (
    "SELECT p.rowid, p.text, p.context_text, p.memory_rowid, m.org_id, m.user_id, m.agent_id, "
    "m.project, m.session_id FROM passages p JOIN memories m ON m.org_id = p.org_id AND m.rowid = "
    "p.memory_rowid"
)
FULLTEXT_ALL_ROWS = f"{FULLTEXT_ROWS} WHERE p.rowid > %s ORDER BY p.rowid LIMIT %s"
FULLTEXT_SOME_ROWS = f"{FULLTEXT_ROWS} WHERE p.rowid = ANY(%s)"
FULLTEXT_COUNT = "SELECT COALESCE(MAX(rowid), 0) FROM passages"
#: trimmed in one go once it holds %s entries more than it keeps, and never past the
#: oldest transaction running (its readers still need those entries)
TRIM_FULLTEXT_LOG = (
    "WITH d AS (DELETE FROM fulltext_log WHERE seq <= (SELECT MAX(seq) FROM fulltext_log) - %s AND "
    "xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint AND (SELECT MAX(seq) - MIN(seq) "
    "FROM fulltext_log) > %s RETURNING xid) INSERT INTO meta (org_id, key, value) SELECT '', "
    "'fulltext_log_trimmed', (MAX(xid) + 1)::text FROM d HAVING COUNT(*) > 0 ON CONFLICT (org_id, "
    "key) DO UPDATE SET value = GREATEST(meta.value::bigint, excluded.value::bigint)::text"
)
#: contexts of rows written before the column held them: each active turn's neighbours
BACKFILL_CONTEXTS = (
    "SELECT org_id, rowid, before, after FROM (SELECT org_id, rowid, lag(text) OVER w AS before, "
    "lead(text) OVER w "
    "AS after FROM memories WHERE raw = 1 AND status = 'active' AND session_id IS NOT NULL WINDOW w "
    "AS (PARTITION BY org_id, session_id, user_id, agent_id, project ORDER BY rowid)) n WHERE "
    "before IS NOT NULL OR after IS NOT NULL"
)
BACKFILL_CONTEXT_UPDATE = (
    "UPDATE passages SET context_text = %s WHERE org_id = %s AND memory_rowid = %s"
)
QUEUE_EMBED_INSERT_JOBS = (
    "INSERT INTO jobs (org_id, id, kind, payload, run_after, created_at, updated_at, user_id) VALUES "
    "(%s, %s, 'embed', %s, %s, %s, %s, %s)"
)
INSERT_MEMORIES = (
    "INSERT INTO memories (id, kind, raw, text, role, subject, org_id, user_id, agent_id, project, "
    "session_id, metadata, event_time, observed_at, created_at, updated_at, valid_from, door, source,"
    " trust) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "RETURNING rowid"
)
INSERT_MEMORY_SOURCES = "INSERT INTO memory_sources VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, at) VALUES (%s, %s, "
    "1, 'created', %s, 'active', %s)"
)
PROVENANCES_SELECT_MEMORIES = (
    "SELECT door, source, trust FROM memories WHERE org_id = %s AND id = ANY(%s) ORDER BY rowid"
)
ROWID_SELECT_MEMORIES = "SELECT m.rowid FROM memories m WHERE m.id = %s AND {where}"
ITEM_ROW_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.id = %s AND {{where}}"
UPDATE_TEXT_MEMORIES = (
    "UPDATE memories SET text = %s, version = %s, updated_at = %s WHERE org_id = %s AND rowid = %s"
)
UPDATE_TEXT_INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, reason, at) VALUES "
    "(%s, %s, %s, 'updated', %s, %s, %s, %s)"
)
UPDATE_TEXT_DELETE_PASSAGES = "DELETE FROM passages WHERE org_id = %s AND memory_rowid = %s"
SET_STATUS_UPDATE_MEMORIES = (
    "UPDATE memories SET status = %s, version = %s, updated_at = %s, valid_to = CASE WHEN %s THEN "
    "NULL ELSE COALESCE(%s, valid_to) END WHERE org_id = %s AND rowid = %s"
)
SET_STATUS_INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, reason, at) VALUES "
    "(%s, %s, %s, %s, %s, %s, %s, %s)"
)
DERIVED_OF_SELECT_MEMORY_SOURCES = (
    "SELECT memory_rowid FROM memory_sources WHERE episode_rowid = %s UNION SELECT src FROM edges "
    "WHERE dst = %s AND type = 'derived_from'"
)
PURGE_SELECT_MEMORIES = "SELECT id FROM memories WHERE rowid = ANY(%s)"
PURGE_SELECT_VERSIONS = (
    "SELECT text FROM versions WHERE memory_rowid = ANY(%s) UNION SELECT text FROM memories WHERE "
    "rowid = ANY(%s)"
)
PURGE_UPDATE_INJECTIONS = (
    "UPDATE injections SET text = NULL, query = NULL WHERE (org_id, rowid) IN (SELECT org_id, "
    "injection_rowid FROM injection_items WHERE memory_rowid = ANY(%s))"
)
PURGE_DELETE_MEMORIES = "DELETE FROM memories WHERE rowid = ANY(%s)"
PURGE_SELECT_WORKING_MEMORY = (
    "SELECT org_id, session_id, memory_rowid, reason FROM working_memory WHERE org_id = %s AND reason"
    " IS NOT NULL"
)
PURGE_UPDATE_WORKING_MEMORY = (
    "UPDATE working_memory SET reason = NULL WHERE org_id = %s AND session_id = %s AND memory_rowid ="
    " %s"
)
SOURCE_IDS_SELECT_MEMORY_SOURCES = (
    "SELECT s.memory_rowid, e.id FROM memory_sources s JOIN memories e ON e.org_id = s.org_id AND "
    "e.rowid = s.episode_rowid WHERE s.memory_rowid = ANY(%s) ORDER BY e.rowid"
)
GET_ROWS_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.rowid = ANY(%s)"
PAGE_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND {{fwhere}} AND m.rowid < %s ORDER BY "
    f"m.rowid DESC LIMIT %s"
)
EXPORT_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} {{raw}} AND m.rowid > %s ORDER BY m.rowid LIMIT"
    f" 500"
)
HISTORY_SELECT_VERSIONS = (
    "SELECT version, action, text, status, reason, at FROM versions WHERE memory_rowid = %s ORDER BY "
    "rowid"
)
SOURCES_SELECT_MEMORY_SOURCES = (
    "SELECT s.memory_rowid, e.id, e.role, e.text, e.session_id, e.event_time, e.metadata FROM "
    "memory_sources s JOIN memories e ON e.org_id = s.org_id AND e.rowid = s.episode_rowid WHERE "
    "s.memory_rowid = ANY(%s) ORDER BY e.rowid"
)
COUNT_BY_KIND = "SELECT kind, COUNT(*) FROM memories m WHERE {where} GROUP BY kind"
COUNT_BY_STATUS = "SELECT status, COUNT(*) FROM memories m WHERE {where} GROUP BY status"
COUNT_JOBS_BY_STATE = "SELECT state, COUNT(*) FROM jobs j WHERE {jwhere} GROUP BY state"
COUNT_STORED = (
    "SELECT (SELECT COUNT(*) FROM memories m WHERE raw = 1 AND {where}), (SELECT COUNT(*) FROM "
    "passages p JOIN memories m ON m.org_id = p.org_id AND m.rowid = p.memory_rowid WHERE {where}), "
    "(SELECT COUNT(*) FROM passages p JOIN memories m ON m.org_id = p.org_id AND m.rowid = "
    "p.memory_rowid WHERE p.vec IS NOT NULL AND {where}), pg_database_size(current_database())"
)
EMBED_BACKLOG_SELECT_PASSAGES = "SELECT COUNT(*) FROM passages WHERE vec IS NULL"
ACCEPT_SELECT_MEMORIES = "SELECT m.rowid FROM memories m WHERE m.rowid = ANY(%s) AND {where} AND {fwhere}"
DOCUMENT_FREQUENCIES = (
    "SELECT (SELECT CASE WHEN COALESCE(reltuples, 0) < {DF_CAP} THEN (SELECT COUNT(*) FROM "
    "passages)::float8 ELSE reltuples END FROM pg_class WHERE oid = 'passages'::regclass), {counts}"
)
FULLTEXT_RANKED = (
    "WITH e AS MATERIALIZED (SELECT {each}), t AS MATERIALIZED (SELECT e.*, {whole} AS q FROM e) "
    "SELECT d.memory_rowid, {score} AS s FROM t, (SELECT p.rowid, p.memory_rowid, setweight(p.body, "
    "'A') || setweight(p.context, 'D') AS doc FROM t, passages p JOIN memories m ON m.org_id = "
    "p.org_id AND m.rowid = p.memory_rowid WHERE {match} AND {where} AND {fwhere} OFFSET 0) d ORDER "
    "BY s DESC, d.rowid LIMIT %s"
)
VECTOR_NEAREST = (
    "SELECT c.memory_rowid, c.d FROM (SELECT p.memory_rowid, p.vec <=> %s AS d FROM passages p JOIN "
    "memories m ON m.org_id = p.org_id AND m.rowid = p.memory_rowid WHERE p.vec IS NOT NULL AND "
    "{where} AND {fwhere} ORDER BY p.vec <=> %s LIMIT %s) c ORDER BY c.d, c.memory_rowid"
)
ROLES_SELECT_MEMORIES = "SELECT rowid, role FROM memories WHERE rowid = ANY(%s)"
NEIGHBOURS = (
    "SELECT x.rowid, e.rowid FROM unnest(%s::bigint[]) WITH ORDINALITY AS s(seed, i) JOIN memories e "
    "ON e.rowid = s.seed AND e.raw = 1 AND e.session_id IS NOT NULL CROSS JOIN LATERAL (SELECT 0 AS "
    "side, b.rowid FROM ({side}) b UNION ALL SELECT 1, a.rowid FROM ({side2}) a) x ORDER BY s.i, "
    "x.side, CASE WHEN x.side = 0 THEN -x.rowid ELSE x.rowid END"
)
TIME_WINDOW_SELECT_MEMORIES = (
    "SELECT m.rowid, m.event_time FROM memories m WHERE {where} AND {fwhere} AND m.event_time BETWEEN"
    " %s AND %s ORDER BY m.event_time DESC LIMIT %s"
)
UNEMBEDDED_SELECT_PASSAGES = (
    "SELECT rowid, text FROM passages WHERE vec IS NULL AND rowid = ANY(%s) ORDER BY rowid"
)
EXTEND_LEASE = "UPDATE jobs SET lease_until = %s WHERE rowid = %s"
SET_VECTOR = "UPDATE passages SET vec = %s WHERE rowid = %s AND vec IS NULL"
FINISH_EMBED_JOB = (
    "UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = %s WHERE rowid = %s"
)
RUNNABLE_JOB = "SELECT 1 FROM jobs WHERE {ready} LIMIT 1"
CLAIM_JOBS_UPDATE = (
    "UPDATE jobs j SET state = 'running', attempts = j.attempts + 1, lease_until = %s, updated_at = "
    "%s, idempotency_key = CASE WHEN starts_with(j.idempotency_key, '{COALESCE_PREFIX}') THEN NULL "
    "ELSE j.idempotency_key END FROM (SELECT org_id, rowid FROM jobs WHERE {ready} ORDER BY priority "
    "DESC, rowid LIMIT %s FOR UPDATE SKIP LOCKED) c WHERE j.org_id = c.org_id AND j.rowid = c.rowid "
    "RETURNING j.rowid, j.id, j.kind, j.payload, j.attempts, j.priority"
)
RELEASE_JOBS_UPDATE = (
    "UPDATE jobs SET state = 'queued', attempts = attempts - 1, lease_until = NULL WHERE rowid = %s "
    "AND state = 'running'"
)
QUEUED_SELECT_JOBS = (
    "SELECT id FROM jobs WHERE kind = %s AND (state = 'queued' OR (state = 'running' AND lease_until "
    "< %s)) ORDER BY rowid"
)
FAIL_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = CASE WHEN %s OR attempts >= max_attempts THEN 'failed' ELSE 'queued' "
    "END, run_after = %s, lease_until = NULL, last_error = %s, updated_at = %s WHERE rowid = %s"
)
JOB_STATES_SELECT_JOBS = "SELECT id, state FROM jobs WHERE id = ANY(%s)"

# --- ops.py ---------------------------------------------------------------------------------

ITEMS_BY_ID_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.id = ANY(%s) ORDER BY m.rowid"
ROWIDS_SELECT_MEMORIES = "SELECT id, rowid FROM memories WHERE id = ANY(%s)"
RECENT_TURNS_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND m.raw = 1 AND m.status = 'active' ORDER BY "
    f"m.rowid DESC LIMIT %s"
)
SAME_EPISODE_SELECT_MEMORIES = (
    "SELECT id FROM memories WHERE org_id = %s AND session_id = %s AND user_id IS NOT DISTINCT FROM "
    "%s AND agent_id IS NOT DISTINCT FROM %s AND project IS NOT DISTINCT FROM %s AND raw = 1 AND role"
    " IS NOT DISTINCT FROM %s AND event_time = %s AND text = %s LIMIT 1"
)
DERIVED_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE {{clauses}} ORDER BY m.rowid DESC LIMIT %s"
WITH_ENTITIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE m.rowid IN (SELECT e.memory_rowid FROM entities e WHERE "
    f"e.name = ANY(%s)) AND {{where}} AND m.status = 'active' ORDER BY m.rowid DESC LIMIT %s"
)
MEMORY_SELECT_MEMORIES = "SELECT {columns} FROM memories WHERE id = %s"
MERGE_INTO_INSERT_MEMORY_SOURCES = (
    "INSERT INTO memory_sources SELECT org_id, %s, rowid FROM memories WHERE org_id = %s AND id = %s "
    "ON CONFLICT DO NOTHING"
)
MERGE_INTO_UPDATE_MEMORIES = (
    "UPDATE memories SET metadata = %s, maturity = %s, updated_at = %s, door = %s, source = %s, trust"
    " = %s WHERE org_id = %s AND rowid = %s"
)
MERGE_INTO_INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, reason, at) VALUES "
    "(%s, %s, %s, 'merged', %s, %s, %s, %s)"
)
SUPERSEDE_UPDATE_MEMORIES = (
    "UPDATE memories SET status = 'superseded', valid_to = %s, version = version + 1, updated_at = %s"
    " WHERE org_id = %s AND rowid = %s"
)
SUPERSEDE_INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, reason, at) VALUES "
    "(%s, %s, %s, 'superseded', %s, 'superseded', %s, %s)"
)
SUPERSEDE_INSERT_EDGES = "INSERT INTO edges VALUES (%s, %s, %s, 'supersedes', 1.0, %s) ON CONFLICT DO NOTHING"
SUPERSEDE_SELECT_EDGES = (
    "SELECT m.rowid, m.id, m.metadata FROM edges e JOIN memories m ON m.org_id = e.org_id AND m.rowid"
    " = e.src WHERE e.dst = %s AND e.type = 'derived_from' AND m.status = 'active' ORDER BY m.rowid"
)
SET_METADATA = "UPDATE memories SET metadata = %s WHERE org_id = %s AND rowid = %s"
LINK_SELECT_MEMORIES = "SELECT id, org_id, rowid FROM memories WHERE id = ANY(%s)"
LINK_INSERT_EDGES = (
    "INSERT INTO edges VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (org_id, src, dst, type) "
    "{conflict}"
)
EDGES_OF_SELECT = (
    "SELECT src, dst, type, weight FROM edges WHERE src = ANY(%s) UNION ALL SELECT dst, src, type, "
    "weight FROM edges WHERE dst = ANY(%s)"
)
EDGE_LIST_SELECT_EDGES = (
    "SELECT dst, type, 'out', weight FROM edges WHERE src = %s UNION ALL SELECT src, type, 'in', "
    "weight FROM edges WHERE dst = %s ORDER BY 4 DESC LIMIT %s"
)
PUT_MEMORY_VECTORS_SELECT_PASSAGES = (
    "SELECT p.rowid FROM passages p JOIN memories m ON m.org_id = p.org_id AND m.rowid = "
    "p.memory_rowid WHERE m.id = %s ORDER BY p.seq"
)
SET_ENTITIES_INSERT = (
    "INSERT INTO entities SELECT org_id, %s, rowid FROM memories WHERE id = %s ON CONFLICT DO NOTHING"
)
ENTITY_NEIGHBORS_SELECT_ENTITIES = (
    "SELECT o.memory_rowid, s.memory_rowid FROM entities s JOIN entities o ON o.org_id = s.org_id AND"
    " o.name = s.name AND o.memory_rowid != s.memory_rowid WHERE s.memory_rowid = ANY(%s) LIMIT %s"
)
TOUCH_UPDATE_MEMORIES = "UPDATE memories SET use_count = use_count + 1, used_at = %s WHERE id = %s"
USE_STATS_SELECT_MEMORIES = "SELECT id, use_count, used_at FROM memories WHERE id = ANY(%s)"
SET_FIELDS_SELECT_MEMORIES = (
    "SELECT m.org_id, m.rowid, m.version, m.text, m.status FROM memories m WHERE m.id = %s AND "
    "{where}"
)
SET_FIELDS_UPDATE_MEMORIES = (
    "UPDATE memories SET status = %s, maturity = COALESCE(%s, maturity), metadata = COALESCE(%s, "
    "metadata), pinned = COALESCE(%s, pinned), version = version + 1, updated_at = %s, valid_to = "
    "CASE WHEN %s THEN %s ELSE valid_to END WHERE org_id = %s AND rowid = %s"
)
TOPICS_SELECT = (
    "SELECT t.rowid, t.parent, t.label, t.keywords, t.size FROM topics t WHERE {where} ORDER BY "
    "t.rowid"
)
SAVE_TOPIC_INSERT_TOPICS = (
    "INSERT INTO topics (parent, org_id, user_id, agent_id, project, label, keywords, size, "
    "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING rowid"
)
SAVE_TOPIC_UPDATE_TOPICS = (
    "UPDATE topics SET parent = %s, label = %s, keywords = %s, size = %s, updated_at = %s WHERE rowid"
    " = %s"
)
PLACE_UPDATE_MEMORIES = "UPDATE memories SET topic_rowid = %s WHERE id = %s"
TOPIC_MEMBERS_SELECT_MEMORIES = (
    f"SELECT {COLUMNS}, m.topic_rowid FROM memories m WHERE m.topic_rowid = ANY(%s) AND m.status = "
    f"ANY(%s) ORDER BY m.use_count DESC, m.rowid"
)
TOPIC_MEMBERS_FOR_SELECT_TOPICS = (
    "SELECT t.rowid, t.label, t.keywords FROM topics t WHERE {where} AND NOT EXISTS (SELECT 1 FROM "
    "topics c WHERE c.org_id = t.org_id AND c.parent = t.rowid) ORDER BY t.rowid"
)
TOPIC_MEMBERS_FOR_SELECT_MEMORIES = (
    "SELECT m.rowid FROM memories m WHERE m.topic_rowid = %s AND {fwhere} ORDER BY m.use_count DESC, "
    "m.rowid DESC LIMIT %s"
)
WORKING_SET_SELECT_WORKING_MEMORY = (
    f"SELECT {COLUMNS}, w.heat FROM working_memory w JOIN memories m ON m.org_id = w.org_id AND "
    f"m.rowid = w.memory_rowid WHERE w.org_id = %s AND w.session_id = %s AND {{where}} AND m.status = "
    f"'active' ORDER BY w.heat DESC, w.added_at"
)
WARM_UPDATE_WORKING_MEMORY = (
    "UPDATE working_memory SET heat = heat * %s WHERE org_id = %s AND session_id = %s"
)
WARM_INSERT_WORKING_MEMORY = (
    "INSERT INTO working_memory (org_id, user_id, session_id, memory_rowid, heat, reason, added_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (org_id, session_id, memory_rowid) DO UPDATE SET"
    " heat = working_memory.heat + excluded.heat, reason = excluded.reason"
)
WARM_SELECT_WORKING_MEMORY = (
    "SELECT w.memory_rowid, m.id FROM working_memory w JOIN memories m ON m.org_id = w.org_id AND "
    "m.rowid = w.memory_rowid WHERE w.org_id = %s AND w.session_id = %s ORDER BY w.heat DESC, "
    "w.added_at DESC OFFSET %s"
)
WARM_DELETE_WORKING_MEMORY = (
    "DELETE FROM working_memory WHERE org_id = %s AND session_id = %s AND memory_rowid = %s"
)
ENQUEUE_INSERT_JOBS = (
    "INSERT INTO jobs (id, kind, payload, priority, max_attempts, run_after, idempotency_key, "
    "created_at, updated_at, org_id, user_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON "
    "CONFLICT DO NOTHING"
)
HAS_PENDING_SELECT_JOBS = (
    "SELECT 1 FROM jobs WHERE kind = ANY(%s) AND ((state = 'queued' AND run_after <= %s) OR state = "
    "'running') LIMIT 1"
)
HAS_JOB_KEY_SELECT_JOBS = "SELECT 1 FROM jobs WHERE idempotency_key = %s LIMIT 1"
QUIET_SESSIONS_SELECT_MEMORIES = (
    "SELECT org_id, user_id, agent_id, project, session_id, MAX(observed_at) AS last FROM memories "
    "WHERE raw = 1 AND session_id IS NOT NULL AND observed_at > %s GROUP BY org_id, user_id, "
    "agent_id, project, session_id HAVING MAX(observed_at) < %s LIMIT %s"
)
SESSION_SEEN_SELECT_MEMORIES = (
    "SELECT 1 FROM memories WHERE org_id = %s AND session_id = %s AND raw = 1 AND rowid < (SELECT "
    "rowid FROM memories WHERE id = %s) LIMIT 1"
)
FINISH_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = %s{merge} WHERE rowid = %s AND "
    "state = 'running' AND attempts = %s"
)
JOBS_SELECT = f"SELECT {JOB_COLUMNS} FROM jobs WHERE {{clauses}} ORDER BY rowid DESC LIMIT %s"
JOB_SELECT_JOBS = f"SELECT {JOB_COLUMNS} FROM jobs WHERE {{where}}"
RETRY_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'queued', attempts = 0, run_after = %s, last_error = NULL, updated_at = "
    "%s WHERE id = %s AND state IN ('failed', 'cancelled')"
)
CANCEL_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'cancelled', updated_at = %s WHERE id = %s AND state IN ('queued', "
    "'failed')"
)
PRUNE_JOBS_DELETE = "DELETE FROM jobs WHERE state = 'done' AND updated_at < %s"
ALL_SCOPES_SELECT_MEMORIES = (
    "SELECT DISTINCT org_id, user_id, agent_id, project FROM memories WHERE raw = 0 {where}"
)
ADD_KEY_INSERT_API_KEYS = f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
KEY_ROWS_SELECT_API_KEYS = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE {{clauses}} ORDER BY created_at, id"
REVOKE_KEY_UPDATE_API_KEYS = "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL"
REVOKE_KEY_SELECT_API_KEYS = "SELECT 1 FROM api_keys WHERE id = %s"
KEY_COUNTS_SELECT_API_KEYS = "SELECT COUNT(*), COUNT(*) FILTER (WHERE revoked_at IS NULL) FROM api_keys"
TOUCH_KEY_UPDATE_API_KEYS = "UPDATE api_keys SET last_used_at = %s WHERE id = %s"

# --- audit.py -------------------------------------------------------------------------------

RECORD_AUDIT_INSERT = (
    "INSERT INTO audit (id, at, door, action, org_id, user_id, actor, key_id, target, status) VALUES "
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
AUDIT_SELECT = (
    f"SELECT {AUDIT_COLUMNS} FROM audit WHERE {{where}} AND rowid < %s ORDER BY rowid DESC LIMIT %s"
)

# --- shares.py ------------------------------------------------------------------------------

PUT_SHARE_INSERT_SHARES = (
    f"INSERT INTO shares ({SHARE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT "
    f"(org_id, (COALESCE(user_id, '')), (COALESCE(project, '')), grantee_kind, grantee) DO UPDATE SET "
    f"access = excluded.access"
)
PUT_SHARE_SELECT_SHARES = f"SELECT {SHARE_COLUMNS} FROM shares WHERE {SAME_SHARE}"
DROP_SHARE_DELETE_SHARES = f"DELETE FROM shares WHERE id = %s AND org_id = %s RETURNING {SHARE_COLUMNS}"
SHARES_SELECT = f"SELECT {SHARE_COLUMNS} FROM shares WHERE {{where}} ORDER BY created_at, id"

# --- injections.py --------------------------------------------------------------------------

LOG_INJECTION_INSERT_INJECTIONS = (
    "INSERT INTO injections (id, at, door, org_id, user_id, agent_id, project, session_id, query, "
    "tokens, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING rowid"
)
LOG_INJECTION_SELECT_MEMORIES = "SELECT id, rowid FROM memories WHERE id = ANY(%s) AND org_id = %s"
LOG_INJECTION_INSERT_INJECTION_ITEMS = (
    "INSERT INTO injection_items (org_id, injection_rowid, rank, memory_rowid, section, channels) "
    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
DROP_INJECTIONS_BEFORE = "DELETE FROM injections WHERE at < %s"
DROP_INJECTIONS_BEYOND = (
    "DELETE FROM injections WHERE rowid <= (SELECT rowid FROM injections ORDER BY rowid DESC LIMIT 1 "
    "OFFSET %s)"
)
INJECTIONS_SELECT_INJECTION_ITEMS = (
    "SELECT it.injection_rowid, it.rank, m.id, m.kind, it.section, it.channels, it.used_at FROM "
    "injection_items it JOIN memories m ON m.org_id = it.org_id AND m.rowid = it.memory_rowid WHERE "
    "it.injection_rowid = ANY(%s) ORDER BY it.injection_rowid, it.rank"
)
INJECTIONS_SELECT = (
    f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE {{where}} AND i.rowid < %s ORDER BY i.rowid "
    f"DESC LIMIT %s"
)
INJECTION_SELECT_INJECTIONS = f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE i.id = %s AND {{where}}"
INJECTIONS_OF_SELECT = (
    f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE {{where}} AND i.rowid IN (SELECT "
    f"it.injection_rowid FROM injection_items it JOIN memories m ON m.org_id = it.org_id AND m.rowid ="
    f" it.memory_rowid WHERE m.id = %s) ORDER BY i.rowid DESC LIMIT %s"
)
MARK_USED_UPDATE_INJECTION_ITEMS = (
    "UPDATE injection_items SET used_at = %s WHERE used_at IS NULL AND (org_id, injection_rowid, "
    "memory_rowid) = (SELECT it.org_id, it.injection_rowid, it.memory_rowid FROM injection_items it "
    "JOIN injections i ON i.org_id = it.org_id AND i.rowid = it.injection_rowid JOIN memories m ON "
    "m.org_id = it.org_id AND m.rowid = it.memory_rowid WHERE m.id = %s AND i.at <= %s AND {where} "
    "ORDER BY it.injection_rowid DESC LIMIT 1)"
)
HEED_RATES_SELECT_INJECTIONS = (
    "SELECT i.door, m.kind, COUNT(*), COUNT(it.used_at) FROM injections i JOIN injection_items it ON "
    "it.org_id = i.org_id AND it.injection_rowid = i.rowid JOIN memories m ON m.org_id = it.org_id "
    "AND m.rowid = it.memory_rowid WHERE {where} GROUP BY i.door, m.kind ORDER BY i.door, m.kind"
)

# --- retention.py ---------------------------------------------------------------------------

STORED_BEFORE_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND m.rowid > %s ORDER BY m.rowid LIMIT %s"
)
COMPACTABLE_EPISODES = (
    f"SELECT m.rowid, m.id, m.org_id FROM memories m WHERE m.id = ANY(%s) AND m.raw = 1 AND m.pinned ="
    f" 0 AND NOT {UNREAD_EPISODE} AND {{where}} ORDER BY m.rowid"
)
COMPACT_SELECT_MEMORY_SOURCES = (
    "SELECT memory_rowid, episode_rowid FROM memory_sources WHERE episode_rowid = ANY(%s) AND NOT "
    "memory_rowid = ANY(%s) ORDER BY memory_rowid, episode_rowid"
)
COMPACT_NEIGHBOURS = (
    "SELECT DISTINCT n.rowid FROM memories e JOIN memories n ON n.org_id = e.org_id AND n.session_id "
    "= e.session_id AND n.user_id IS NOT DISTINCT FROM e.user_id AND n.agent_id IS NOT DISTINCT FROM "
    "e.agent_id AND n.project IS NOT DISTINCT FROM e.project AND n.raw = 1 WHERE e.rowid = ANY(%s) "
    "AND e.session_id IS NOT NULL AND NOT n.rowid = ANY(%s)"
)
COMPACT_MEMORY_VERSION = "SELECT org_id, id, version, text, status FROM memories WHERE rowid = %s"
COMPACT_INSERT_VERSIONS = (
    "INSERT INTO versions (org_id, memory_rowid, version, action, text, status, reason, at) VALUES "
    "(%s, %s, %s, 'sources_compacted', %s, %s, %s, %s)"
)
COMPACT_SELECT_WORKING_MEMORY = (
    "SELECT session_id, memory_rowid, reason FROM working_memory WHERE org_id = %s AND reason IS NOT "
    "NULL"
)

# --- copy.py --------------------------------------------------------------------------------

DUMP_ROWS = "SELECT {columns} FROM {table}{where} ORDER BY {order} LIMIT {batch}"
LOAD_ROWS_INSERT_PASSAGES = (
    "INSERT INTO passages (org_id, rowid, memory_rowid, seq, text, tokens, body, vec) SELECT "
    f"m.org_id, %s, %s, %s, %s, %s, to_tsvector('{TSCONFIG}', %s), %s FROM memories m "
    "WHERE m.rowid = %s ON CONFLICT DO NOTHING"
)
LOAD_ROWS_BY_MEMORY = (
    "INSERT INTO {table} (org_id, {cols}) SELECT m.org_id, {marks} FROM memories m WHERE m.rowid = %s"
    " ON CONFLICT DO NOTHING"
)
LOAD_ROWS = "INSERT INTO {table} ({columns}) VALUES ({marks}) ON CONFLICT DO NOTHING"
RESET_ROWID_SEQUENCE = (
    "SELECT setval(pg_get_serial_sequence('{table}', 'rowid'), GREATEST((SELECT MAX(rowid) FROM "
    "{table}), 1))"
)
FINISH_LOAD_SELECT_MEMORIES = "SELECT rowid FROM memories WHERE raw = 1 ORDER BY rowid"
COUNTS_SELECT = "SELECT COUNT(*) FROM {table}{where}"
COUNT_VECTORS = "SELECT COUNT(*) FROM passages WHERE vec IS NOT NULL"
