"""Vector search grouped by scope: the approximate index above the threshold agrees with
an exact scan, scope walls and nested scopes hold, deletions leave at once, and a
reopened store rebuilds its index.

The fixture writes known vectors (clustered, as sentence embeddings are) for real
episodes in a real SQLite file, so that exact answers can be computed beside the store's.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from remem import Config, Memory
from remem.config import AgentConfig
from remem.model import Scope
from remem.store.base import Filters
from remem.store.sqlite import ann

THRESHOLD = 500
DIM = 64

#: (org, user, project, rows): the main project holds most rows; the others are the
#: levels above it, a sibling project, another user and another org
GROUPS = {
    "main": ("default", "u", "p", 2400),
    "user": ("default", "u", None, 60),
    "org": ("default", None, None, 60),
    "sibling": ("default", "u", "q", 60),
    "other_user": ("default", "v", "p", 600),
    "other_org": ("other", "u", "p", 600),
}

pytestmark = pytest.mark.skipif(not ann.available(), reason="needs usearch (remem[ann])")


def _clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    rows = centers[rng.integers(0, len(centers), n)] + rng.normal(0, 0.35, (n, centers.shape[1]))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


class _Hash64:
    """A tiny embedder of the right dimension: the tests write every vector themselves."""

    name = "test-vectors-64"
    dim = DIM

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), DIM), dtype=np.float32) / np.sqrt(DIM)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)


def _open(path: Path, threshold: int | None = THRESHOLD) -> Memory:
    config = Config(embedder="hash", run_worker=False, ann_threshold=threshold,
                    agent=AgentConfig(extractor="off"))
    memory = Memory(path, config=config, embedder=_Hash64())  # type: ignore[arg-type]
    memory.store.vectors.background = False  # the graph is there after the first search
    return memory


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """A store file with every group of GROUPS and the vector of each of its episodes."""
    path = tmp_path_factory.mktemp("vectors") / "template.db"
    rng = np.random.default_rng(3)
    centers = rng.normal(0, 1, (40, DIM))
    memory = _open(path)
    vectors: dict[str, np.ndarray] = {}
    try:
        for name, (org, user, project, n) in GROUPS.items():
            texts = [f"{name} note {i}" for i in range(n)]
            for i in range(0, n, 500):
                memory.add(texts[i : i + 500], org_id=org, user_id=user, project=project)
            if name == "other_org":  # twins of the main project's first rows
                vectors[name] = vectors["main"][:n].copy()
            else:
                vectors[name] = _clustered(rng, n, centers)
        store = memory.store
        jobs = store.claim_jobs("embed", 10**6, lease_s=600)
        rows = store.unembedded([p for j in jobs for p in j.payload["passages"]])
        by_text = {f"{name} note {i}": v[i] for name, v in vectors.items() for i in range(len(v))}
        store.put_vectors([(r, by_text[t]) for r, t in rows], jobs)
    finally:
        memory.close()
    return path, vectors


@pytest.fixture
def store_file(template: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copy(template[0], path)
    return path


@pytest.fixture
def opened(store_file: Path) -> Iterator[Callable[..., Memory]]:
    memories: list[Memory] = []

    def open_one(threshold: int | None = THRESHOLD) -> Memory:
        memories.append(_open(store_file, threshold))
        return memories[-1]

    yield open_one
    for memory in memories:
        memory.close()


def _rowids(path: Path, name: str) -> list[int]:
    """Memory rowids of a group's episodes, in the order of its vectors."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT rowid, text FROM memories WHERE text LIKE ?",
                            (f"{name} note %",)).fetchall()
    order = {text: rowid for rowid, text in rows}
    return [order[f"{name} note {i}"] for i in range(GROUPS[name][3])]


def _ids(hits: list[tuple[int, float]]) -> list[int]:
    return [m for m, _ in hits]


MAIN = Scope(user_id="u", project="p")


def test_the_approximate_index_finds_what_an_exact_scan_finds(
        opened: Callable[..., Memory], template: tuple[Path, dict[str, np.ndarray]]) -> None:
    approx, exact = opened(), opened(threshold=None)
    rng = np.random.default_rng(9)
    main = template[1]["main"]
    queries = main[rng.integers(0, len(main), 60)] + rng.normal(0, 0.2, (60, DIM))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    overlap = []
    for q in queries:
        got = approx.store.vector(q, MAIN, Filters(), 10)
        want = exact.store.vector(q, MAIN, Filters(), 10)
        overlap.append(len(set(_ids(got)) & set(_ids(want))) / 10)
        # candidates are scored again exactly: a shared hit has the exact score
        scores = dict(want)
        for m, s in got:
            if m in scores:
                assert s == pytest.approx(scores[m], abs=1e-5)
    assert np.mean(overlap) >= 0.95
    assert approx.store.vectors.stats(approx.store.conn).ann_groups == 3
    assert exact.store.vectors.stats(exact.store.conn).ann_groups == 0


def test_without_usearch_every_search_is_exact(
        opened: Callable[..., Memory], template: tuple[Path, dict[str, np.ndarray]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "_index_class", lambda: None)
    fallback, exact = opened(), opened(threshold=None)
    for q in template[1]["main"][:20]:
        assert fallback.store.vector(q, MAIN, Filters(), 10) == exact.store.vector(q, MAIN, Filters(), 10)
    assert fallback.store.vectors.stats(fallback.store.conn).ann_groups == 0


SCOPES = [Scope(org_id=org, user_id=user, project=project, nested=nested)
          for org in ("default", "other") for user in ("u", "v", None)
          for project in ("p", "q", None) for nested in (False, True)]


@pytest.mark.parametrize("threshold", [THRESHOLD, None])
def test_a_search_reaches_exactly_the_memories_inside_the_scope(
        opened: Callable[..., Memory], store_file: Path, threshold: int | None) -> None:
    """A limit above the store's size returns every memory the SQL wall allows, no other."""
    from remem.store.clauses import scope_sql

    memory = opened(threshold)
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    with sqlite3.connect(store_file) as conn:
        for scope in SCOPES:
            where, params = scope_sql(scope)
            inside = {r for (r,) in conn.execute(f"SELECT m.rowid FROM memories m WHERE {where}", params)}
            found = set(_ids(memory.store.vector(query, scope, Filters(), 10_000)))
            assert found <= inside, scope
            if threshold is None:  # an exact scan misses nothing inside
                assert found == inside, scope


def test_a_twin_in_another_org_is_never_returned(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    memory = opened()
    mine, twins = _rowids(store_file, "main"), set(_rowids(store_file, "other_org"))
    for i, q in enumerate(template[1]["main"][:30]):
        hits = _ids(memory.store.vector(q, MAIN, Filters(), 10))
        assert hits[0] == mine[i]
        assert not twins & set(hits)
        theirs = _ids(memory.store.vector(q, Scope(org_id="other", user_id="u", project="p"),
                                          Filters(), 10))
        assert set(theirs) <= twins and not set(mine) & set(theirs)


def test_a_nested_read_sees_the_levels_above_and_no_sibling(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    memory = opened()
    nested = Scope(user_id="u", project="p", nested=True)
    for name, seen in (("user", True), ("org", True), ("sibling", False), ("other_user", False)):
        rowids = _rowids(store_file, name)
        for i in range(5):
            q = template[1][name][i]
            assert (_ids(memory.store.vector(q, nested, Filters(), 10))[:1] == [rowids[i]]) is seen, name
            assert rowids[i] not in _ids(memory.store.vector(q, MAIN, Filters(), 10)), name


def test_a_deleted_superseded_or_forgotten_memory_leaves_the_results_at_once(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    memory, elsewhere = opened(), opened()  # the second one sees the file as another process
    ids = {r: i for r, i in _ids_by_rowid(store_file).items()}
    main, vectors = _rowids(store_file, "main"), template[1]["main"]
    for store in (memory.store, elsewhere.store):
        assert _ids(store.vector(vectors[0], MAIN, Filters(), 10))[0] == main[0]
    memory.purge(ids[main[0]], user_id="u", project="p")
    memory.store.set_status(ids[main[1]], MAIN, "superseded", "a newer fact replaced it")
    memory.forget(ids[main[2]], user_id="u", project="p")
    for store in (memory.store, elsewhere.store):
        for i in range(3):
            assert main[i] not in _ids(store.vector(vectors[i], MAIN, Filters(), 10))
        assert _ids(store.vector(vectors[3], MAIN, Filters(), 10))[0] == main[3]
        stats = store.vectors.stats(store.conn)
        assert stats.rows == sum(n for *_, n in GROUPS.values()) - 1
        assert stats.ann_groups == 3


def _ids_by_rowid(path: Path) -> dict[int, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT rowid, id FROM memories").fetchall())


def test_a_reopened_store_rebuilds_its_index_with_the_same_answers(
        opened: Callable[..., Memory], template: tuple[Path, dict[str, np.ndarray]]) -> None:
    first = opened()
    queries = template[1]["main"][100:120]
    before = [first.store.vector(q, MAIN, Filters(), 10) for q in queries]
    first.close()
    again = opened()
    assert [again.store.vector(q, MAIN, Filters(), 10) for q in queries] == before
    assert again.store.vectors.stats(again.store.conn).ann_groups == 3


def test_new_vectors_join_an_existing_index(
        opened: Callable[..., Memory], store_file: Path) -> None:
    memory = opened()
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    assert memory.store.vectors.stats(memory.store.conn).ann_groups == 3
    result = memory.add(["a new note"], user_id="u", project="p")
    jobs = memory.store.claim_jobs("embed", 10, lease_s=60)
    rows = memory.store.unembedded([p for j in jobs for p in j.payload["passages"]])
    memory.store.put_vectors([(r, query) for r, _ in rows], jobs)
    rowid = {i: r for r, i in _ids_by_rowid(store_file).items()}[result.episode_ids[0]]
    assert _ids(memory.store.vector(query, MAIN, Filters(), 10))[0] == rowid


def test_a_large_scope_answers_exactly_while_its_graph_is_built_in_the_background(
        opened: Callable[..., Memory], store_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = ann.HnswIndex

    class HeldIndex(real):  # type: ignore[misc, valid-type]
        def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
            # a build that takes as long as the test wants; one the search waits for fails
            assert release.wait(timeout=30), "the search waited for the graph to be built"
            super().add(keys, vectors)

    monkeypatch.setattr(ann, "HnswIndex", HeldIndex)
    memory, exact = opened(), opened(threshold=None)
    memory.store.vectors.background = True
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    # the first search does not wait for the graph: it is an exact scan
    assert memory.store.vector(query, MAIN, Filters(), 10) == exact.store.vector(query, MAIN, Filters(), 10)
    assert memory.store.vectors.stats(memory.store.conn).ann_groups == 0
    # a vector added while the graph is being built is in it once it is done
    result = memory.add(["a new note"], user_id="u", project="p")
    jobs = memory.store.claim_jobs("embed", 10, lease_s=60)
    rows = memory.store.unembedded([p for j in jobs for p in j.payload["passages"]])
    memory.store.put_vectors([(r, query) for r, _ in rows], jobs)
    memory.store.vector(query, MAIN, Filters(), 10)  # loads the new row beside the build
    release.set()
    assert memory.store.vectors.wait(timeout=60)
    assert memory.store.vectors.stats(memory.store.conn).ann_groups == 3
    rowid = {i: r for r, i in _ids_by_rowid(store_file).items()}[result.episode_ids[0]]
    assert _ids(memory.store.vector(query, MAIN, Filters(), 10))[0] == rowid


def _graph_files(store_file: Path) -> list[Path]:
    return sorted(Path(f"{store_file}.hnsw").glob("*.usearch"))


QUERIES = slice(100, 120)


def test_a_reopened_store_loads_its_saved_graph_and_answers_the_same(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    queries = template[1]["main"][QUERIES]
    first = opened()
    before = [first.store.vector(q, MAIN, Filters(), 10) for q in queries]
    assert set(first.store.vectors.graph_origin.values()) == {"built"}
    first.close()
    assert len(_graph_files(store_file)) == 3  # main, other user, other org
    again = opened()
    assert [again.store.vector(q, MAIN, Filters(), 10) for q in queries] == before
    assert set(again.store.vectors.graph_origin.values()) == {"loaded"}


def _add_vector(memory: Memory, text: str, vector: np.ndarray) -> str:
    added = memory.add([text], user_id="u", project="p")
    jobs = memory.store.claim_jobs("embed", 10, lease_s=60)
    rows = memory.store.unembedded([p for j in jobs for p in j.payload["passages"]])
    memory.store.put_vectors([(r, vector) for r, _ in rows], jobs)
    return added.episode_ids[0]


def test_a_saved_graph_catches_up_with_rows_added_since(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    first = opened()
    query = template[1]["main"][5]
    first.store.vector(query, MAIN, Filters(), 10)
    first.close()
    other = opened(threshold=None)  # another process, without a graph, adds a nearest row
    added = _add_vector(other, "a new note", query)
    other.close()
    again, exact = opened(), opened(threshold=None)
    found = _ids(again.store.vector(query, MAIN, Filters(), 10))
    assert set(again.store.vectors.graph_origin.values()) == {"loaded"}
    assert found[0] == {i: r for r, i in _ids_by_rowid(store_file).items()}[added]
    assert found == _ids(exact.store.vector(query, MAIN, Filters(), 10))


@pytest.mark.parametrize("where", ["this process", "another process"])
def test_a_purged_vector_does_not_stay_in_a_saved_graph(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]], where: str) -> None:
    first = opened()
    query = template[1]["main"][5]
    top = _ids(first.store.vector(query, MAIN, Filters(), 10))
    gone = _ids_by_rowid(store_file)[top[0]]
    if where == "this process":
        first.purge(gone, user_id="u", project="p")
        first.store.vector(query, MAIN, Filters(), 10)  # takes the deletion in
        first.close()
    else:  # when no process holding the graph saw it
        first.close()
        other = opened(threshold=None)
        other.purge(gone, user_id="u", project="p")
        other.close()
    again = opened()
    found = _ids(again.store.vector(query, MAIN, Filters(), 10))
    origins = again.store.vectors.graph_origin
    main = ("default", "u", None, "p")
    # the main scope's graph held the purged vector: built anew; the others are loaded
    assert origins[main] == "built" and sorted(origins.values()) == ["built", "loaded", "loaded"]
    assert top[0] not in found and found[:9] == top[1:10]


def _spoil(store_file: Path, how: str) -> None:
    for graph in _graph_files(store_file):
        data = graph.read_bytes()
        if how == "truncated":
            graph.write_bytes(data[: len(data) // 2])
        elif how == "garbage":
            graph.write_bytes(b"not a graph" * 100)
        else:  # a flipped byte in the middle: usearch would read it without complaint
            mid = len(data) // 2
            graph.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :])


@pytest.mark.parametrize("how", ["truncated", "garbage", "flipped"])
def test_a_corrupt_saved_graph_is_detected_and_rebuilt(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]], how: str) -> None:
    queries = template[1]["main"][QUERIES]
    first = opened()
    before = [first.store.vector(q, MAIN, Filters(), 10) for q in queries]
    first.close()
    _spoil(store_file, how)
    again = opened()
    assert [again.store.vector(q, MAIN, Filters(), 10) for q in queries] == before
    assert set(again.store.vectors.graph_origin.values()) == {"built"}
    again.close()
    third = opened()  # the rebuilt graph was saved in place of the broken one
    assert [third.store.vector(q, MAIN, Filters(), 10) for q in queries] == before
    assert set(third.store.vectors.graph_origin.values()) == {"loaded"}


def test_a_graph_saved_for_other_vectors_is_not_used(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    first = opened()
    first.store.vector(template[1]["main"][0], MAIN, Filters(), 10)
    first.close()
    # the file is replaced by a copy whose vectors differ under the same rowids (another
    # store's graph left beside it): keys alone would match
    rng = np.random.default_rng(9)
    with sqlite3.connect(store_file) as conn:
        for (rowid,) in conn.execute("SELECT rowid FROM vectors").fetchall():
            vec = rng.normal(0, 1, DIM).astype(np.float32)
            conn.execute("UPDATE vectors SET vec = ? WHERE rowid = ?",
                         ((vec / np.linalg.norm(vec)).tobytes(), rowid))
    again, exact = opened(), opened(threshold=None)
    query = template[1]["main"][0]
    assert set(again.store.vectors.graph_origin.values()) == set()  # not searched yet
    found = again.store.vector(query, MAIN, Filters(), 10)
    assert set(again.store.vectors.graph_origin.values()) == {"built"}
    exact_ids = _ids(exact.store.vector(query, MAIN, Filters(), 10))
    assert len(set(_ids(found)) & set(exact_ids)) >= 8


def test_a_cut_deletion_log_makes_the_saved_graph_stale(
        opened: Callable[..., Memory], store_file: Path,
        template: tuple[Path, dict[str, np.ndarray]]) -> None:
    first = opened()
    query = template[1]["main"][7]
    top = _ids(first.store.vector(query, MAIN, Filters(), 10))
    first.close()
    with sqlite3.connect(store_file) as conn:  # deletions the saved graph cannot know of
        conn.execute("DELETE FROM vectors WHERE passage_rowid IN "
                     "(SELECT rowid FROM passages WHERE memory_rowid = ?)", (top[0],))
        conn.execute("DELETE FROM vector_deletions WHERE rowid < (SELECT MAX(rowid) FROM vector_deletions)")
        conn.execute("INSERT INTO vector_deletions (vector_rowid) VALUES (-1)")
        conn.execute("DELETE FROM vector_deletions WHERE rowid < (SELECT MAX(rowid) FROM vector_deletions)")
    again = opened()
    found = _ids(again.store.vector(query, MAIN, Filters(), 10))
    assert set(again.store.vectors.graph_origin.values()) == {"built"}
    assert top[0] not in found and found[:9] == top[1:10]
