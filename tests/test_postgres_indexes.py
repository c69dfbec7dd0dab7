"""A PostgreSQL store's indexes. The in-memory full-text index: the SQLite store's
ranking, other connections' writes (a transaction that commits late included), the log
trimmed past a reader, and contexts filled in for rows written before the store kept
them. The vector index: built once after a bulk load."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_fulltext_index import ALICE, ALICE_ALL, ALL, QUERIES, fill, ids, scores, turn

from remem.model import Scope
from remem.store.postgres import store as pg_module
from remem.store.postgres.store import PostgresStore
from remem.store.sqlite import SQLiteStore


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(pg_url, dim=8, embedder="unit")
    yield opened
    opened.close()


def test_postgres_ranks_full_text_as_the_sqlite_store_does(pg: PostgresStore, tmp_path: Path) -> None:
    lite = SQLiteStore(tmp_path / "same.db", dim=8, embedder="unit")
    try:
        fill(lite, 300)
        fill(pg, 300)
        for scope in (ALICE_ALL, Scope(user_id="bob"), Scope(user_id="alice", session_id="s4")):
            for terms in QUERIES:
                for weight in (0.5, 0.0):
                    want = lite.fulltext(terms, scope, ALL, 10, weight)
                    got = pg.fulltext(terms, scope, ALL, 10, weight)
                    assert scores(got) == pytest.approx(scores(want), rel=1e-9)
                    if len(set(scores(want))) == len(want):  # no ties: the same memories
                        assert ids(pg, got) == ids(lite, want)
        assert pg.fulltext_index.built and len(pg.fulltext_index) > 300
    finally:
        lite.close()


def test_a_transaction_that_commits_after_a_later_one_is_not_skipped(
        pg: PostgresStore, pg_url: str) -> None:
    pg.insert([turn("e0", "the build uses bazel")], None)
    assert ids(pg, pg.fulltext(["bazel"], ALICE_ALL, ALL, 5)) == ["e0"]  # index built
    slow, fast = PostgresStore(pg_url, dim=8, embedder="unit"), PostgresStore(pg_url, dim=8, embedder="unit")
    written, done = threading.Event(), threading.Event()

    def late() -> None:
        with slow.transaction():
            slow.insert([turn("late", "bazel remote cache is on", Scope(user_id="alice", session_id="s2"))],
                        None)
            written.set()
            done.wait(30)

    writer = threading.Thread(target=late)
    try:
        writer.start()
        assert written.wait(30)
        fast.insert([turn("early", "bazel query is slow", Scope(user_id="alice", session_id="s3"))], None)
        # the reader takes in the later transaction's entry while the earlier one is open
        assert set(ids(pg, pg.fulltext(["bazel"], ALICE_ALL, ALL, 5))) == {"e0", "early"}
        done.set()
        writer.join(30)
        assert set(ids(pg, pg.fulltext(["bazel"], ALICE_ALL, ALL, 5))) == {"e0", "early", "late"}
    finally:
        done.set()
        writer.join(30)
        slow.close()
        fast.close()


def test_a_transaction_that_rolls_back_is_never_indexed(pg: PostgresStore, pg_url: str) -> None:
    pg.insert([turn("e1", "alpha beta")], None)
    assert ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]
    other = PostgresStore(pg_url, dim=8, embedder="unit")
    try:
        with pytest.raises(RuntimeError), other.transaction():
            other.insert([turn("ghost", "alpha ghost words")], None)
            assert ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]  # not committed
            raise RuntimeError("changed my mind")
        other.insert([turn("e2", "alpha gamma")], None)
        assert sorted(ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5))) == ["e1", "e2"]
        assert pg.fulltext(["ghost"], ALICE_ALL, ALL, 5) == []
    finally:
        other.close()


def test_a_long_transaction_elsewhere_does_not_hold_the_reader_back(pg: PostgresStore, pg_url: str) -> None:
    import psycopg

    pg.insert([turn("e0", "alpha start")], None)
    assert ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e0"]
    with psycopg.connect(pg_url) as idle:  # a transaction left open, holding the oldest xid
        idle.execute("SELECT pg_current_xact_id()")
        for i in range(3):
            pg.insert([turn(f"e{i + 1}", f"alpha step {i}")], None)
            found = ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 10))
            assert sorted(found) == [f"e{j}" for j in range(i + 2)]
            # each look takes in only what its last snapshot did not see
            cursor = pg.fulltext_index._cursor
            assert pg._fulltext_rows.changes(cursor)[1] == []
        idle.rollback()


def test_purge_and_forget_take_a_text_out_at_once(pg: PostgresStore) -> None:
    pg.insert([turn("e1", "what is the wifi password?"), turn("e2", "it is hunter2 on the guest net"),
               turn("e3", "thanks")], None)
    found = ids(pg, pg.fulltext(["hunter2"], ALICE_ALL, ALL, 5))
    assert found[0] == "e2" and set(found) == {"e1", "e2", "e3"}  # the turn, then by context
    pg.purge("e2", ALICE)
    assert pg.fulltext(["hunter2"], ALICE_ALL, ALL, 5) == []  # nor the neighbours' context
    pg.set_status("e1", ALICE, "forgotten", "asked to")
    assert pg.fulltext(["wifi", "password"], ALICE_ALL, ALL, 5) == []


def test_inside_a_transaction_its_own_writes_are_found(pg: PostgresStore) -> None:
    pg.insert([turn("e1", "alpha beta")], None)
    assert ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]
    with pg.transaction():
        pg.insert([turn("e2", "alpha gamma")], None)
        assert set(ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5))) == {"e1", "e2"}


def test_a_reader_behind_a_trimmed_log_rebuilds(pg: PostgresStore, pg_url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pg.insert([turn("e1", "alpha beta")], None)
    assert ids(pg, pg.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]
    other = PostgresStore(pg_url, dim=8, embedder="unit")
    monkeypatch.setattr(pg_module, "_LOG_KEPT", 1)
    monkeypatch.setattr(pg_module, "_LOG_SLACK", 0)
    try:
        other.insert([turn(f"n{i}", f"alpha gamma {i}") for i in range(5)], None)
        other.insert([turn("last", "alpha delta")], None)
        assert pg.meta("fulltext_log_trimmed") is not None
        assert len(pg.fulltext(["alpha"], ALICE_ALL, ALL, 10)) == 7
        assert ids(pg, pg.fulltext(["gamma"], ALICE_ALL, ALL, 10))[:5] != []
    finally:
        other.close()


def test_contexts_of_rows_written_before_the_column_are_filled_in(pg: PostgresStore, pg_url: str) -> None:
    pg.insert([turn("q", "which port does the staging database listen on?"),
               turn("a", "5433, since the upgrade"), turn("x", "lunch is at noon")], None)
    want = pg.fulltext(["port", "staging"], ALICE_ALL, ALL, 5)
    assert ids(pg, want) == ["q", "a"]  # the answer, by its question's words
    with pg.transaction():
        pg._run("UPDATE passages SET context_text = ''")
    bare = PostgresStore(pg_url, dim=8, embedder="unit")
    try:
        assert ids(bare, bare.fulltext(["port", "staging"], ALICE_ALL, ALL, 5)) == ["q"]
    finally:
        bare.close()
    with pg._pool.connection() as conn:
        PostgresStore._backfill_contexts(conn)
    again = PostgresStore(pg_url, dim=8, embedder="unit")
    try:
        assert again.fulltext(["port", "staging"], ALICE_ALL, ALL, 5) == want
    finally:
        again.close()


def test_vectors_written_in_bulk_are_found_through_a_rebuilt_index(pg: PostgresStore) -> None:
    pg.insert([turn(f"e{i}", f"note {i}") for i in range(40)], "embed")
    (job,) = pg.claim_jobs("embed", 10, lease_s=60)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    passages = job.payload["passages"]
    indexed = "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'passages_vec'"
    with pg.bulk_vectors(memory="64MB"):
        assert pg._one(indexed) == (0,)
        pg.put_vectors(list(zip(passages, vectors, strict=True)), [job])
        hits = pg.vector(vectors[7], ALICE_ALL, ALL, 3)  # meanwhile: every vector scanned
        assert ids(pg, hits)[0] == "e7"
    assert pg._one(indexed) == (1,)
    assert pg.stats()["embed_backlog"] == 0
    for i in (0, 19, 39):
        hits = pg.vector(vectors[i], ALICE_ALL, ALL, 3)
        assert ids(pg, hits)[0] == f"e{i}" and hits[0][1] == pytest.approx(1.0, abs=1e-5)
