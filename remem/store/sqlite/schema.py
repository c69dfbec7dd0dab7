"""Every SQL schema statement of the SQLite store, as numbered migrations.

A store records its version in ``PRAGMA user_version`` and is marked as remem's by
``PRAGMA application_id``. Migration N takes a store from version N-1 to N; each runs in
one transaction with the version bump.
"""

from __future__ import annotations

APPLICATION_ID = 0x52454D4D  # "REMM"

MIGRATIONS: list[str] = [
    # 1: episodes and memories, passages with full text and vectors, history, edges, jobs
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        raw INTEGER NOT NULL,
        text TEXT NOT NULL,
        role TEXT,
        subject TEXT,
        status TEXT NOT NULL DEFAULT 'active',
        maturity TEXT NOT NULL DEFAULT 'candidate',
        version INTEGER NOT NULL DEFAULT 1,
        pinned INTEGER NOT NULL DEFAULT 0,
        org_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        project TEXT,
        session_id TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        event_time REAL,
        observed_at REAL NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        valid_from REAL,
        valid_to REAL
    );
    CREATE INDEX memories_user ON memories (org_id, user_id, raw, rowid);
    CREATE INDEX memories_session ON memories (org_id, session_id, rowid);
    CREATE INDEX memories_time ON memories (org_id, user_id, event_time);

    CREATE TABLE memory_sources (
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        episode_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        PRIMARY KEY (memory_rowid, episode_rowid)
    ) WITHOUT ROWID;
    CREATE INDEX memory_sources_episode ON memory_sources (episode_rowid);

    CREATE TABLE passages (
        rowid INTEGER PRIMARY KEY,
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX passages_memory ON passages (memory_rowid);

    -- rowid = passages.rowid; body is the passage text segmented for CJK; context holds
    -- the turns before and after an episode in its session, so that a question worded
    -- like the turn that prompted an answer still finds the answer
    CREATE VIRTUAL TABLE passages_fts USING fts5 (
        body, context, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
        DELETE FROM passages_fts WHERE rowid = old.rowid;
    END;

    -- rowid only grows, so a reader can load the vectors added since it last looked
    CREATE TABLE vectors (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        passage_rowid INTEGER NOT NULL UNIQUE REFERENCES passages (rowid) ON DELETE CASCADE,
        vec BLOB NOT NULL
    );
    CREATE TRIGGER vectors_delete AFTER DELETE ON vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vector_generation';
    END;

    CREATE TABLE versions (
        rowid INTEGER PRIMARY KEY,
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        action TEXT NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        at REAL NOT NULL
    );
    CREATE INDEX versions_memory ON versions (memory_rowid);

    CREATE TABLE edges (
        src INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        dst INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        type TEXT NOT NULL,
        weight REAL NOT NULL DEFAULT 1.0,
        created_at REAL NOT NULL,
        PRIMARY KEY (src, dst, type)
    ) WITHOUT ROWID;
    CREATE INDEX edges_dst ON edges (dst);

    CREATE TABLE jobs (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        state TEXT NOT NULL DEFAULT 'queued',
        priority INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL DEFAULT 5,
        run_after REAL NOT NULL,
        lease_until REAL,
        last_error TEXT,
        idempotency_key TEXT UNIQUE,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX jobs_ready ON jobs (state, kind, priority, run_after);
    """,
    # 2: the memory agent (mind map, entities, strength), working memory, API keys
    """
    ALTER TABLE memories ADD COLUMN topic_rowid INTEGER;
    ALTER TABLE memories ADD COLUMN use_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE memories ADD COLUMN used_at REAL;
    CREATE INDEX memories_topic ON memories (topic_rowid);
    CREATE INDEX memories_kind ON memories (org_id, kind, status);

    -- the mind map: a tree of topics per (org, user, agent, project); memories point to
    -- their topic; keywords holds word -> count for the memories under the topic
    CREATE TABLE topics (
        rowid INTEGER PRIMARY KEY,
        parent INTEGER REFERENCES topics (rowid) ON DELETE CASCADE,
        org_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        project TEXT,
        label TEXT NOT NULL,
        keywords TEXT NOT NULL DEFAULT '{}',
        size INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX topics_scope ON topics (org_id, user_id, project, parent);

    -- who or what a memory mentions (people, tools, files): the "mentions" edges
    CREATE TABLE entities (
        name TEXT NOT NULL,
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        PRIMARY KEY (name, memory_rowid)
    ) WITHOUT ROWID;
    CREATE INDEX entities_memory ON entities (memory_rowid);

    -- each session's working memory: what it is likely to need next, hottest first
    CREATE TABLE working_memory (
        org_id TEXT NOT NULL,
        user_id TEXT,
        session_id TEXT NOT NULL,
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        heat REAL NOT NULL,
        reason TEXT,
        added_at REAL NOT NULL,
        PRIMARY KEY (org_id, session_id, memory_rowid)
    ) WITHOUT ROWID;

    -- API keys of the REST service: only a hash is kept
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        org_id TEXT NOT NULL,
        user_id TEXT,
        scopes TEXT NOT NULL,
        name TEXT,
        created_at REAL NOT NULL,
        revoked_at REAL,
        last_used_at REAL
    );
    """,
    # 3: each job records the org whose data it concerns (None: the whole store)
    """
    ALTER TABLE jobs ADD COLUMN org_id TEXT;
    CREATE INDEX jobs_org ON jobs (org_id, rowid);
    """,
    # 4: finding the same turn again (a replayed conversation) without scanning its session
    """
    CREATE INDEX memories_turn ON memories (org_id, session_id, event_time) WHERE raw = 1;
    """,
    # 5: the injection log: what each door handed to a model, and whether it was used
    """
    CREATE TABLE injections (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        at REAL NOT NULL,
        door TEXT NOT NULL,
        org_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        project TEXT,
        session_id TEXT,
        query TEXT,
        tokens INTEGER NOT NULL,
        text TEXT
    );
    CREATE INDEX injections_user ON injections (org_id, user_id, rowid);
    CREATE INDEX injections_session ON injections (org_id, session_id, rowid);
    CREATE INDEX injections_at ON injections (at);

    -- a purged memory leaves the log with its row: what it said is gone everywhere
    CREATE TABLE injection_items (
        injection_rowid INTEGER NOT NULL REFERENCES injections (rowid) ON DELETE CASCADE,
        rank INTEGER NOT NULL,
        memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
        section TEXT NOT NULL,
        channels TEXT NOT NULL DEFAULT '[]',
        used_at REAL,
        PRIMARY KEY (injection_rowid, rank)
    ) WITHOUT ROWID;
    CREATE INDEX injection_items_memory ON injection_items (memory_rowid, injection_rowid);
    """,
    # 6: a page of an org's memories, newest first, without sorting the whole org
    """
    CREATE INDEX memories_page ON memories (org_id, raw, rowid);
    """,
    # 7: grants: who else may read or write a user's (or a team's) scope or project
    """
    CREATE TABLE shares (
        id TEXT PRIMARY KEY,
        org_id TEXT NOT NULL,
        user_id TEXT,
        project TEXT,
        grantee_kind TEXT NOT NULL,
        grantee TEXT NOT NULL,
        access TEXT NOT NULL,
        created_at REAL NOT NULL,
        created_by TEXT
    );
    -- one grant per scope and grantee: granting again changes its access
    CREATE UNIQUE INDEX shares_one ON shares (org_id, COALESCE(user_id, ''), COALESCE(project, ''),
                                              grantee_kind, grantee);
    CREATE INDEX shares_grantee ON shares (org_id, grantee_kind, grantee);
    """,
    # 8: each job records the user whose data it concerns too, so a key confined to one
    # user sees only that user's jobs
    """
    ALTER TABLE jobs ADD COLUMN user_id TEXT;
    CREATE INDEX jobs_user ON jobs (org_id, user_id, rowid);
    """,
    # 9: the audit log: every change and read through the services, inside the walls
    """
    CREATE TABLE audit (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        at REAL NOT NULL,
        door TEXT NOT NULL,
        action TEXT NOT NULL,
        org_id TEXT NOT NULL,
        user_id TEXT,
        actor TEXT,
        key_id TEXT,
        target TEXT,
        status INTEGER
    );
    CREATE INDEX audit_user ON audit (org_id, user_id, rowid);
    CREATE INDEX audit_at ON audit (at);
    """,
    # 10: which vectors went, so that an in-memory index drops them without reloading all
    """
    CREATE TABLE vector_deletions (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        vector_rowid INTEGER NOT NULL
    );
    DROP TRIGGER vectors_delete;
    CREATE TRIGGER vectors_delete AFTER DELETE ON vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vector_generation';
        INSERT INTO vector_deletions (vector_rowid) VALUES (old.rowid);
    END;
    """,
    # 11: which passages' full-text rows changed, in order, so that each process's
    # in-memory full-text index takes in only those (fulltext.py); the adapter
    # adds an entry when it rewrites a row's context
    """
    CREATE TABLE fulltext_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        passage_rowid INTEGER NOT NULL
    );
    CREATE TRIGGER passages_fulltext_insert AFTER INSERT ON passages BEGIN
        INSERT INTO fulltext_log (passage_rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER passages_fulltext_delete AFTER DELETE ON passages BEGIN
        INSERT INTO fulltext_log (passage_rowid) VALUES (old.rowid);
    END;
    """,
    # 12: provenance: the door each memory came in through, who said it, and its trust.
    # Rows written before it: an episode's source and trust from its role (every event is
    # tool output), its door 'unknown' unless an importer or a cube wrote it; a derived
    # memory takes its least trusted source's, or the user's when it cites none. Then the
    # retention policy's walk by age.
    """
    ALTER TABLE memories ADD COLUMN door TEXT NOT NULL DEFAULT 'unknown';
    ALTER TABLE memories ADD COLUMN source TEXT NOT NULL DEFAULT 'user';
    ALTER TABLE memories ADD COLUMN trust TEXT NOT NULL DEFAULT 'user';
    UPDATE memories SET
        source = CASE WHEN json_extract(metadata, '$.cube') IS NOT NULL THEN 'cube'
                      WHEN kind = 'event' THEN 'tool'
                      WHEN lower(role) IN ('assistant', 'agent') THEN 'assistant'
                      WHEN lower(role) IN ('tool', 'system', 'import') THEN lower(role)
                      ELSE 'user' END,
        door = CASE WHEN json_extract(metadata, '$.cube') IS NOT NULL THEN 'cube'
                    WHEN lower(role) = 'import' THEN 'import' ELSE 'unknown' END
        WHERE raw = 1;
    UPDATE memories SET trust = CASE source WHEN 'user' THEN 'user' WHEN 'assistant' THEN 'agent'
                                            ELSE 'external' END WHERE raw = 1;
    UPDATE memories SET (door, source, trust) = (
        SELECT e.door, e.source, e.trust FROM memory_sources s JOIN memories e
        ON e.rowid = s.episode_rowid WHERE s.memory_rowid = memories.rowid
        ORDER BY CASE e.trust WHEN 'external' THEN 0 WHEN 'agent' THEN 1 ELSE 2 END, e.rowid
        LIMIT 1)
        WHERE raw = 0 AND EXISTS (SELECT 1 FROM memory_sources s WHERE s.memory_rowid = memories.rowid);
    CREATE INDEX memories_created ON memories (org_id, raw, created_at);
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
