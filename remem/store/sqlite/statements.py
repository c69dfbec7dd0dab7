"""Every statement of the SQLite store, as named constants, grouped by the module that
runs it; a constant holding ``{name}`` fields is a template the caller fills with
``.format(...)`` (a fragment such as a WHERE clause built from the scope), its values
always bound as ``?`` parameters."""

from __future__ import annotations

from ..policy import COALESCE_PREFIX
from ..rows import AUDIT_COLUMNS, COLUMNS, JOB_COLUMNS, KEY_COLUMNS, LOCAL_META, SHARE_COLUMNS
from .schema import APPLICATION_ID

# --- fragments, and statements more than one place runs -----------------------------------

#: Bumped by every write that changes something: what readers compare to see a change.
BUMP_CHANGES = ("INSERT INTO meta (key, value) VALUES ('changes', '1') ON CONFLICT (key) "
                "DO UPDATE SET value = CAST(value AS INTEGER) + 1")
#: The injection log's columns (alias ``i``).
INJECTION_COLUMNS = ("i.rowid, i.id, i.at, i.door, i.org_id, i.user_id, i.agent_id, i.project, "
                     "i.session_id, i.query, i.tokens, i.text")
#: The one grant between a scope and a grantee (bound as org, user, project, kind, grantee).
SAME_SHARE = ("org_id = ? AND COALESCE(user_id, '') = COALESCE(?, '') AND "
              "COALESCE(project, '') = COALESCE(?, '') AND grantee_kind = ? AND grantee = ?")
#: An episode an extract job still has to read: what it says is not in the memories yet.
UNREAD_EPISODE = ("EXISTS (SELECT 1 FROM jobs j, json_each(j.payload, '$.episodes') je "
                  "WHERE j.kind = 'extract' AND j.state IN ('queued', 'running', 'failed') "
                  "AND je.value = m.id)")
#: The full-text index: where the change log ends and starts, what changed, the rows.
FULLTEXT_LAST_SEQ = "SELECT seq FROM sqlite_sequence WHERE name = 'fulltext_log'"
FULLTEXT_FIRST_SEQ = "SELECT MIN(seq) FROM fulltext_log"
FULLTEXT_CHANGED = "SELECT DISTINCT passage_rowid FROM fulltext_log WHERE seq > ?"
FULLTEXT_ROWS = ("SELECT f.rowid, f.body, f.context, p.memory_rowid, m.org_id, m.user_id, m.agent_id, "
                 "m.project, m.session_id FROM passages p JOIN memories m ON m.rowid = p.memory_rowid "
                 "JOIN passages_fts f ON f.rowid = p.rowid")
FULLTEXT_ALL_ROWS = f"{FULLTEXT_ROWS} ORDER BY p.rowid"
FULLTEXT_SOME_ROWS = FULLTEXT_ROWS + " WHERE p.rowid IN ({marks})"
#: The vectors added since a rowid, with the scope of each (a batch at a time).
VECTORS_LOAD = """
SELECT v.rowid, p.memory_rowid, m.org_id, m.user_id, m.agent_id, m.project, m.session_id, v.vec
FROM vectors v JOIN passages p ON p.rowid = v.passage_rowid JOIN memories m ON m.rowid = p.memory_rowid
WHERE v.rowid > ? ORDER BY v.rowid LIMIT ?
"""
#: The vectors added since a rowid, with the scope of each.
FLAT_VECTORS_LOAD = """
SELECT v.rowid, p.memory_rowid, m.org_id, m.user_id, m.agent_id, m.project, m.session_id, v.vec
FROM vectors v JOIN passages p ON p.rowid = v.passage_rowid JOIN memories m ON m.rowid = p.memory_rowid
WHERE v.rowid > ? ORDER BY v.rowid
"""
#: For ``remem migrate``: the order each table is copied in (rowid when not named here),
#: and the tables not copied column for column.
COPY_ORDER = {"meta": "key", "memory_sources": "memory_rowid, episode_rowid", "edges": "src, dst, type",
              "entities": "name, memory_rowid", "working_memory": "org_id, session_id, memory_rowid",
              "api_keys": "id", "injection_items": "injection_rowid, rank", "shares": "id"}
COPY_SELECT = {
    "passages": "SELECT p.rowid, p.memory_rowid, p.seq, p.text, p.tokens, v.vec FROM passages p "
                "LEFT JOIN vectors v ON v.passage_rowid = p.rowid ORDER BY p.rowid",
    "meta": f"SELECT key, value FROM meta WHERE key NOT IN {LOCAL_META!r} ORDER BY key",
}


# --- store.py -------------------------------------------------------------------------------

STORED_EMBEDDER = "SELECT key, value FROM meta WHERE key IN ('embedder', 'dim')"
PRAGMA_FOREIGN_KEYS_SET = "PRAGMA foreign_keys = ON"
PRAGMA_SYNCHRONOUS_SET = "PRAGMA synchronous = NORMAL"
PRAGMA_SECURE_DELETE_SET = "PRAGMA secure_delete = ON"
PRAGMA_BUSY_TIMEOUT_SET = "PRAGMA busy_timeout = {ms}"
CHANGE_TOKEN = "SELECT value FROM meta WHERE key = 'changes'"
BEGIN = "BEGIN IMMEDIATE"
BEGIN_READ = "BEGIN"
COMMIT = "COMMIT"
SAVEPOINT = "SAVEPOINT {name}"
ROLLBACK_TO = "ROLLBACK TO {name}"
RELEASE = "RELEASE {name}"
PRAGMA_APPLICATION_ID = "PRAGMA application_id"
PRAGMA_USER_VERSION = "PRAGMA user_version"
MIGRATE_SELECT_SQLITE_MASTER = "SELECT COUNT(*) FROM sqlite_master"
PRAGMA_JOURNAL_MODE_SET = "PRAGMA journal_mode = WAL"
PRAGMA_APPLICATION_ID_SET = f"PRAGMA application_id = {APPLICATION_ID}"
MIGRATE_INSERT_META = "INSERT INTO meta VALUES ('vector_generation', '0')"
PRAGMA_USER_VERSION_SET = "PRAGMA user_version = {number}"
RECORD_EMBEDDER = "INSERT OR IGNORE INTO meta VALUES ('embedder', ?)"
RECORD_DIM = "INSERT OR IGNORE INTO meta VALUES ('dim', ?)"
DELETE_VECTORS = "DELETE FROM vectors"
RESET_VECTORS_DELETE_VECTOR_DELETIONS = (
    "DELETE FROM vector_deletions WHERE rowid < (SELECT MAX(rowid) FROM vector_deletions)"
)
RESET_VECTORS_DELETE_JOBS = "DELETE FROM jobs WHERE kind = 'embed' AND state IN ('queued', 'running')"
SET_EMBEDDER = "INSERT OR REPLACE INTO meta VALUES ('embedder', ?)"
SET_DIM = "INSERT OR REPLACE INTO meta VALUES ('dim', ?)"
RESET_VECTORS_SELECT_PASSAGES = "SELECT rowid FROM passages ORDER BY rowid"
META_SELECT = "SELECT value FROM meta WHERE key = ?"
SET_META_INSERT = "INSERT OR REPLACE INTO meta VALUES (?, ?)"
INSERT_PASSAGES = "INSERT INTO passages (memory_rowid, seq, text, tokens) VALUES (?, ?, ?, ?)"
INSERT_PASSAGES_FTS = "INSERT INTO passages_fts (rowid, body, context) VALUES (?, ?, ?)"
ADJACENT_SELECT_MEMORIES = (
    "SELECT n.rowid, n.text FROM memories e JOIN memories n ON n.org_id = e.org_id AND n.user_id IS "
    "e.user_id AND n.agent_id IS e.agent_id AND n.project IS e.project AND n.session_id = "
    "e.session_id AND n.raw = 1 AND n.status = 'active' AND n.rowid {op} e.rowid WHERE e.rowid = ? "
    "AND e.session_id IS NOT NULL ORDER BY n.rowid {order} LIMIT 1"
)
REFRESH_CONTEXT_UPDATE_PASSAGES_FTS = (
    "UPDATE passages_fts SET context = ? WHERE rowid IN (SELECT rowid FROM passages WHERE "
    "memory_rowid = ?)"
)
REFRESH_CONTEXT_INSERT_FULLTEXT_LOG = (
    "INSERT INTO fulltext_log (passage_rowid) SELECT rowid FROM passages WHERE memory_rowid = ?"
)
QUEUE_EMBED_INSERT_JOBS = (
    "INSERT INTO jobs (id, kind, payload, run_after, created_at, updated_at, org_id, user_id) VALUES "
    "(?, 'embed', ?, ?, ?, ?, ?, ?)"
)
INSERT_MEMORIES = (
    "INSERT INTO memories (id, kind, raw, text, role, subject, org_id, user_id, agent_id, project, "
    "session_id, metadata, event_time, observed_at, created_at, updated_at, valid_from, door, source,"
    " trust) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_MEMORY_SOURCES = "INSERT OR IGNORE INTO memory_sources VALUES (?, ?)"
INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, at) VALUES (?, 1, 'created', "
    "?, 'active', ?)"
)
TRIM_FULLTEXT_LOG = "DELETE FROM fulltext_log WHERE seq <= (SELECT MAX(seq) FROM fulltext_log) - ?"
PROVENANCES_SELECT_MEMORIES = (
    "SELECT door, source, trust FROM memories WHERE org_id = ? AND id IN ({marks}) ORDER BY rowid"
)
ROWID_SELECT_MEMORIES = "SELECT m.rowid FROM memories m WHERE m.id = ? AND {where}"
ITEM_ROW_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.id = ? AND {{where}}"
UPDATE_TEXT_MEMORIES = "UPDATE memories SET text = ?, version = ?, updated_at = ? WHERE rowid = ?"
UPDATE_TEXT_INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, at) VALUES (?, ?, "
    "'updated', ?, ?, ?, ?)"
)
UPDATE_TEXT_DELETE_PASSAGES = "DELETE FROM passages WHERE memory_rowid = ?"
SET_STATUS_UPDATE_MEMORIES = (
    "UPDATE memories SET status = ?, version = ?, updated_at = ?, valid_to = CASE WHEN ? = 'active' "
    "THEN NULL ELSE COALESCE(?, valid_to) END WHERE rowid = ?"
)
SET_STATUS_INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, at) VALUES (?, ?, ?, "
    "?, ?, ?, ?)"
)
PURGE_SELECT_MEMORIES = "SELECT id FROM memories WHERE rowid IN ({marks})"
PURGE_SELECT_VERSIONS = (
    "SELECT text FROM versions WHERE memory_rowid IN ({marks}) UNION SELECT text FROM memories WHERE "
    "rowid IN ({marks})"
)
PURGE_UPDATE_INJECTIONS = (
    "UPDATE injections SET text = NULL, query = NULL WHERE rowid IN (SELECT injection_rowid FROM "
    "injection_items WHERE memory_rowid IN ({marks}))"
)
PURGE_DELETE_MEMORIES = "DELETE FROM memories WHERE rowid IN ({marks})"
PURGE_SELECT_WORKING_MEMORY = (
    "SELECT session_id, memory_rowid, reason FROM working_memory WHERE org_id = ? AND reason IS NOT "
    "NULL"
)
PURGE_UPDATE_WORKING_MEMORY = (
    "UPDATE working_memory SET reason = NULL WHERE org_id = ? AND session_id = ? AND memory_rowid = ?"
)
PURGE_INSERT_PASSAGES_FTS = "INSERT INTO passages_fts (passages_fts) VALUES ('optimize')"
DERIVED_OF_SELECT_MEMORY_SOURCES = (
    "SELECT memory_rowid FROM memory_sources WHERE episode_rowid = ? UNION SELECT src FROM edges "
    "WHERE dst = ? AND type = 'derived_from'"
)
SOURCE_IDS_SELECT_MEMORY_SOURCES = (
    "SELECT s.memory_rowid, e.id FROM memory_sources s JOIN memories e ON e.rowid = s.episode_rowid "
    "WHERE s.memory_rowid IN ({marks}) ORDER BY e.rowid"
)
GET_ROWS_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.rowid IN ({{marks}})"
PAGE_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND {{fwhere}} AND m.rowid < ? ORDER BY m.rowid"
    f" DESC LIMIT ?"
)
EXPORT_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} {{raw}} AND m.rowid > ? ORDER BY m.rowid LIMIT "
    f"500"
)
HISTORY_SELECT_VERSIONS = (
    "SELECT version, action, text, status, reason, at FROM versions WHERE memory_rowid = ? ORDER BY "
    "rowid"
)
SOURCES_SELECT_MEMORY_SOURCES = (
    "SELECT s.memory_rowid, e.id, e.role, e.text, e.session_id, e.event_time, e.metadata FROM "
    "memory_sources s JOIN memories e ON e.rowid = s.episode_rowid WHERE s.memory_rowid IN ({marks}) "
    "ORDER BY e.rowid"
)
COUNT_BY_KIND = "SELECT kind, COUNT(*) FROM memories m WHERE {where} GROUP BY kind"
COUNT_BY_STATUS = "SELECT status, COUNT(*) FROM memories m WHERE {where} GROUP BY status"
COUNT_JOBS_BY_STATE = "SELECT state, COUNT(*) FROM jobs j WHERE {jwhere} GROUP BY state"
COUNT_EPISODES = "SELECT COUNT(*) FROM memories m WHERE raw = 1 AND {where}"
COUNT_PASSAGES = (
    "SELECT COUNT(*) FROM passages p JOIN memories m ON m.rowid = p.memory_rowid WHERE {where}"
)
COUNT_VECTORS_IN_SCOPE = (
    "SELECT COUNT(*) FROM vectors v JOIN passages p ON p.rowid = v.passage_rowid JOIN memories m ON "
    "m.rowid = p.memory_rowid WHERE {where}"
)
COUNT_VECTORS = "SELECT COUNT(*) FROM vectors"
EMBED_BACKLOG_SELECT_PASSAGES = "SELECT (SELECT COUNT(*) FROM passages) - (SELECT COUNT(*) FROM vectors)"
ACCEPT_SELECT_MEMORIES = "SELECT m.rowid FROM memories m WHERE m.rowid IN ({marks}) AND {where} AND {fwhere}"
FTS5_RANKED = (
    "SELECT p.memory_rowid, f.s FROM (SELECT rowid, {rank} AS s FROM passages_fts WHERE passages_fts "
    "MATCH ? ORDER BY s LIMIT ?) f JOIN passages p ON p.rowid = f.rowid ORDER BY f.s"
)
FTS5_RANKED_IN_SCOPE = (
    "SELECT p.memory_rowid, {rank} AS s FROM passages_fts JOIN passages p ON p.rowid = "
    "passages_fts.rowid JOIN memories m ON m.rowid = p.memory_rowid WHERE passages_fts MATCH ? AND "
    "{where} AND {fwhere} ORDER BY s LIMIT ?"
)
FULLTEXT_READY_SELECT_PASSAGES = "SELECT COALESCE(MAX(rowid), 0) FROM passages"
ROLES_SELECT_MEMORIES = "SELECT rowid, role FROM memories WHERE rowid IN ({marks})"
#: One side of one seed's session (``op``, ``order``: ``<``, ``DESC`` or ``>``, ``ASC``);
#: the session's index is named: left to itself SQLite walks the user's rows from the seed,
#: which for a seed at either end of its session means every row of the user on that side
#: (150 ms at 100k) before it finds there is none.
NEIGHBOURS_SIDE = (
    "SELECT * FROM (SELECT n.rowid, {seed} FROM memories n "
    "INDEXED BY memories_session WHERE n.session_id = "
    "(SELECT session_id FROM memories WHERE rowid = {seed} AND raw = 1) "
    "AND n.raw = 1 AND n.rowid {op} {seed} AND {where} AND {fwhere} "
    "ORDER BY n.rowid {order} LIMIT ?)"
)
TIME_WINDOW_SELECT_MEMORIES = (
    "SELECT m.rowid, m.event_time FROM memories m WHERE {where} AND {fwhere} AND m.event_time BETWEEN"
    " ? AND ? ORDER BY m.event_time DESC LIMIT ?"
)
UNEMBEDDED_SELECT_PASSAGES = (
    "SELECT p.rowid, p.text FROM passages p LEFT JOIN vectors v ON v.passage_rowid = p.rowid WHERE "
    "v.rowid IS NULL AND p.rowid IN ({marks})"
)
EXTEND_LEASE = "UPDATE jobs SET lease_until = ? WHERE rowid = ?"
INSERT_VECTOR = (
    "INSERT OR IGNORE INTO vectors (passage_rowid, vec) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM "
    "passages WHERE rowid = ?)"
)
FINISH_EMBED_JOB = (
    "UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = ? WHERE rowid = ?"
)
#: Whether a job of a kind is runnable: an idle worker looks without the write lock.
RUNNABLE_JOB = (
    "SELECT 1 FROM jobs WHERE kind = ? AND ((state = 'queued' AND run_after <= ?) "
    "OR (state = 'running' AND lease_until < ?)) LIMIT 1"
)
CLAIM_JOBS_SELECT = (
    "SELECT rowid, id, kind, payload, attempts FROM jobs WHERE kind = ? AND ((state = 'queued' AND "
    "run_after <= ?) OR (state = 'running' AND lease_until < ?)) ORDER BY priority DESC, rowid LIMIT "
    "?"
)
CLAIM_JOBS_UPDATE = (
    "UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_until = ?, updated_at = ?, "
    f"idempotency_key = CASE WHEN idempotency_key LIKE '{COALESCE_PREFIX}%' THEN NULL ELSE "
    "idempotency_key END WHERE rowid = ?"
)
RELEASE_JOBS_UPDATE = (
    "UPDATE jobs SET state = 'queued', attempts = attempts - 1, lease_until = NULL WHERE rowid = ? "
    "AND state = 'running'"
)
QUEUED_SELECT_JOBS = (
    "SELECT id FROM jobs WHERE kind = ? AND (state = 'queued' OR (state = 'running' AND lease_until <"
    " ?))"
)
FAIL_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = CASE WHEN ? IS NULL OR attempts >= max_attempts THEN 'failed' ELSE "
    "'queued' END, run_after = ?, lease_until = NULL, last_error = ?, updated_at = ? WHERE rowid = ?"
)
JOB_STATES_SELECT_JOBS = "SELECT id, state FROM jobs WHERE id IN ({marks})"

# --- ops.py ---------------------------------------------------------------------------------

ITEMS_BY_ID_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE m.id IN ({{marks}}) ORDER BY m.rowid"
ROWIDS_SELECT_MEMORIES = "SELECT id, rowid FROM memories WHERE id IN ({marks})"
RECENT_TURNS_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND m.raw = 1 AND m.status = 'active' ORDER BY "
    f"m.rowid DESC LIMIT ?"
)
SAME_EPISODE_SELECT_MEMORIES = (
    "SELECT id FROM memories WHERE org_id = ? AND session_id = ? AND user_id IS ? AND agent_id IS ? "
    "AND project IS ? AND raw = 1 AND role IS ? AND event_time = ? AND text = ? LIMIT 1"
)
DERIVED_SELECT_MEMORIES = f"SELECT {COLUMNS} FROM memories m WHERE {{clauses}} ORDER BY m.rowid DESC LIMIT ?"
WITH_ENTITIES = (
    f"SELECT DISTINCT {COLUMNS} FROM entities e JOIN memories m ON m.rowid = e.memory_rowid WHERE "
    f"e.name IN ({{marks}}) AND {{where}} AND m.status = 'active' ORDER BY m.rowid DESC LIMIT ?"
)
MERGE_INTO_SELECT_MEMORIES = (
    "SELECT rowid, version, text, status, door, source, trust, org_id FROM memories WHERE id = ?"
)
MERGE_INTO_INSERT_MEMORY_SOURCES = (
    "INSERT OR IGNORE INTO memory_sources SELECT ?, rowid FROM memories WHERE id = ?"
)
MERGE_INTO_UPDATE_MEMORIES = (
    "UPDATE memories SET metadata = ?, maturity = ?, updated_at = ?, door = ?, source = ?, trust = ? "
    "WHERE rowid = ?"
)
MERGE_INTO_INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, at) VALUES (?, ?, "
    "'merged', ?, ?, ?, ?)"
)
SUPERSEDE_SELECT_MEMORIES = "SELECT rowid, version, text FROM memories WHERE id = ?"
ROWID_BY_ID = "SELECT rowid FROM memories WHERE id = ?"
SUPERSEDE_UPDATE_MEMORIES = (
    "UPDATE memories SET status = 'superseded', valid_to = ?, version = version + 1, updated_at = ? "
    "WHERE rowid = ?"
)
SUPERSEDE_INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, at) VALUES (?, ?, "
    "'superseded', ?, 'superseded', ?, ?)"
)
SUPERSEDE_INSERT_EDGES = "INSERT OR IGNORE INTO edges VALUES (?, ?, 'supersedes', 1.0, ?)"
SUPERSEDE_SELECT_EDGES = (
    "SELECT m.rowid, m.id, m.metadata FROM edges e JOIN memories m ON m.rowid = e.src WHERE e.dst = ?"
    " AND e.type = 'derived_from' AND m.status = 'active'"
)
SET_METADATA = "UPDATE memories SET metadata = ? WHERE rowid = ?"
LINK_INSERT_EDGES = "INSERT INTO edges VALUES (?, ?, ?, ?, ?) ON CONFLICT (src, dst, type) {conflict}"
EDGES_OF_SELECT = (
    "SELECT src, dst, type, weight FROM edges WHERE src IN ({marks}) UNION ALL SELECT dst, src, type,"
    " weight FROM edges WHERE dst IN ({marks})"
)
EDGE_LIST_SELECT_EDGES = (
    "SELECT dst, type, 'out', weight FROM edges WHERE src = ? UNION ALL SELECT src, type, 'in', "
    "weight FROM edges WHERE dst = ? ORDER BY 4 DESC LIMIT ?"
)
PUT_MEMORY_VECTORS_SELECT_PASSAGES = (
    "SELECT p.rowid FROM passages p JOIN memories m ON m.rowid = p.memory_rowid WHERE m.id = ? ORDER "
    "BY p.seq"
)
SET_ENTITIES_INSERT = "INSERT OR IGNORE INTO entities SELECT ?, rowid FROM memories WHERE id = ?"
ENTITY_NEIGHBORS_SELECT_ENTITIES = (
    "SELECT o.memory_rowid, s.memory_rowid FROM entities s JOIN entities o ON o.name = s.name AND "
    "o.memory_rowid != s.memory_rowid WHERE s.memory_rowid IN ({marks}) LIMIT ?"
)
TOUCH_UPDATE_MEMORIES = "UPDATE memories SET use_count = use_count + 1, used_at = ? WHERE id = ?"
USE_STATS_SELECT_MEMORIES = "SELECT id, use_count, used_at FROM memories WHERE id IN ({marks})"
SET_FIELDS_SELECT_MEMORIES = (
    "SELECT m.rowid, m.version, m.text, m.status FROM memories m WHERE m.id = ? AND {where}"
)
SET_FIELDS_UPDATE_MEMORIES = (
    "UPDATE memories SET status = ?, maturity = COALESCE(?, maturity), metadata = COALESCE(?, "
    "metadata), pinned = COALESCE(?, pinned), version = version + 1, updated_at = ?, valid_to = CASE "
    "WHEN ? IN ('superseded', 'forgotten') THEN ? ELSE valid_to END WHERE rowid = ?"
)
TOPICS_SELECT = (
    "SELECT t.rowid, t.parent, t.label, t.keywords, t.size FROM topics t WHERE {where} ORDER BY "
    "t.rowid"
)
SAVE_TOPIC_INSERT_TOPICS = (
    "INSERT INTO topics (parent, org_id, user_id, agent_id, project, label, keywords, size, "
    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SAVE_TOPIC_UPDATE_TOPICS = (
    "UPDATE topics SET parent = ?, label = ?, keywords = ?, size = ?, updated_at = ? WHERE rowid = ?"
)
PLACE_UPDATE_MEMORIES = "UPDATE memories SET topic_rowid = ? WHERE id = ?"
TOPIC_MEMBERS_SELECT_MEMORIES = (
    f"SELECT {COLUMNS}, m.topic_rowid FROM memories m WHERE m.topic_rowid IN ({{marks}}) AND m.status "
    f"IN ({{smarks}}) ORDER BY m.use_count DESC, m.rowid"
)
TOPIC_MEMBERS_FOR_SELECT_TOPICS = (
    "SELECT t.rowid, t.label, t.keywords FROM topics t WHERE {where} AND NOT EXISTS (SELECT 1 FROM "
    "topics c WHERE c.parent = t.rowid)"
)
TOPIC_MEMBERS_FOR_SELECT_MEMORIES = (
    "SELECT m.rowid FROM memories m WHERE m.topic_rowid = ? AND {fwhere} ORDER BY m.use_count DESC, "
    "m.rowid DESC LIMIT ?"
)
WORKING_SET_SELECT_WORKING_MEMORY = (
    f"SELECT {COLUMNS}, w.heat FROM working_memory w JOIN memories m ON m.rowid = w.memory_rowid WHERE"
    f" w.org_id = ? AND w.session_id = ? AND {{where}} AND m.status = 'active' ORDER BY w.heat DESC, "
    f"w.added_at"
)
WARM_UPDATE_WORKING_MEMORY = "UPDATE working_memory SET heat = heat * ? WHERE org_id = ? AND session_id = ?"
WARM_INSERT_WORKING_MEMORY = (
    "INSERT INTO working_memory VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (org_id, session_id, "
    "memory_rowid) DO UPDATE SET heat = heat + excluded.heat, reason = excluded.reason"
)
WARM_SELECT_WORKING_MEMORY = (
    "SELECT w.memory_rowid, m.id FROM working_memory w JOIN memories m ON m.rowid = w.memory_rowid "
    "WHERE w.org_id = ? AND w.session_id = ? ORDER BY w.heat DESC, w.added_at DESC LIMIT -1 OFFSET ?"
)
WARM_DELETE_WORKING_MEMORY = (
    "DELETE FROM working_memory WHERE org_id = ? AND session_id = ? AND memory_rowid = ?"
)
ENQUEUE_INSERT_JOBS = (
    "INSERT OR IGNORE INTO jobs (id, kind, payload, priority, max_attempts, run_after, "
    "idempotency_key, created_at, updated_at, org_id, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?)"
)
HAS_PENDING_SELECT_JOBS = (
    "SELECT 1 FROM jobs WHERE kind IN ({marks}) AND ((state = 'queued' AND run_after <= ?) OR state ="
    " 'running') LIMIT 1"
)
HAS_JOB_KEY_SELECT_JOBS = "SELECT 1 FROM jobs WHERE idempotency_key = ?"
QUIET_SESSIONS_SELECT_MEMORIES = (
    "SELECT org_id, user_id, agent_id, project, session_id, MAX(observed_at) AS last FROM memories "
    "WHERE raw = 1 AND session_id IS NOT NULL AND observed_at > ? GROUP BY org_id, user_id, agent_id,"
    " project, session_id HAVING last < ? LIMIT ?"
)
SESSION_SEEN_SELECT_MEMORIES = (
    "SELECT 1 FROM memories WHERE org_id = ? AND session_id = ? AND raw = 1 AND rowid < (SELECT rowid"
    " FROM memories WHERE id = ?) LIMIT 1"
)
FINISH_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'done', lease_until = NULL, updated_at = ?, payload = CASE WHEN ? IS "
    "NULL THEN payload ELSE json_set(payload, '$.result', json(?)) END WHERE rowid = ? AND state = "
    "'running' AND attempts = ?"
)
JOBS_SELECT = f"SELECT {JOB_COLUMNS} FROM jobs WHERE {{clauses}} ORDER BY rowid DESC LIMIT ?"
JOB_SELECT_JOBS = (
    f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ? AND (? IS NULL OR org_id = ?) AND (? IS NULL OR "
    f"user_id = ?)"
)
RETRY_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'queued', attempts = 0, run_after = ?, last_error = NULL, updated_at = ?"
    " WHERE id = ? AND state IN ('failed', 'cancelled')"
)
CANCEL_JOB_UPDATE_JOBS = (
    "UPDATE jobs SET state = 'cancelled', updated_at = ? WHERE id = ? AND state IN ('queued', "
    "'failed')"
)
PRUNE_JOBS_DELETE = "DELETE FROM jobs WHERE state = 'done' AND updated_at < ?"
ALL_SCOPES_SELECT_MEMORIES = (
    "SELECT DISTINCT org_id, user_id, agent_id, project FROM memories WHERE raw = 0 AND (? IS NULL OR"
    " org_id = ?)"
)
ADD_KEY_INSERT_API_KEYS = f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
KEY_ROWS_SELECT_API_KEYS = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE {{clauses}} ORDER BY created_at, id"
REVOKE_KEY_UPDATE_API_KEYS = "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
REVOKE_KEY_SELECT_API_KEYS = "SELECT 1 FROM api_keys WHERE id = ?"
KEY_COUNTS_SELECT_API_KEYS = "SELECT COUNT(*), COUNT(revoked_at IS NULL OR NULL) FROM api_keys"
TOUCH_KEY_UPDATE_API_KEYS = "UPDATE api_keys SET last_used_at = ? WHERE id = ?"

# --- audit.py -------------------------------------------------------------------------------

RECORD_AUDIT_INSERT = (
    "INSERT INTO audit (id, at, door, action, org_id, user_id, actor, key_id, target, status) VALUES "
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
AUDIT_SELECT = f"SELECT {AUDIT_COLUMNS} FROM audit WHERE {{where}} AND rowid < ? ORDER BY rowid DESC LIMIT ?"

# --- shares.py ------------------------------------------------------------------------------

PUT_SHARE_UPDATE_SHARES = f"UPDATE shares SET access = ? WHERE {SAME_SHARE}"
PUT_SHARE_INSERT_SHARES = (
    f"INSERT INTO shares ({SHARE_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1"
    f" FROM shares WHERE {SAME_SHARE})"
)
PUT_SHARE_SELECT_SHARES = f"SELECT {SHARE_COLUMNS} FROM shares WHERE {SAME_SHARE}"
DROP_SHARE_SELECT_SHARES = f"SELECT {SHARE_COLUMNS} FROM shares WHERE id = ? AND org_id = ?"
DROP_SHARE_DELETE_SHARES = "DELETE FROM shares WHERE id = ? AND org_id = ?"
SHARES_SELECT = f"SELECT {SHARE_COLUMNS} FROM shares WHERE {{where}} ORDER BY created_at, id"

# --- injections.py --------------------------------------------------------------------------

LOG_INJECTION_INSERT_INJECTIONS = (
    "INSERT INTO injections (id, at, door, org_id, user_id, agent_id, project, session_id, query, "
    "tokens, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
LOG_INJECTION_SELECT_MEMORIES = "SELECT id, rowid FROM memories WHERE id IN ({marks}) AND org_id = ?"
LOG_INJECTION_INSERT_INJECTION_ITEMS = (
    "INSERT OR IGNORE INTO injection_items (injection_rowid, rank, memory_rowid, section, channels) "
    "VALUES (?, ?, ?, ?, ?)"
)
DROP_INJECTIONS_BEFORE = "DELETE FROM injections WHERE at < ?"
DROP_INJECTIONS_BEYOND = (
    "DELETE FROM injections WHERE rowid <= (SELECT rowid FROM injections ORDER BY rowid DESC LIMIT 1 "
    "OFFSET ?)"
)
INJECTIONS_SELECT_INJECTION_ITEMS = (
    "SELECT it.injection_rowid, it.rank, m.id, m.kind, it.section, it.channels, it.used_at FROM "
    "injection_items it JOIN memories m ON m.rowid = it.memory_rowid WHERE it.injection_rowid IN "
    "({marks}) ORDER BY it.injection_rowid, it.rank"
)
INJECTIONS_SELECT = (
    f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE {{where}} AND i.rowid < ? ORDER BY i.rowid "
    f"DESC LIMIT ?"
)
INJECTION_SELECT_INJECTIONS = f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE i.id = ? AND {{where}}"
INJECTIONS_OF_SELECT = (
    f"SELECT {INJECTION_COLUMNS} FROM injections i WHERE {{where}} AND i.rowid IN (SELECT "
    f"it.injection_rowid FROM injection_items it JOIN memories m ON m.rowid = it.memory_rowid WHERE "
    f"m.id = ?) ORDER BY i.rowid DESC LIMIT ?"
)
MARK_USED_UPDATE_INJECTION_ITEMS = (
    "UPDATE injection_items SET used_at = ? WHERE used_at IS NULL AND (injection_rowid, memory_rowid)"
    " = (SELECT it.injection_rowid, it.memory_rowid FROM injection_items it JOIN injections i ON "
    "i.rowid = it.injection_rowid JOIN memories m ON m.rowid = it.memory_rowid WHERE m.id = ? AND "
    "i.at <= ? AND {where} ORDER BY it.injection_rowid DESC LIMIT 1)"
)
HEED_RATES_SELECT_INJECTIONS = (
    "SELECT i.door, m.kind, COUNT(*), COUNT(it.used_at) FROM injections i JOIN injection_items it ON "
    "it.injection_rowid = i.rowid JOIN memories m ON m.rowid = it.memory_rowid WHERE {where} GROUP BY"
    " i.door, m.kind ORDER BY i.door, m.kind"
)

# --- retention.py ---------------------------------------------------------------------------

STORED_BEFORE_SELECT_MEMORIES = (
    f"SELECT {COLUMNS} FROM memories m WHERE {{where}} AND m.rowid > ? ORDER BY m.rowid LIMIT ?"
)
COMPACTABLE_EPISODES = (
    f"SELECT m.rowid, m.id, m.org_id FROM memories m WHERE m.id IN ({{marks}}) AND m.raw = 1 AND "
    f"m.pinned = 0 AND NOT {UNREAD_EPISODE} AND {{where}} ORDER BY m.rowid"
)
COMPACT_SELECT_MEMORY_SOURCES = (
    "SELECT memory_rowid, episode_rowid FROM memory_sources WHERE episode_rowid IN ({dm}) AND "
    "memory_rowid NOT IN ({dm}) ORDER BY memory_rowid, episode_rowid"
)
COMPACT_NEIGHBOURS = (
    "SELECT DISTINCT n.rowid FROM memories e JOIN memories n ON n.org_id = e.org_id AND n.session_id "
    "= e.session_id AND n.user_id IS e.user_id AND n.agent_id IS e.agent_id AND n.project IS "
    "e.project AND n.raw = 1 WHERE e.rowid IN ({dm}) AND e.session_id IS NOT NULL AND n.rowid NOT IN "
    "({dm})"
)
COMPACT_SELECT_VERSIONS = (
    "SELECT text FROM versions WHERE memory_rowid IN ({dm}) UNION SELECT text FROM memories WHERE "
    "rowid IN ({dm})"
)
COMPACT_UPDATE_INJECTIONS = (
    "UPDATE injections SET text = NULL, query = NULL WHERE rowid IN (SELECT injection_rowid FROM "
    "injection_items WHERE memory_rowid IN ({dm}))"
)
COMPACT_DELETE_MEMORIES = "DELETE FROM memories WHERE rowid IN ({dm})"
COMPACT_MEMORY_VERSION = "SELECT id, version, text, status FROM memories WHERE rowid = ?"
COMPACT_INSERT_VERSIONS = (
    "INSERT INTO versions (memory_rowid, version, action, text, status, reason, at) VALUES (?, ?, "
    "'sources_compacted', ?, ?, ?, ?)"
)

# --- copy.py --------------------------------------------------------------------------------

LOAD_ROWS_INSERT_PASSAGES = (
    "INSERT OR IGNORE INTO passages (rowid, memory_rowid, seq, text, tokens) VALUES (?, ?, ?, ?, ?)"
)
LOAD_ROWS_INSERT_PASSAGES_FTS = (
    "INSERT INTO passages_fts (rowid, body, context) SELECT ?, ?, '' WHERE NOT EXISTS (SELECT 1 FROM "
    "passages_fts WHERE rowid = ?)"
)
LOAD_ROWS_INSERT_VECTORS = "INSERT OR IGNORE INTO vectors (passage_rowid, vec) VALUES (?, ?)"
LOAD_ROWS = "{verb} INTO {table} ({columns}) VALUES ({marks})"
FINISH_LOAD_SELECT_MEMORIES = "SELECT rowid FROM memories WHERE raw = 1 ORDER BY rowid"
COUNTS_SELECT = "SELECT COUNT(*) FROM {table}{where}"

# --- fulltext.py ----------------------------------------------------------------------------

FTS5_TERMS_TABLE = "CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = '{tokenize}')"
FTS5_TERMS_VOCAB = "CREATE VIRTUAL TABLE v USING fts5vocab (t, instance)"
FTS5_TERMS_BEGIN = "BEGIN"
FTS5_TERMS_INSERT = "INSERT INTO t (rowid, x) VALUES (?, ?)"
FTS5_TERMS_SELECT_V = "SELECT term, doc, offset FROM v"
FTS5_TERMS_DELETE = "DELETE FROM t"

# --- vectors.py -----------------------------------------------------------------------------

SYNC_SELECT_META = "SELECT value FROM meta WHERE key = 'vector_generation'"
SYNC_SELECT_VECTOR_DELETIONS = "SELECT MIN(rowid), COALESCE(MAX(rowid), 0) FROM vector_deletions"
DROP_SELECT_VECTOR_DELETIONS = "SELECT vector_rowid FROM vector_deletions WHERE rowid > ? AND rowid <= ?"
SAVED_SELECT_VECTOR_DELETIONS = "SELECT MIN(rowid) FROM vector_deletions"

# --- vectors_flat.py ------------------------------------------------------------------------

SYNC_SELECT_VECTORS = "SELECT COALESCE(MAX(rowid), 0) FROM vectors"
