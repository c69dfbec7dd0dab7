"""Vector search over the store's vectors, held in memory one group per scope.

A group holds the rows of one (org, user, agent, project) key contiguously, so a search
reads only the groups its scope can see (a nested read adds the levels above) and never
copies rows out of a store-wide matrix. A group up to ``ann_threshold`` rows is scanned
exactly; a larger one is searched through an HNSW index (:mod:`.ann`) whose candidates are
scored again exactly, and is scanned exactly when usearch is not installed, while its graph
is still being built in the background, or when the search names a session.

SQLite stays the only durable copy of the vectors: groups are rebuilt from its BLOBs when
a store is opened and kept current by loading rows added since the last look and dropping
the rows the ``vector_deletions`` log names. A graph, which takes minutes to build for
100k rows, is saved beside the store file (``graph_dir``) and loaded again by the next
process when it still matches the store: the same keys (vector rowids) and vectors up to
the row it was saved at, none of them deleted since; otherwise it is built anew. The
graph holds float16 copies of the vectors, so a deletion (a purge, a re-embedding) also
deletes the saved graph that holds the vector: a purged vector does not stay on disk.
The store checks every candidate against its scope wall and filters in SQL (``accept``),
so the index narrows a search and never widens it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...model import Scope
from ..clauses import NESTED_FIELDS
from . import ann
from . import statements as sql

__all__ = ["VectorIndex", "VectorStats", "graph_dir"]

log = logging.getLogger(__name__)

_KEY_FIELDS = ("org_id", "user_id", "agent_id", "project")

_LOAD_BATCH = 50_000

Key = tuple[str, str | None, str | None, str | None]

#: the saved graph's manifest format; a manifest of another one is ignored (rebuilt)
_GRAPH_FORMAT = 1
#: float16 copies of unit vectors differ from the float32 rows by less than this
_F16_TOLERANCE = 4e-3


@dataclass(frozen=True)
class VectorStats:
    """What the index holds: rows, groups, groups with an approximate index, bytes."""

    rows: int
    groups: int
    ann_groups: int
    matrix_bytes: int
    ann_bytes: int
    ann_build_s: float


def _sees(key: Key, scope: Scope) -> bool:
    """Whether rows of ``key`` are inside ``scope``: the test ``scope_sql`` makes in SQL."""
    if key[0] != scope.org_id:
        return False
    for name, value in zip(_KEY_FIELDS[1:], key[1:], strict=True):
        want = getattr(scope, name)
        if want is None or value == want:
            continue
        above = scope.nested and name in NESTED_FIELDS and value is None \
            and (name == "user_id" or scope.user_id is not None or key[1] is None)
        if not above:
            return False
    return True


class _Group:
    """The rows of one scope key in the order they were added, dead rows marked."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.dead = 0
        self.matrix = np.empty((64, dim), dtype=np.float32)
        self.memory = np.empty(64, dtype=np.int64)
        self.vrowid = np.empty(64, dtype=np.int64)  # ascending: rows come in rowid order
        self.session = np.empty(64, dtype=np.int32)
        self.alive = np.ones(64, dtype=bool)
        self.ann: ann.HnswIndex | None = None
        self.building = False

    def append(self, vectors: np.ndarray, memory: np.ndarray, session: np.ndarray,
               vrowid: np.ndarray) -> int:
        """Add rows (``vrowid`` ascending, above every row held); returns the position of
        the first."""
        start, need = self.n, self.n + len(vectors)
        cap = len(self.memory)
        if need > cap:
            while cap < need:
                cap *= 2
            self.matrix = np.resize(self.matrix, (cap, self.matrix.shape[1]))
            self.memory = np.resize(self.memory, cap)
            self.vrowid = np.resize(self.vrowid, cap)
            self.session = np.resize(self.session, cap)
            self.alive = np.resize(self.alive, cap)
        self.matrix[start:need] = vectors
        self.memory[start:need] = memory
        self.vrowid[start:need] = vrowid
        self.session[start:need] = session
        self.alive[start:need] = True
        self.n = need
        if self.ann is not None:
            self.ann.add(vrowid, vectors)
        return start

    def kill(self, positions: np.ndarray) -> None:
        positions = positions[self.alive[positions]]
        self.alive[positions] = False
        self.dead += len(positions)
        if self.ann is not None:
            self.ann.remove(self.vrowid[positions])

    def snapshot(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """The row count, the live positions, their vector rowids (the graph's keys) and a
        copy of their vectors, to index."""
        live = np.flatnonzero(self.alive[: self.n])
        return self.n, live, self.vrowid[live].copy(), self.matrix[live].copy()

    def install(self, index: ann.HnswIndex, n: int, live: np.ndarray) -> None:
        """Use ``index``, built from a snapshot of ``n`` rows, once it has caught up with
        the rows added and deleted since."""
        later = np.arange(n, self.n)
        later = later[self.alive[later]]
        if len(later):
            index.add(self.vrowid[later], self.matrix[later])
        gone = live[~self.alive[live]]
        if len(gone):
            index.remove(self.vrowid[gone])
        self.ann = index

    def top(self, query: np.ndarray, take: int, session: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Exact scores and memory rowids of up to ``take`` best live rows, best first."""
        n = self.n
        if session is not None:
            rows = np.flatnonzero((self.session[:n] == session) & self.alive[:n])
        elif self.ann is not None:
            keys = self.ann.candidates(query, max(2 * take, 64))
            rows = np.searchsorted(self.vrowid[:n], keys)
            inside = rows < n
            rows = rows[inside][self.vrowid[rows[inside]] == keys[inside]]
            rows = rows[self.alive[rows]]
        else:
            rows = None
        if rows is None:
            scores = self.matrix[:n] @ query
            if self.dead:
                scores[~self.alive[:n]] = -np.inf
            positions = np.arange(n)
        else:
            scores = self.matrix[rows] @ query
            positions = rows
        if take < len(scores):
            best = np.argpartition(-scores, take - 1)[:take]
            scores, positions = scores[best], positions[best]
        order = np.argsort(-scores, kind="stable")
        scores, positions = scores[order], positions[order]
        keep = np.isfinite(scores)
        return scores[keep], self.memory[positions[keep]]


def graph_dir(store_path: str) -> Path:
    """The folder beside a store file where its vector graphs are saved."""
    return Path(f"{store_path}.hnsw")


def _same_vectors(index: ann.HnswIndex, keys: np.ndarray, vectors: np.ndarray) -> bool:
    """Whether the graph's copies of the vectors under ``keys`` are ``vectors`` (read in
    slices: the float32 copy of a whole graph would double its memory for a moment)."""
    for i in range(0, len(keys), 20_000):
        if np.abs(index.vectors(keys[i : i + 20_000]) - vectors[i : i + 20_000]).max() > _F16_TOLERANCE:
            return False
    return True


def _digest(path: Path) -> str:
    digest = hashlib.blake2b()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class VectorIndex:
    """In-memory copy of the ``vectors`` table, grouped by scope key.

    ``ann_threshold``: a group with more live rows than this gets an approximate index
    (None: every search is exact). ``ann_threads``: threads that build one (0: all cores).
    One by default: a graph built by several threads depends on their timing, and a
    reopened store must answer a query as it did before. ``graph_dir``: the folder the
    graphs are saved in and loaded from (None: built in each process, never saved).
    """

    def __init__(self, dim: int, ann_threshold: int | None = 20_000, ann_threads: int = 1,
                 graph_dir: str | os.PathLike[str] | None = None) -> None:
        self.dim = dim
        self.ann_threshold = ann_threshold
        self.ann_threads = ann_threads
        self.graph_dir = None if graph_dir is None else Path(graph_dir)
        #: how each graph came to be, by scope key: "built" or "loaded" (for stats and tests)
        self.graph_origin: dict[Key, str] = {}
        #: build a scope's HNSW graph in a thread while exact scans answer (False: in the
        #: search that finds the scope too large, which then waits for it)
        self.background = True
        self._builds: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._last = 0
        self._last_deletion = 0
        self._generation: str | None = None
        self._groups: dict[Key, _Group] = {}
        self._keys: list[Key] = []
        self._gid: dict[Key, int] = {}
        # the keys of each (org, user) and of each org: a search looks at its own only
        self._by_user: dict[tuple[str, str | None], list[Key]] = {}
        self._by_org: dict[str, list[Key]] = {}
        self._grown: set[Key] = set()
        self._sessions: dict[str | None, int] = {None: 0}
        # every loaded row by vector rowid (ascending): its group and position there
        self._count = 0
        self._rowids = np.empty(1024, dtype=np.int64)
        self._group_of = np.empty(1024, dtype=np.int32)
        self._position = np.empty(1024, dtype=np.int64)
        self._ann_build_s = 0.0

    def _session_code(self, value: str | None) -> int:
        code = self._sessions.get(value)
        if code is None:
            code = self._sessions[value] = len(self._sessions)
        return code

    def sync(self, conn: sqlite3.Connection) -> None:
        """Drop rows deleted since the last call, then load the rows added since."""
        generation = conn.execute(
            sql.SYNC_SELECT_META
        ).fetchone()[0]
        if generation != self._generation:
            first, last_deletion = conn.execute(
                sql.SYNC_SELECT_VECTOR_DELETIONS).fetchone()
            if self._generation is not None and first is not None and first > self._last_deletion + 1:
                self._reset()  # the log was cut short since we read it: what went is unknown
            elif self._generation is not None:
                self._drop(conn, last_deletion)
            self._last_deletion = last_deletion
            self._generation = generation
        while True:
            rows = conn.execute(sql.VECTORS_LOAD, (self._last, _LOAD_BATCH)).fetchall()
            if rows:
                self._load(rows)
            if len(rows) < _LOAD_BATCH:
                break
        self._index_large_groups(conn)

    def _drop(self, conn: sqlite3.Connection, upto: int) -> None:
        gone = np.fromiter((r for (r,) in conn.execute(
            sql.DROP_SELECT_VECTOR_DELETIONS,
            (self._last_deletion, upto))), dtype=np.int64)
        loaded = self._rowids[: self._count]
        if len(gone) > max(self._count // 2, 1000):
            self._reset()  # most of it went (a re-embedding): loading again is cheaper
            return
        at = np.searchsorted(loaded, gone)
        inside = at < len(loaded)
        at = at[inside][loaded[at[inside]] == gone[inside]]  # rows never loaded are skipped
        for g in np.unique(self._group_of[at]):
            mine = at[self._group_of[at] == g]
            self._groups[self._keys[g]].kill(self._position[mine])
            self._forget_saved(self._keys[g])

    def _load(self, rows: list[tuple]) -> None:
        vectors = np.frombuffer(b"".join(r[7] for r in rows), dtype=np.float32).reshape(
            len(rows), self.dim)
        by_key: dict[Key, list[int]] = {}
        for i, r in enumerate(rows):
            by_key.setdefault((r[2], r[3], r[4], r[5]), []).append(i)
        group_of = np.empty(len(rows), dtype=np.int32)
        position = np.empty(len(rows), dtype=np.int64)
        for key, members in by_key.items():
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = _Group(self.dim)
                self._gid[key] = len(self._keys)
                self._keys.append(key)
                self._by_user.setdefault(key[:2], []).append(key)
                self._by_org.setdefault(key[0], []).append(key)
            self._grown.add(key)
            idx = np.asarray(members)
            start = group.append(
                vectors[idx], np.asarray([rows[i][1] for i in members], dtype=np.int64),
                np.asarray([self._session_code(rows[i][6]) for i in members], dtype=np.int32),
                np.asarray([rows[i][0] for i in members], dtype=np.int64))
            group_of[idx] = self._gid[key]
            position[idx] = np.arange(start, start + len(members))
        start, need = self._count, self._count + len(rows)
        if need > len(self._rowids):
            cap = max(need, 2 * len(self._rowids))
            self._rowids = np.resize(self._rowids, cap)
            self._group_of = np.resize(self._group_of, cap)
            self._position = np.resize(self._position, cap)
        self._rowids[start:need] = [r[0] for r in rows]
        self._group_of[start:need] = group_of
        self._position[start:need] = position
        self._count = need
        self._last = rows[-1][0]

    def _index_large_groups(self, conn: sqlite3.Connection) -> None:
        if self.ann_threshold is None or not ann.available():
            return
        grown, self._grown = self._grown, set()
        for key in grown:
            group = self._groups[key]
            if group.ann is None and not group.building and group.n - group.dead > self.ann_threshold:
                group.building = True
                args = (key, group, *group.snapshot(), self._saved(conn, key), self._last_deletion)
                if not self.background:
                    self._build(*args, locked=True)
                    continue
                build = threading.Thread(target=self._build, args=args,
                                         name="remem-hnsw", daemon=True)
                self._builds = [b for b in self._builds if b.is_alive()] + [build]
                build.start()

    def _graph_paths(self, key: Key) -> tuple[Path, Path]:
        assert self.graph_dir is not None
        name = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:24]
        return self.graph_dir / f"{name}.usearch", self.graph_dir / f"{name}.json"

    def _forget_saved(self, key: Key) -> None:
        """Delete ``key``'s saved graph (one that still holds a deleted vector)."""
        if self.graph_dir is None:
            return
        for path in self._graph_paths(key):
            try:
                path.unlink(missing_ok=True)
            except OSError:  # read-only: the graph is not loaded anyway (see _saved)
                log.warning("cannot delete the saved vector graph %s", path, exc_info=True)

    def _saved(self, conn: sqlite3.Connection, key: Key) -> tuple[dict, np.ndarray] | None:
        """The manifest of ``key``'s saved graph and the vector rowids deleted since it was
        saved, when there is one and the deletion log still says what went since."""
        if self.graph_dir is None:
            return None
        try:
            manifest = json.loads(self._graph_paths(key)[1].read_text())
            if manifest.get("format") != _GRAPH_FORMAT or manifest.get("key") != list(key) \
                    or manifest.get("dim") != self.dim:
                return None
            since = int(manifest["deletion_pos"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        (first,) = conn.execute(sql.SAVED_SELECT_VECTOR_DELETIONS).fetchone()
        if first is not None and first > since + 1:
            return None  # the log was cut short since: what went is unknown
        gone = np.fromiter((r for (r,) in conn.execute(
            sql.DROP_SELECT_VECTOR_DELETIONS,
            (since, self._last_deletion))), dtype=np.int64)
        return manifest, gone

    def _restore(self, key: Key, keys: np.ndarray, vectors: np.ndarray,
                 saved: tuple[dict, np.ndarray]) -> ann.HnswIndex | None:
        """The saved graph of ``key`` brought up to the snapshot (``keys`` and their
        ``vectors``), or None when it does not match the store (then it is rebuilt)."""
        manifest, gone = saved
        graph, _ = self._graph_paths(key)
        try:
            if _digest(graph) != manifest["digest"]:
                log.warning("the saved vector graph %s does not match its manifest; rebuilding", graph)
                return None
            index = ann.HnswIndex.load(graph, self.dim, threads=self.ann_threads)
            stored = index.keys()
            if np.isin(gone, stored).any():  # it holds a copy of a deleted vector
                log.info("a vector of the saved graph %s was deleted; rebuilding", graph)
                self._forget_saved(key)
                return None
            upto = int(manifest["last_rowid"])
            held = keys <= upto
            if not np.array_equal(stored, keys[held]) or not _same_vectors(
                    index, keys[held], vectors[held]):
                log.warning("the saved vector graph %s is not this store's; rebuilding", graph)
                return None
            index.add(keys[~held], vectors[~held])
        except Exception:  # unreadable or of other settings: build it again
            log.warning("the saved vector graph %s cannot be read; rebuilding", graph, exc_info=True)
            return None
        return index

    def _save(self, key: Key, index: ann.HnswIndex, keys: np.ndarray, deletion_pos: int) -> None:
        """Write ``key``'s graph and then its manifest (a reader checks the one against the
        other, so that a graph and a manifest of two writers are never taken together)."""
        if self.graph_dir is None:
            return
        graph, manifest = self._graph_paths(key)
        try:
            self.graph_dir.mkdir(parents=True, exist_ok=True)
            index.save(graph)
            body = {"format": _GRAPH_FORMAT, "key": list(key), "dim": self.dim,
                    "count": len(keys), "last_rowid": int(keys.max()) if len(keys) else 0,
                    "deletion_pos": deletion_pos, "digest": _digest(graph)}
            tmp = manifest.with_name(f"{manifest.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(body))
            os.replace(tmp, manifest)
        except OSError:  # a read-only folder: the graph is built again next time
            log.warning("saving the vector graph to %s failed", graph, exc_info=True)

    def _build(self, key: Key, group: _Group, n: int, live: np.ndarray, keys: np.ndarray,
               vectors: np.ndarray, saved: tuple[dict, np.ndarray] | None, deletion_pos: int,
               *, locked: bool = False) -> None:
        start = time.perf_counter()
        index = None if saved is None else self._restore(key, keys, vectors, saved)
        origin = "loaded" if index is not None else "built"
        try:
            if index is None:
                index = ann.HnswIndex(self.dim, threads=self.ann_threads)
                for i in range(0, len(live), 100_000):
                    index.add(keys[i : i + 100_000], vectors[i : i + 100_000])
            if saved is None or origin == "built" or keys.max(initial=0) > int(saved[0]["last_rowid"]):
                self._save(key, index, keys, deletion_pos)
        except Exception:  # the scope stays on exact scans, which answer the same
            log.exception("building the vector graph of one scope failed")
            group.building = False
            return
        if locked:
            group.install(index, n, live)
        else:
            with self._lock:
                group.install(index, n, live)
        group.building = False
        self.graph_origin[key] = origin
        took = time.perf_counter() - start
        self._ann_build_s += took
        log.info("%s the vector graph of %d vectors of one scope in %.1f s", origin,
                 len(live), took)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the graphs being built; False when ``timeout`` ran out first."""
        for build in list(self._builds):
            build.join(timeout)
        return not any(b.is_alive() for b in self._builds)

    def _near(self, scope: Scope) -> list[Key]:
        """Keys that may be inside ``scope``: its user's and, nested, the org's own."""
        if scope.user_id is None:
            return self._by_org.get(scope.org_id, [])
        near = self._by_user.get((scope.org_id, scope.user_id), [])
        if scope.nested:
            near = near + self._by_user.get((scope.org_id, None), [])
        return near

    def stats(self, conn: sqlite3.Connection) -> VectorStats:
        """Rows, groups and memory of the index, after loading what is new."""
        with self._lock:
            self.sync(conn)
            groups = list(self._groups.values())
            return VectorStats(
                rows=sum(g.n - g.dead for g in groups), groups=len(groups),
                ann_groups=sum(g.ann is not None for g in groups),
                matrix_bytes=sum(g.matrix.nbytes for g in groups),
                ann_bytes=sum(g.ann.memory_bytes() for g in groups if g.ann is not None),
                ann_build_s=round(self._ann_build_s, 3))

    def search(
        self,
        conn: sqlite3.Connection,
        query: np.ndarray,
        scope: Scope,
        limit: int,
        accept: Callable[[list[int]], set[int]],
    ) -> list[tuple[int, float]]:
        """The ``limit`` best memories by cosine similarity of their best passage.

        ``accept`` receives candidate memory rowids and returns those that pass the
        store's SQL scope and filter check; only those are returned.
        """
        query = np.asarray(query, dtype=np.float32)
        want = limit
        while True:
            take = want * 2
            with self._lock:
                self.sync(conn)
                groups = [self._groups[key] for key in self._near(scope) if _sees(key, scope)]
                session = None if scope.session_id is None else self._sessions.get(scope.session_id, -1)
                found = [g.top(query, take, session) for g in groups]
            if not found:
                return []
            scores = np.concatenate([s for s, _ in found])
            memory = np.concatenate([m for _, m in found])
            order = np.argsort(-scores, kind="stable")[:take]
            ranked = memory[order]
            _, first = np.unique(ranked, return_index=True)  # each memory's best passage
            first.sort()
            best = dict(zip(ranked[first].tolist(), scores[order][first].tolist(), strict=True))
            ok = accept(list(best))
            results = [(m, s) for m, s in best.items() if m in ok][:limit]
            exhausted = all(len(s) < take for s, _ in found)
            if len(results) >= limit or exhausted or want > 8 * limit:
                return results
            want *= 4
