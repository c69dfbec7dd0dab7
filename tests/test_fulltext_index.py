"""The SQLite store's in-memory full-text index: FTS5's ranking, the scope wall, deletions,
other processes' writes and restarts, each checked against FTS5 on a real store file."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.bench.scale import synthetic_texts
from remem.model import Scope
from remem.store import Filters, NewMemory
from remem.store import fulltext as fulltext_module
from remem.store.sqlite import SQLiteStore
from remem.store.sqlite import store as sqlite_module

ALICE = Scope(user_id="alice", session_id="s1")
ALICE_ALL = Scope(user_id="alice")
BOB = Scope(user_id="bob", session_id="s1")
OTHER_ORG = Scope(org_id="acme", user_id="alice", session_id="s1")
ALL = Filters()

CHINESE = ["我们决定用 PostgreSQL 做主数据库", "周五的发布推迟到下周一", "用户喜欢深色主题",
           "缓存层改用 Redis 集群", "登录页面的错误已经修好了", "数据库迁移放在周末做"]


def turn(mid: str, text: str, scope: Scope = ALICE) -> NewMemory:
    return NewMemory(id=mid, kind="episode", text=text, raw=True, scope=scope,
                     observed_at=time.time(), role="user")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "ft.db", dim=8, embedder="unit")
    yield opened
    opened.close()


Hits = list[tuple[int, float]]


def both(store: SQLiteStore, terms: list[str], scope: Scope, limit: int = 10,
         weight: float = 0.5, filters: Filters = ALL) -> tuple[Hits, Hits]:
    store.fulltext_engine = "fts5"
    old = store.fulltext(terms, scope, filters, limit, weight)
    store.fulltext_engine = "index"
    new = store.fulltext(terms, scope, filters, limit, weight)
    return old, new


def scores(hits: list[tuple[int, float]]) -> list[float]:
    return [s for _, s in hits]


def assert_same_ranking(old: list[tuple[int, float]], new: list[tuple[int, float]]) -> None:
    """The same scores in the same order, and the same memories at each score (rows that
    tie may come in any order, and a tie at the cut may keep any of them)."""
    assert scores(new) == pytest.approx(scores(old), rel=1e-9)
    groups: dict[float, tuple[set[int], set[int]]] = {}
    for (a, score), (b, _) in zip(old, new, strict=True):
        group = groups.setdefault(round(score, 9), (set(), set()))
        group[0].add(a)
        group[1].add(b)
    for score, (a_ids, b_ids) in groups.items():
        if score != round(old[-1][1], 9):
            assert a_ids == b_ids


def ids(store: SQLiteStore, hits: list[tuple[int, float]]) -> list[str]:
    rows = store.get_rows([r for r, _ in hits])
    return [rows[r].id for r, _ in hits]


def fill(store: SQLiteStore, n: int = 600) -> None:
    texts = synthetic_texts(n)
    for start in range(0, n, 50):  # sessions of 50 turns, two users, some Chinese
        batch = [turn(f"e_{i}", texts[i], ALICE.model_copy(update={
            "user_id": "alice" if (i // 50) % 3 else "bob", "session_id": f"s{i // 50}"}))
            for i in range(start, start + 50)]
        batch += [turn(f"z_{start}_{j}", text, batch[0].scope) for j, text in enumerate(CHINESE)]
        store.insert(batch, None)


QUERIES = [["alice", "billing", "service"], ["rolled", "back", "gateway"], ["redis", "cache"],
           ["deployed", "kubernetes", "friday"], ["ticket", "42"], ["数据", "据库"], ["发布", "推迟"],
           ["深色", "主题", "redis"], ["nadia", "nadia", "audit"], ["profiling", "profiled"],
           ["nothing", "matches", "xyzzy"]]


def test_the_index_ranks_as_fts5_bm25_with_the_neighbours_context(store: SQLiteStore) -> None:
    fill(store)
    for scope in (ALICE_ALL, Scope(user_id="bob"), Scope(user_id="alice", session_id="s4")):
        for terms in QUERIES:
            for weight in (0.5, 0.0, 1.0):
                old, new = both(store, terms, scope, 10, weight)
                assert_same_ranking(old, new)
    assert store.fulltext_index.built and len(store.fulltext_index) > 600


def test_a_users_ranking_follows_rows_that_come_and_go_elsewhere(store: SQLiteStore) -> None:
    # each user's rows are searched alone, yet a word's weight counts every user's rows,
    # as FTS5 counts them: it must follow another user's purges, new rows and team rows
    fill(store)
    for terms in QUERIES:
        assert_same_ranking(*both(store, terms, ALICE_ALL))
    bobs = [f"e_{i}" for i in range(600) if not (i // 50) % 3][:60]
    for memory_id in bobs:
        store.purge(memory_id, Scope(user_id="bob"))
    texts = synthetic_texts(40)
    store.insert([turn(f"t_{i}", text, Scope(session_id="team")) for i, text in enumerate(texts)]
                 + [turn(f"c_{i}", text, Scope(user_id="carol", session_id="c1"))
                    for i, text in enumerate(texts)], None)
    nested = ALICE_ALL.model_copy(update={"nested": True})
    for scope in (ALICE_ALL, nested, Scope(user_id="carol"), Scope()):
        for terms in QUERIES:
            for weight in (0.5, 0.0):
                assert_same_ranking(*both(store, terms, scope, 10, weight))
    store.insert([turn("team", "the zebra quartz runbook", Scope(session_id="team")),
                  turn("carol", "the zebra quartz runbook", Scope(user_id="carol", session_id="c1"))], None)
    found = ids(store, store.fulltext(["zebra", "quartz"], nested, ALL, 5))
    assert found[0] == "team" and "carol" not in found


def test_words_found_only_next_to_a_turn_count_for_less(store: SQLiteStore) -> None:
    store.insert([turn("q", "which port does the staging database listen on?"),
                  turn("a", "5433, since the upgrade"), turn("x", "lunch is at noon")], None)
    old, new = both(store, ["port", "staging"], ALICE_ALL)
    assert ids(store, new) == ids(store, old) == ["q", "a"]  # the answer, by its question
    assert new[0][1] > new[1][1]
    old, new = both(store, ["port", "staging"], ALICE_ALL, weight=0.0)
    assert ids(store, new) == ids(store, old) == ["q"]


def test_scope_walls_hold_in_the_index(store: SQLiteStore) -> None:
    store.insert([turn("a1", "the deploy key rotates monthly"),
                  turn("b1", "the deploy key rotates weekly", BOB),
                  turn("o1", "the deploy key rotates daily", OTHER_ORG)], None)
    for scope, want in ((ALICE_ALL, ["a1"]), (Scope(user_id="bob"), ["b1"]),
                        (Scope(org_id="acme", user_id="alice"), ["o1"]),
                        (Scope(user_id="carol"), []), (Scope(org_id="nobody"), [])):
        old, new = both(store, ["deploy", "key"], scope)
        assert ids(store, new) == ids(store, old) == want
    # a nested read of a project sees the user's own memories, never another user's
    store.insert([turn("p1", "the deploy key lives in the vault",
                       Scope(user_id="alice", project="web", session_id="s2"))], None)
    nested = Scope(user_id="alice", project="web", nested=True)
    old, new = both(store, ["deploy", "key"], nested)
    assert sorted(ids(store, new)) == sorted(ids(store, old)) == ["a1", "p1"]


def test_purge_and_forget_take_a_text_out_of_results_at_once(store: SQLiteStore) -> None:
    store.insert([turn("e1", "what is the wifi password?"), turn("e2", "it is hunter2 on the guest net"),
                  turn("e3", "thanks")], None)
    found = ids(store, store.fulltext(["hunter2"], ALICE_ALL, ALL, 5))
    assert found[0] == "e2" and set(found) == {"e1", "e2", "e3"}  # the turn, then by context
    store.purge("e2", ALICE)
    old, new = both(store, ["hunter2"], ALICE_ALL)
    assert new == old == []  # not the turn, nor the neighbours that held it as context
    store.set_status("e1", ALICE, "forgotten", "asked to")
    assert both(store, ["wifi", "password"], ALICE_ALL) == ([], [])
    assert ids(store, store.fulltext(["thanks"], ALICE_ALL, ALL, 5)) == ["e3"]


def test_a_write_by_another_process_is_found(store: SQLiteStore, tmp_path: Path) -> None:
    store.insert([turn("e1", "the build uses bazel")], None)
    assert ids(store, store.fulltext(["bazel"], ALICE_ALL, ALL, 5)) == ["e1"]  # index built
    script = f"""
import time
from remem.model import Scope
from remem.store import NewMemory
from remem.store.sqlite import SQLiteStore
s = SQLiteStore({str(tmp_path / "ft.db")!r}, dim=8, embedder="unit")
s.insert([NewMemory(id="e2", kind="episode", text="bazel remote cache is on", raw=True,
                    scope=Scope(user_id="alice", session_id="s1"), observed_at=time.time())], None)
s.purge("e1", Scope(user_id="alice"))
s.close()
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    old, new = both(store, ["bazel"], ALICE_ALL)
    assert ids(store, new) == ids(store, old) == ["e2"]


def test_a_reopened_store_rebuilds_its_index(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "r.db", dim=8, embedder="unit")
    fill(first, 100)
    want = first.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    first.close()
    again = SQLiteStore(tmp_path / "r.db", dim=8, embedder="unit")
    try:
        assert not again.fulltext_index.built
        assert again.fulltext(["billing", "service"], ALICE_ALL, ALL, 10) == want
        assert again.fulltext_index.built
    finally:
        again.close()


def test_a_reader_behind_a_trimmed_log_rebuilds(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.insert([turn("e1", "alpha beta")], None)
    assert ids(store, store.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]
    other = SQLiteStore(store.path, dim=8, embedder="unit")
    monkeypatch.setattr(sqlite_module, "_LOG_KEPT", 1)
    try:
        other.insert([turn(f"n{i}", f"alpha gamma {i}") for i in range(5)], None)
        other.insert([turn("last", "alpha delta")], None)
        # the log no longer holds the entries this reader has not seen
        (first,) = store.conn.execute("SELECT MIN(seq) FROM fulltext_log").fetchone()
        assert first > store.fulltext_index._cursor + 1
        old, new = both(store, ["alpha", "gamma"], ALICE_ALL)
        assert new == old and len(new) == 7
    finally:
        other.close()


def test_a_search_inside_a_transaction_that_rolls_back_leaves_nothing_behind(store: SQLiteStore) -> None:
    store.insert([turn("e1", "alpha beta")], None)
    assert ids(store, store.fulltext(["alpha"], ALICE_ALL, ALL, 5)) == ["e1"]  # index built
    with pytest.raises(RuntimeError), store.transaction():
        store.insert([turn("ghost", "alpha ghost words")], None)
        # its own uncommitted turn is found (by FTS5), but the index does not take it in
        assert set(ids(store, store.fulltext(["alpha"], ALICE_ALL, ALL, 5))) == {"e1", "ghost"}
        raise RuntimeError("changed my mind")
    store.insert([turn("e2", "alpha gamma")], None)  # may reuse the rolled-back rowids
    old, new = both(store, ["alpha"], ALICE_ALL)
    assert sorted(ids(store, new)) == sorted(ids(store, old)) == ["e1", "e2"]
    assert both(store, ["ghost"], ALICE_ALL) == ([], [])


def test_a_large_store_answers_from_fts5_while_its_index_loads(store: SQLiteStore) -> None:
    fill(store, 100)
    store.fulltext_engine = "fts5"
    want = store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    store.fulltext_engine = "index"
    store.fulltext_index.warm_rows = 1  # "large": load in a thread of its own
    assert store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10) == want
    assert store.fulltext_index.warming is not None
    store.fulltext_index.warming.join()
    assert store.fulltext_index.built
    again = store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    assert [r for r, _ in again] == [r for r, _ in want]
    assert scores(again) == pytest.approx(scores(want), rel=1e-9)


def test_a_failed_load_is_tried_again_only_after_a_while(store: SQLiteStore) -> None:
    fill(store, 100)
    store.fulltext_engine = "fts5"
    want = store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    store.fulltext_engine = "index"
    now = [1000.0]
    store.fulltext_index.tokens.close()
    index = store.fulltext_index = fulltext_module.FulltextIndex(
        warm_rows=1, retry_s=60, clock=lambda: now[0])
    broken = [True]
    real_rows = store._fulltext_rows.rows

    def rows(passages: Any) -> Any:
        if broken[0]:
            raise OSError("disk gone")
        return real_rows(passages)

    store._fulltext_rows.rows = rows  # type: ignore[method-assign]
    assert store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10) == want  # SQL answers
    first = index.warming
    assert first is not None
    first.join()
    assert not index.built
    broken[0] = False
    now[0] += 30  # within the wait: no second load, the SQL answers
    assert store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10) == want
    assert index.warming is None
    now[0] += 31
    store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    assert index.warming is not None and index.warming is not first
    index.warming.join()
    assert index.built
    again = store.fulltext(["billing", "service"], ALICE_ALL, ALL, 10)
    assert [r for r, _ in again] == [r for r, _ in want]


def test_the_tokenizer_is_fts5s(store: SQLiteStore) -> None:
    tokens = fulltext_module.Tokenizer()
    try:
        assert tokens.terms("Deploying the Services, naïvely") == ["deploi", "the", "servic", "naiv"]
        assert tokens.terms("数据 据库") == ["数据", "据库"]
        terms, text = tokens.encode(["Running fast", "", "ran—away \x01 x"])
        names = {v: k for k, v in tokens.term_ids.items()}
        assert [names[int(t)] for t in terms] == ["run", "fast", "ran", "awai", "x"]
        assert text.tolist() == [0, 0, 2, 2, 2]
    finally:
        tokens.close()


def test_the_fts5_engine_is_a_known_name(tmp_path: Path) -> None:
    from remem.errors import ValidationError

    with pytest.raises(ValidationError, match="fts5"):
        SQLiteStore(tmp_path / "x.db", dim=8, embedder="unit", fulltext="lucene")


def test_a_turn_is_found_by_its_words_before_its_vector_exists(open_memory: Any) -> None:
    from remem.config import Config

    memory = open_memory(config=Config(embedder="hash", run_worker=False))
    memory.add(["the flaky test is test_upload_retries", "it fails on a slow disk"],
               user_id="alice", session_id="s1")
    assert memory.stats().embed_backlog == 2  # stored, not embedded yet
    hits = memory.search("which test is flaky?", user_id="alice")
    assert hits and hits[0].memory.text == "the flaky test is test_upload_retries"
    assert memory.flush()
    assert memory.stats().embed_backlog == 0
