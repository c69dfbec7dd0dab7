"""The store contract: every method of the ``Store`` protocol, on every adapter.

Each test runs on the SQLite file and on a real PostgreSQL database (``store_target``),
through ``create_store`` as ``Memory`` opens them; a meta-test fails when a protocol
method has no test here.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from remem import ConfigError, NotFoundError, StoreError
from remem.errors import (
    EmbedderMismatchError,
    JobNotFoundError,
    LeaseLostError,
    StoreNotFoundError,
    ValidationError,
)
from remem.model import Provenance, Scope, Share
from remem.store import Filters, NewMemory, Store, create_store
from remem.store.base import (
    ApiKeyStore,
    AuditLog,
    CopyStore,
    GraphStore,
    InjectionLog,
    JobStore,
    MemoryStore,
    NewAudit,
    NewInjection,
    RecallStore,
    ShareStore,
    WorkingMemoryStore,
)

pytestmark = pytest.mark.backends

DIM = 8
ALICE = Scope(user_id="alice")
BOB = Scope(user_id="bob")
ALL = Filters()


@pytest.fixture
def store(store_target: str | Path) -> Iterator[Store]:
    opened = create_store(store_target, dim=DIM, embedder="unit")
    yield opened
    opened.close()


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


def episode(mid: str, text: str, scope: Scope = ALICE, *, at: float | None = None,
            role: str = "user") -> NewMemory:
    return NewMemory(id=mid, kind="episode", text=text, raw=True, scope=scope,
                     observed_at=at or time.time(), event_time=at, role=role)


def derived(mid: str, text: str, sources: tuple[str, ...] = (), scope: Scope = ALICE,
            kind: str = "fact") -> NewMemory:
    return NewMemory(id=mid, kind=kind, text=text, raw=False, scope=scope,
                     observed_at=time.time(), source_ids=sources)


def rowid(store: Store, mid: str) -> int:
    return store.rowids([mid])[mid]


# --- lifecycle, transactions, change token, meta -----------------------------------------

def test_a_store_url_picks_its_adapter_and_refuses_unknown_ones(store: Store, backend: str) -> None:
    assert type(store).__name__ == {"sqlite": "SQLiteStore", "postgres": "PostgresStore"}[backend]
    with pytest.raises(ConfigError, match="unknown store URL scheme 'mysql'"):
        create_store("mysql://db/remem", dim=DIM, embedder="unit")


def test_opening_only_an_existing_store_refuses_an_empty_place(store_target: str | Path) -> None:
    with pytest.raises(StoreNotFoundError, match="no remem store at"):
        create_store(store_target, dim=DIM, embedder="unit", create=False)
    create_store(store_target, dim=DIM, embedder="unit").close()
    create_store(store_target, dim=DIM, embedder="unit", create=False).close()


def test_the_embedder_is_recorded_and_another_refused(store: Store, store_target: str | Path) -> None:
    assert (store.meta("embedder"), store.meta("dim")) == ("unit", str(DIM))
    store.close()
    with pytest.raises(EmbedderMismatchError):
        create_store(store_target, dim=DIM, embedder="other")


def test_meta_values_are_kept(store: Store) -> None:
    assert store.meta("colour") is None
    store.set_meta("colour", "blue")
    store.set_meta("colour", "green")
    assert store.meta("colour") == "green"


def test_an_inner_transaction_rolls_back_alone(store: Store) -> None:
    with store.transaction():
        store.insert([episode("e_outer", "kept")], None)
        with pytest.raises(RuntimeError), store.transaction():
            store.insert([episode("e_inner", "rolled back")], None)
            raise RuntimeError("inner failure")
        store.insert([episode("e_after", "kept too")], None)
    assert [m.id for m in store.items_by_id(["e_outer", "e_inner", "e_after"])] == ["e_outer", "e_after"]


def test_a_failed_transaction_writes_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.insert([episode("e_1", "gone")], "j_1")
        raise RuntimeError("boom")
    assert store.items_by_id(["e_1"]) == [] and store.job_states(["j_1"]) == {}


def test_write_joins_the_open_transaction(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        with store.write():
            store.insert([episode("e_1", "joined")], None)
        raise RuntimeError("outer failure")
    assert store.items_by_id(["e_1"]) == []


def test_the_change_token_grows_with_writes_only(store: Store) -> None:
    before = store.change_token()
    store.get_rows([1])
    assert store.change_token() == before
    store.insert([episode("e_1", "hello")], None)
    after = store.change_token()
    assert after > before
    store.set_meta("k", "v")
    assert store.change_token() > after


def test_a_duplicate_id_is_a_store_error_and_the_store_goes_on(store: Store) -> None:
    store.insert([episode("e_1", "first")], None)
    with pytest.raises(StoreError):
        store.insert([episode("e_1", "again")], None)
    assert store.get("e_1", ALICE).text == "first"


def test_a_closed_store_says_so(store: Store) -> None:
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.get("e_1", ALICE)


# --- memories and episodes ----------------------------------------------------------------

def test_insert_get_and_the_scope_wall(store: Store) -> None:
    store.insert([episode("e_1", "We deploy with make ship"),
                  derived("m_1", "Alice deploys with make ship", ("e_1",))], "j_embed")
    item = store.get("m_1", ALICE)
    assert (item.text, item.kind, item.sources, item.version) == (
        "Alice deploys with make ship", "fact", ["e_1"], 1)
    with pytest.raises(NotFoundError):
        store.get("m_1", BOB)
    assert store.get_rows([rowid(store, "m_1")])[rowid(store, "m_1")].id == "m_1"
    assert [m.id for m in store.items_by_id(["m_1", "e_1", "nope"])] == ["e_1", "m_1"]
    assert store.job_states(["j_embed"]) == {"j_embed": "queued"}


def test_update_text_keeps_the_old_text_in_history(store: Store) -> None:
    store.insert([derived("m_1", "uses npm")], None)
    updated = store.update_text("m_1", ALICE, "uses pnpm", ["uses pnpm"], "switched", "j_2")
    assert (updated.text, updated.version) == ("uses pnpm", 2)
    history = store.history("m_1", ALICE)
    assert [(h.version, h.action, h.text) for h in history] == [
        (1, "created", "uses npm"), (2, "updated", "uses pnpm")]
    assert store.fulltext(["npm"], ALICE, ALL, 5) == []
    with pytest.raises(NotFoundError):
        store.update_text("m_1", BOB, "x", ["x"], None, "j_3")


def test_an_episode_cannot_be_edited(store: Store) -> None:
    store.insert([episode("e_1", "said")], None)
    with pytest.raises(ValidationError, match="raw episode"):
        store.update_text("e_1", ALICE, "unsaid", ["unsaid"], None, "j_1")


def test_set_status_and_set_fields_are_recorded(store: Store) -> None:
    store.insert([derived("m_1", "fact one")], None)
    assert store.set_status("m_1", ALICE, "forgotten", "obsolete").status == "forgotten"
    assert store.get("m_1", ALICE).valid_to is not None
    store.set_fields("m_1", ALICE, action="restored", reason="back", status="active",
                     maturity="confirmed", metadata={"a": 1}, pinned=True)
    item = store.get("m_1", ALICE)
    assert (item.status, item.maturity, item.metadata, item.pinned) == ("active", "confirmed",
                                                                        {"a": 1}, True)
    assert [h.action for h in store.history("m_1", ALICE)] == ["created", "forgotten", "restored"]
    with pytest.raises(NotFoundError):
        store.set_fields("m_1", BOB, action="x", reason=None)


def test_purge_takes_what_was_derived_from_it(store: Store) -> None:
    store.insert([episode("e_1", "the turn"), derived("m_1", "from the turn", ("e_1",)),
                  derived("m_2", "unrelated")], None)
    store.insert([derived("m_3", "from m_1")], None)
    store.link([("m_3", "m_1", "derived_from", 1.0)])
    assert sorted(store.purge("e_1", ALICE)) == ["e_1", "m_1", "m_3"]
    assert [m.id for m in store.items_by_id(["e_1", "m_1", "m_2", "m_3"])] == ["m_2"]


def test_page_and_export(store: Store) -> None:
    store.insert([episode(f"e_{i}", f"turn {i}") for i in range(5)], None)
    store.insert([episode("e_bob", "bob's", BOB)], None)
    first = store.page(ALICE, ALL, 2, None)
    assert [m.id for m in first] == ["e_4", "e_3"] and first.next_cursor
    second = store.page(ALICE, ALL, 10, first.next_cursor)
    assert [m.id for m in second] == ["e_2", "e_1", "e_0"] and second.next_cursor is None
    with pytest.raises(ValidationError):
        store.page(ALICE, ALL, 2, "not-a-cursor")
    assert [m.id for m in store.export(ALICE, True)] == [f"e_{i}" for i in range(5)]
    assert list(store.export(ALICE, False)) == []


def test_sources_roles_and_recent_turns(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_1", "first", s1, at=100.0), episode("e_2", "second", s1, at=200.0,
                                                                 role="assistant"),
                  derived("m_1", "both", ("e_1", "e_2"))], None)
    rows = store.rowids(["e_1", "e_2", "m_1"])
    assert [s.id for s in store.sources([rows["m_1"]])[rows["m_1"]]] == ["e_1", "e_2"]
    assert store.roles([rows["e_1"], rows["e_2"], rows["m_1"]]) == {
        rows["e_1"]: "user", rows["e_2"]: "assistant", rows["m_1"]: None}
    assert [m.id for m in store.recent_turns(s1, 5)] == ["e_1", "e_2"]
    assert [m.id for m in store.recent_turns(s1, 5, before="e_2")] == ["e_1"]
    assert store.same_episode(s1, "assistant", "second", 200.0) == "e_2"
    assert store.same_episode(s1, "user", "second", 200.0) is None
    assert store.session_seen(s1, "e_2") and not store.session_seen(s1, "e_1")


def test_derived_all_scopes_touch_and_use_stats(store: Store) -> None:
    store.insert([derived("m_1", "a fact"), derived("m_2", "a rule", kind="convention"),
                  derived("m_3", "bob's", scope=BOB)], None)
    assert [m.id for m in store.derived(ALICE)] == ["m_2", "m_1"]
    assert [m.id for m in store.derived(ALICE, ["convention"])] == ["m_2"]
    assert [m.id for m in store.derived(ALICE, text="a fact")] == ["m_1"]
    assert {s.user_id for s in store.all_scopes()} == {"alice", "bob"}
    assert {s.user_id for s in store.all_scopes("other-org")} == set()
    store.touch(["m_1", "m_1"], at=1000.0)
    assert store.use_stats(["m_1", "m_2"]) == {"m_1": (2, 1000.0), "m_2": (0, None)}


def test_merge_into_adds_sources_without_a_new_version(store: Store) -> None:
    store.insert([episode("e_1", "one"), episode("e_2", "two"), derived("m_1", "fact", ("e_1",))],
                 None)
    store.merge_into("m_1", ["e_2"], metadata={"seen": 2}, maturity="confirmed", reason="again")
    item = store.get("m_1", ALICE)
    assert (item.sources, item.version, item.maturity, item.metadata) == (
        ["e_1", "e_2"], 1, "confirmed", {"seen": 2})
    assert store.history("m_1", ALICE)[-1].action == "merged"
    with pytest.raises(NotFoundError):
        store.merge_into("m_nope", [], metadata={}, maturity="candidate", reason="")


TOOL = Provenance(door="hook", source="tool", trust="external")
AGENT = Provenance(door="mcp", source="assistant", trust="agent")


def test_a_derived_memory_takes_its_least_trusted_sources_provenance(store: Store) -> None:
    user = episode("e_user", "we use pnpm")
    store.insert([user, replace(episode("e_tool", "pnpm: not found"), provenance=TOOL)], None)
    store.insert([replace(episode("e_said", "use yarn"), provenance=AGENT),
                  derived("m_mixed", "pnpm is missing", ("e_user", "e_tool")),
                  derived("m_batch", "yarn it is", ("e_user", "e_said")),  # a source of its batch
                  derived("m_own", "the user's", ("e_user",)),
                  replace(derived("m_given", "given"), provenance=AGENT),
                  derived("m_none", "cites nothing")], None)
    found = {m.id: m.provenance for m in store.items_by_id(
        ["e_user", "e_tool", "m_mixed", "m_batch", "m_own", "m_given", "m_none"])}
    assert found == {"e_user": Provenance(), "e_tool": TOOL, "m_mixed": TOOL, "m_batch": AGENT,
                     "m_own": Provenance(), "m_given": AGENT, "m_none": Provenance()}
    assert store.get("m_mixed", ALICE).provenance == TOOL


def test_merging_a_less_trusted_source_lowers_the_trust_and_a_more_trusted_one_does_not(
        store: Store) -> None:
    store.insert([episode("e_1", "one"), replace(episode("e_2", "two"), provenance=AGENT),
                  replace(episode("e_3", "three"), provenance=TOOL), episode("e_4", "four"),
                  derived("m_1", "fact", ("e_1",))], None)
    store.merge_into("m_1", ["e_2"], metadata={}, maturity="candidate", reason="again")
    assert store.get("m_1", ALICE).provenance == AGENT
    store.merge_into("m_1", ["e_4"], metadata={}, maturity="candidate", reason="again")
    assert store.get("m_1", ALICE).provenance == AGENT
    store.merge_into("m_1", ["e_3"], metadata={}, maturity="candidate", reason="again")
    assert store.get("m_1", ALICE).provenance == TOOL


def test_trust_and_door_filters(store: Store) -> None:
    store.insert([derived("m_1", "deploy rule"), replace(derived("m_2", "deploy note"),
                                                          provenance=TOOL)], None)
    ids = {rowid(store, "m_1"): "m_1", rowid(store, "m_2"): "m_2"}

    def found(filters: Filters) -> set[str]:
        return {ids[r] for r, _ in store.fulltext(["deploy"], ALICE, filters, 5)}

    assert found(Filters(trust=("external",))) == {"m_2"}
    assert found(Filters(trust=("user", "agent"))) == {"m_1"}
    assert found(Filters(doors=("hook",))) == {"m_2"}
    assert found(Filters(doors=())) == set()
    assert [m.id for m in store.page(ALICE, Filters(trust=("user",)), 10, None)] == ["m_1"]


def test_supersede_flags_what_was_derived_from_the_old_one(store: Store) -> None:
    store.insert([derived("m_old", "uses npm"), derived("m_new", "uses pnpm"),
                  derived("m_child", "npm lockfile rule")], None)
    store.link([("m_child", "m_old", "derived_from", 1.0)])
    assert store.supersede("m_old", "m_new", at=500.0, reason="switched") == ["m_child"]
    old = store.get("m_old", ALICE)
    assert (old.status, old.valid_to.timestamp()) == ("superseded", 500.0)
    assert "m_old" in store.get("m_child", ALICE).metadata["review"]
    assert (rowid(store, "m_new"), rowid(store, "m_old"), "supersedes", 1.0) in \
        store.edges_of([rowid(store, "m_new")])


def test_stats_count_what_is_stored(store: Store, store_target: str | Path) -> None:
    store.insert([episode("e_1", "one"), derived("m_1", "fact", ("e_1",))], "j_1")
    stats = store.stats()
    assert (stats["episodes"], stats["memories"], stats["passages"], stats["vectors"]) == (1, 1, 2, 0)
    assert stats["jobs"] == {"queued": 1} and stats["path"] == str(store_target)
    # both passages are found by their words at once; their vectors are still to come
    assert stats["embed_backlog"] == store.embed_backlog() == 2
    store.put_vectors([(r, unit(0)) for r, _ in store.unembedded(list(range(1, 10)))][:1], [])
    assert store.embed_backlog() == 1 and store.stats()["embed_backlog"] == 1


def test_stats_of_one_org_or_user_count_only_theirs(store: Store) -> None:
    store.insert([episode("e_1", "one"), derived("m_1", "fact", ("e_1",))], "j_1")
    store.insert([episode("e_2", "two", BOB), episode("e_3", "three", BOB)], "j_2")
    store.insert([episode("e_4", "elsewhere", Scope(org_id="globex", user_id="alice"))], "j_3")
    alice = store.stats(org_id="default", user_id="alice")
    assert (alice["episodes"], alice["memories"], alice["passages"]) == (1, 1, 2)
    assert alice["jobs"] == {"queued": 1} and alice["size_bytes"] == 0
    assert store.stats(org_id="default")["episodes"] == 3
    assert store.stats()["episodes"] == 4


# --- recall channels ----------------------------------------------------------------------

def test_fulltext_stems_english_and_finds_chinese_words(store: Store) -> None:
    store.insert([episode("e_1", "We were deploying the services"),
                  episode("e_2", "我们用 pnpm 管理依赖"), episode("e_3", "lunch at noon"),
                  episode("e_bob", "bob deploys too", BOB)], None)
    rows = store.rowids(["e_1", "e_2"])
    assert [r for r, _ in store.fulltext(["deploy"], ALICE, ALL, 5)] == [rows["e_1"]]
    assert [r for r, _ in store.fulltext(["依赖"], ALICE, ALL, 5)] == [rows["e_2"]]
    assert store.fulltext([], ALICE, ALL, 5) == []
    hits = store.fulltext(["deploying", "noon"], ALICE, ALL, 5)
    assert len(hits) == 2 and all(score > 0 for _, score in hits)


def test_fulltext_weighs_a_rare_word_above_a_common_one(store: Store) -> None:
    store.insert([episode(f"e_{i}", f"the billing service restarted again {i}") for i in range(8)]
                 + [episode("e_rare", "Priya restarted")], None)
    best = store.fulltext(["priya", "billing", "service"], ALICE, ALL, 5)
    assert best[0][0] == rowid(store, "e_rare")


def test_fulltext_weighs_the_neighbouring_turns_less(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_q", "which port does the api use?", s1, at=1.0),
                  episode("e_a", "8080", s1, at=2.0)], None)
    answer = rowid(store, "e_a")
    assert answer in [r for r, _ in store.fulltext(["port"], s1, ALL, 5)]
    assert answer not in [r for r, _ in store.fulltext(["port"], s1, ALL, 5, context_weight=0.0)]


def test_a_batch_gives_each_turn_its_neighbours_words_across_sessions_and_batches(
        store: Store) -> None:
    s1, s2 = Scope(user_id="alice", session_id="s1"), Scope(user_id="alice", session_id="s2")
    store.insert([episode("e_1", "the deploy failed", s1, at=1.0),
                  episode("e_x", "lunch plans", s2, at=2.0)], None)
    # a later batch, interleaving two sessions, with a memory citing a turn of its own batch
    store.insert([episode("e_2", "kubernetes", s1, at=3.0), episode("e_y", "ramen", s2, at=4.0),
                  episode("e_3", "retry it", s1, at=5.0),
                  derived("m_1", "the deploy failed twice", ("e_2",), s1)], None)
    r = store.rowids(["e_1", "e_2", "e_3", "e_x", "e_y", "m_1"])

    def by_context(word: str, scope: Scope) -> set[int]:
        body = {h for h, _ in store.fulltext([word], scope, ALL, 10, context_weight=0.0)}
        return {h for h, _ in store.fulltext([word], scope, ALL, 10)} - body

    # the turn before the batch now holds the batch's first turn of its session, not another's
    assert by_context("kubernetes", s1) == {r["e_1"], r["e_3"]}
    assert by_context("ramen", s2) == {r["e_x"]}
    assert by_context("lunch", s2) == {r["e_y"]}
    assert by_context("retry", s1) == {r["e_2"]}
    assert store.sources([r["m_1"]])[r["m_1"]][0].id == "e_2"
    pairs = store.neighbors([r["e_3"], r["e_x"], r["e_2"]], 2, ALICE, ALL)
    assert pairs == [(r["e_2"], r["e_3"]), (r["e_1"], r["e_3"]), (r["e_y"], r["e_x"]),
                     (r["e_1"], r["e_2"]), (r["e_3"], r["e_2"])]


def test_a_turn_the_agent_hides_leaves_its_neighbours_context(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_1", "hello there", s1, at=1.0),
                  episode("e_2", "my locker code is 4471", s1, at=2.0),
                  episode("e_3", "thanks, see you", s1, at=3.0)], None)
    r = store.rowids(["e_1", "e_2", "e_3"])
    assert {h for h, _ in store.fulltext(["locker"], s1, ALL, 10)} == {r["e_1"], r["e_2"], r["e_3"]}

    store.set_fields("e_2", None, action="forgotten", status="forgotten", reason="asked to forget")
    # its words are in no other turn's context, and the neighbours now hold each other's
    assert {h for h, _ in store.fulltext(["locker"], s1, ALL, 10)} <= {r["e_2"]}
    assert {h for h, _ in store.fulltext(["thanks"], s1, ALL, 10)} == {r["e_1"], r["e_3"]}

    store.set_fields("e_2", None, action="restored", status="active", reason="undo")
    assert {h for h, _ in store.fulltext(["locker"], s1, ALL, 10)} == {r["e_1"], r["e_2"], r["e_3"]}


def test_vector_search_is_exact_and_walled(store: Store) -> None:
    store.insert([episode(f"e_{i}", f"turn {i}") for i in range(4)], None)
    store.insert([episode("e_bob", "bob's", BOB)], None)
    passages = {m: p for m, p in zip(["e_0", "e_1", "e_2", "e_3", "e_bob"],
                                     store.unembedded(list(range(1, 100))), strict=True)}
    store.put_vectors([(passages[m][0], unit(i)) for i, m in enumerate(passages)], [])
    query = unit(2) + 0.1 * unit(1)
    query /= np.linalg.norm(query)
    hits = store.vector(query, ALICE, ALL, 2)
    assert [r for r, _ in hits] == [rowid(store, "e_2"), rowid(store, "e_1")]
    assert hits[0][1] == pytest.approx(float(query @ unit(2)), abs=1e-5)
    assert rowid(store, "e_bob") not in [r for r, _ in store.vector(unit(4), ALICE, ALL, 10)]
    assert store.unembedded(list(range(1, 100))) == []


def test_time_window_neighbors_and_accept(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode(f"e_{i}", f"turn {i}", s1, at=float(100 * i)) for i in range(5)], None)
    rows = store.rowids([f"e_{i}" for i in range(5)])
    assert [r for r, _ in store.time_window(150.0, 350.0, ALICE, ALL, 10)] == [rows["e_3"], rows["e_2"]]
    pairs = store.neighbors([rows["e_2"]], 1, ALICE, ALL)
    assert sorted(pairs) == sorted([(rows["e_1"], rows["e_2"]), (rows["e_3"], rows["e_2"])])
    store.set_status("e_4", ALICE, "forgotten", None)
    assert store.accept(list(rows.values()), ALICE, ALL) == {rows[f"e_{i}"] for i in range(4)}
    assert store.accept(list(rows.values()), BOB, ALL) == set()


def test_filters_apply_in_every_channel(store: Store) -> None:
    store.insert([derived("m_1", "deploy rule", kind="convention"), derived("m_2", "deploy fact")],
                 None)
    only = Filters(kinds=("convention",))
    assert [r for r, _ in store.fulltext(["deploy"], ALICE, only, 5)] == [rowid(store, "m_1")]
    assert store.fulltext(["deploy"], ALICE, Filters(kinds=()), 5) == []


# --- graph and topics --------------------------------------------------------------------

def test_links_entities_and_their_neighbours(store: Store) -> None:
    store.insert([derived("m_1", "one"), derived("m_2", "two"), derived("m_3", "three")], None)
    r = store.rowids(["m_1", "m_2", "m_3"])
    store.link([("m_1", "m_2", "co_used", 1.0), ("m_1", "m_1", "co_used", 1.0),
                ("m_1", "m_nope", "co_used", 1.0)])
    store.link([("m_1", "m_2", "co_used", 0.5)], add=True)
    store.link([("m_1", "m_2", "co_used", 9.0)])  # without add, an edge stays as it is
    assert store.edges_of([r["m_2"]]) == [(r["m_2"], r["m_1"], "co_used", 1.5)]
    store.set_entities("m_1", ["Redis", "redis", " "])
    store.set_entities("m_3", ["REDIS"])
    assert [m.id for m in store.with_entities(ALICE, ["redis"])] == ["m_3", "m_1"]
    assert store.with_entities(BOB, ["redis"]) == []
    assert store.entity_neighbors([r["m_1"]]) == [(r["m_3"], r["m_1"])]


def test_the_edges_of_one_memory_heaviest_first(store: Store) -> None:
    store.insert([derived("m_1", "one"), derived("m_2", "two"), derived("m_3", "three")], None)
    r = store.rowids(["m_1", "m_2", "m_3"])
    store.link([("m_1", "m_2", "co_used", 1.0), ("m_3", "m_1", "derived_from", 2.0)])
    assert store.edge_list(r["m_1"]) == [(r["m_3"], "derived_from", "in", 2.0),
                                         (r["m_2"], "co_used", "out", 1.0)]
    assert store.edge_list(r["m_1"], limit=1) == [(r["m_3"], "derived_from", "in", 2.0)]


def test_the_mind_map(store: Store) -> None:
    store.insert([derived("m_1", "redis cache ttl"), derived("m_2", "redis eviction")], None)
    root = store.save_topic(ALICE, None, parent=None, label="storage", keywords={"redis": 2}, size=2)
    leaf = store.save_topic(ALICE, None, parent=root, label="redis · cache",
                            keywords={"redis": 2, "cache": 1}, size=2)
    (saved,) = [t for t in store.topics(ALICE) if t.rowid == leaf]
    store.save_topic(ALICE, saved, parent=root, label="redis · cache", keywords={"redis": 3,
                                                                                "cache": 1}, size=2)
    assert [(t.label, t.parent, t.keywords) for t in store.topics(ALICE)] == [
        ("storage", None, {"redis": 2}), ("redis · cache", root, {"redis": 3, "cache": 1})]
    assert store.topics(BOB) == [] and len(store.topics(Scope(), exact=False)) == 2
    store.place(["m_1", "m_2"], leaf)
    store.touch(["m_2"])
    assert [m.id for m in store.topic_members([leaf])[leaf]] == ["m_2", "m_1"]
    assert store.topic_members_for(["cache"], ALICE, ALL) == [rowid(store, "m_2"), rowid(store, "m_1")]
    assert store.topic_members_for(["unrelated"], ALICE, ALL) == []


# --- working memory -----------------------------------------------------------------------

def test_working_memory_heats_decays_and_evicts(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([derived(f"m_{i}", f"memory {i}") for i in range(3)], None)
    assert store.warm(s1, {"m_0": (1.0, "asked"), "m_1": (0.5, "near")}, size=2) == []
    # m_0 decays to 0.8; m_2 comes in hotter and m_1 (0.4) is the coldest beyond two
    assert store.warm(s1, {"m_2": (2.0, "error")}, size=2) == ["m_1"]
    assert [(m.id, round(h, 3)) for m, h in store.working_set(s1)] == [("m_2", 2.0), ("m_0", 0.8)]
    assert store.working_set(ALICE) == []  # no session, no working memory
    store.set_status("m_2", ALICE, "forgotten", None)
    assert [m.id for m, _ in store.working_set(s1)] == ["m_0"]


# --- jobs ---------------------------------------------------------------------------------

def test_enqueue_claim_finish(store: Store) -> None:
    assert store.enqueue("extract", {"episodes": ["e_1"]}, job_id="j_1", org_id="default")
    assert store.enqueue("extract", {}, job_id="j_low", priority=-1)
    assert sorted(store.queued("extract")) == ["j_1", "j_low"] and store.has_pending(["extract"])
    (job,) = store.claim_jobs("extract", 1, lease_s=60)
    assert (job.id, job.payload, job.attempts) == ("j_1", {"episodes": ["e_1"]}, 1)
    assert store.claim_jobs("extract", 5, lease_s=60)[0].id == "j_low"
    assert store.claim_jobs("extract", 5, lease_s=60) == []  # both are leased
    store.finish_job(job, {"memories": 2})
    info = store.job("j_1")
    assert (info.state, info.result, info.attempts) == ("done", {"memories": 2}, 1)
    assert store.job_states(["j_1", "j_low", "j_none"]) == {"j_1": "done", "j_low": "running"}
    assert [j.id for j in store.jobs(org_id="default")] == ["j_1"]
    assert [j.id for j in store.jobs(state="running")] == ["j_low"]
    with pytest.raises(JobNotFoundError):
        store.job("j_1", org_id="another")


def test_jobs_remember_whose_data_they_concern(store: Store) -> None:
    store.enqueue("extract", {}, job_id="j_alice", org_id="default", user_id="alice")
    store.enqueue("extract", {}, job_id="j_bob", org_id="default", user_id="bob")
    store.insert([episode("e_1", "one")], "j_embed")  # alice's episode: alice's job
    assert {j.id for j in store.jobs(org_id="default", user_id="alice")} == {"j_alice", "j_embed"}
    assert store.job("j_bob", "default", "bob").id == "j_bob"
    with pytest.raises(JobNotFoundError):
        store.job("j_bob", "default", "alice")


def test_the_audit_log_keeps_its_walls_and_filters(store: Store) -> None:
    for n, (org, user, door, action) in enumerate([
            ("default", "alice", "rest", "GET /v1/memories"),
            ("default", "alice", "mcp", "memory_remember"),
            ("default", "bob", "rest", "DELETE /v1/memories/{memory_id}"),
            ("globex", "alice", "cli", "remem purge")]):
        store.record_audit(NewAudit(id=f"a_{n}", at=1000.0 + n, door=door, action=action,
                                    org_id=org, user_id=user, actor=user, key_id=f"k_{user}",
                                    target=f"m_{n}", status=200))
    alice, _ = store.audit("default", "alice")
    assert [e.id for e in alice] == ["a_1", "a_0"]  # newest first, bob's and globex's left out
    assert alice[0].key_id == "k_alice" and alice[0].at.timestamp() == 1001.0
    assert [e.id for e in store.audit("default")[0]] == ["a_2", "a_1", "a_0"]
    assert [e.id for e in store.audit("default", door="rest")[0]] == ["a_2", "a_0"]
    assert [e.id for e in store.audit("default", action="DELETE")[0]] == ["a_2"]
    assert [e.id for e in store.audit("default", since=1001.0, until=1002.0)[0]] == ["a_1"]
    assert [e.id for e in store.audit("default", target="m_0", key_id="k_alice", actor="alice")[0]] == ["a_0"]
    page, cursor = store.audit("default", limit=2)
    assert [e.id for e in page] == ["a_2", "a_1"] and cursor is not None
    assert [e.id for e in store.audit("default", limit=2, cursor=cursor)[0]] == ["a_0"]


def test_a_purge_leaves_its_words_in_no_log_and_no_working_memory_reason(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_1", "the zanzibarquux plan", s1), episode("e_2", "lunch", s1)], None)
    store.warm(s1, {"e_2": (1.0, "prefetched for: the zanzibarquux plan")}, 10)
    store.log_injection(NewInjection(id="i_1", at=time.time(), door="context", scope=s1,
                                     query="zanzibarquux", tokens=5, text="- the zanzibarquux plan",
                                     items=[("e_1", "recall", ["fulltext"])]),
                        keep_days=None, keep_rows=None)
    store.purge("e_1", ALICE)
    entry = store.injection("i_1", ALICE)
    assert (entry.text, entry.query) == (None, None)
    assert [m.id for m, _ in store.working_set(s1)] == ["e_2"]
    assert store.fulltext(["zanzibarquux"], ALICE, ALL, 10) == []


# --- retention ------------------------------------------------------------------------------

def test_stored_before_finds_what_is_old_enough_inside_the_walls_given(store: Store) -> None:
    web = Scope(user_id="alice", project="web")
    store.insert([episode("e_1", "one"), episode("e_2", "two", web), episode("e_bob", "b", BOB),
                  episode("e_other", "o", Scope(org_id="globex", user_id="alice")),
                  derived("m_1", "a fact"), derived("m_2", "a rule", kind="convention"),
                  derived("m_pin", "pinned")], None)
    store.set_fields("m_pin", ALICE, action="pinned", reason=None, pinned=True)
    store.set_status("m_1", ALICE, "forgotten", None)
    later = time.time() + 60

    def ids(**given: object) -> list[str]:
        return [m.id for m in store.stored_before(later, **given)]  # type: ignore[arg-type]

    assert ids(episodes=True) == ["e_1", "e_2", "e_bob", "e_other"]
    assert ids(episodes=True, org_id="default", user_id="alice") == ["e_1", "e_2"]
    assert ids(episodes=True, project="web") == ["e_2"]
    assert ids(episodes=False) == ["m_1", "m_2"]  # never a pinned one
    assert ids(episodes=False, kinds=["convention"]) == ["m_2"]
    assert ids(episodes=False, statuses=["active"]) == ["m_2"]
    assert ids(episodes=False, kinds=[]) == []
    assert [m.id for m in store.stored_before(0.0, episodes=True)] == []
    first = store.stored_before(later, episodes=True, limit=3)
    assert [m.id for m in first] == ["e_1", "e_2", "e_bob"] and first.next_cursor is not None
    rest = store.stored_before(later, episodes=True, limit=3, cursor=first.next_cursor)
    assert [m.id for m in rest] == ["e_other"] and rest.next_cursor is None
    # a turn the extractor has still to read is not old yet: what it says is in no memory
    store.enqueue("extract", {"episodes": ["e_1"]}, job_id="j_x")
    assert ids(episodes=True, user_id="alice", org_id="default") == ["e_2"]
    store.finish_job(store.claim_jobs("extract", 1, lease_s=60)[0])
    assert ids(episodes=True, user_id="alice", org_id="default") == ["e_1", "e_2"]


def test_compact_deletes_turns_for_good_and_keeps_what_was_derived_with_a_note(store: Store) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_1", "hello there", s1), episode("e_2", "the zanzibarquux cron", s1),
                  episode("e_3", "and then lunch", s1), episode("e_pin", "pinned zanzibarquux"),
                  derived("m_1", "a cron moves billing", ("e_2",)),
                  derived("m_2", "billing and lunch", ("e_2", "e_3"))], "j_e")
    store.put_vectors([(p, unit(p)) for p, _ in store.unembedded(list(range(1, 50)))], [])
    store.set_fields("e_pin", ALICE, action="pinned", reason=None, pinned=True)
    store.warm(s1, {"e_3": (1.0, "prefetched for: the zanzibarquux cron")}, 10)
    store.log_injection(NewInjection(id="i_1", at=time.time(), door="context", scope=s1,
                                     query="cron", tokens=5, text="- the zanzibarquux cron",
                                     items=[("e_2", "recall", ["fulltext"])]),
                        keep_days=None, keep_rows=None)
    vectors = store.stats()["vectors"]
    assert store.compact(["e_2", "e_pin", "m_1"], BOB, reason="older than 30 days") == ([], [])
    assert store.compact(["e_2", "e_pin", "m_1"], ALICE, reason="older than 30 days") == (
        ["e_2"], ["m_1", "m_2"])
    assert [m.id for m in store.items_by_id(["e_2", "m_1", "m_2", "e_pin"])] == ["e_pin", "m_1", "m_2"]
    assert store.get("m_1", ALICE).sources == [] and store.get("m_2", ALICE).sources == ["e_3"]
    assert store.get("m_1", ALICE).text == "a cron moves billing"
    note = store.history("m_2", ALICE)[-1]
    assert note.action == "sources_compacted" and "older than 30 days" in (note.reason or "")
    assert "e_2" in (note.reason or "") and note.version == 1
    assert store.stats()["vectors"] == vectors - 1
    # no full-text row, no neighbour's context, no log, no reason keeps its words
    assert [r for r, _ in store.fulltext(["zanzibarquux"], ALICE, ALL, 10)] == [rowid(store, "e_pin")]
    assert (store.injection("i_1", ALICE).text, store.injection("i_1", ALICE).query) == (None, None)
    assert [(m.id, h) for m, h in store.working_set(s1)] == [("e_3", 1.0)]
    assert store.compact(["e_2"], None, reason="again") == ([], [])
    # a turn the extractor has still to read stays
    store.enqueue("extract", {"episodes": ["e_1"]}, job_id="j_x")
    assert store.compact(["e_1"], None, reason="old") == ([], [])


def test_an_expired_lease_is_taken_over_and_the_old_worker_loses(store: Store) -> None:
    store.enqueue("extract", {}, job_id="j_1")
    (first,) = store.claim_jobs("extract", 1, lease_s=-1)  # its lease is already over
    (second,) = store.claim_jobs("extract", 1, lease_s=60)
    assert (second.id, second.attempts) == ("j_1", 2)
    with pytest.raises(LeaseLostError):
        store.finish_job(first)
    store.finish_job(second)
    assert store.job("j_1").state == "done"


def test_a_coalescing_key_holds_while_its_job_waits(store: Store) -> None:
    key = "coalesce:prefetch:s1"
    assert store.enqueue("prefetch", {}, job_id="j_1", key=key)
    assert not store.enqueue("prefetch", {}, job_id="j_2", key=key)
    assert store.has_job_key(key)
    store.claim_jobs("prefetch", 1, lease_s=60)
    assert not store.has_job_key(key)  # running: the same work may be queued again
    assert store.enqueue("prefetch", {}, job_id="j_3", key=key)
    timer = "timer:decay:1"
    assert store.enqueue("decay", {}, job_id="j_t", key=timer)
    store.finish_job(store.claim_jobs("decay", 1, lease_s=60)[0])
    assert store.has_job_key(timer) and not store.enqueue("decay", {}, job_id="j_t2", key=timer)


def test_fail_release_retry_cancel_prune(store: Store) -> None:
    store.enqueue("extract", {}, job_id="j_1", max_attempts=2)
    (job,) = store.claim_jobs("extract", 1, lease_s=60)
    store.release_jobs([job])
    assert store.job("j_1").attempts == 0 and store.job("j_1").state == "queued"
    (job,) = store.claim_jobs("extract", 1, lease_s=60)
    store.fail_job(job, "model exploded", retry_in=0.0)
    assert store.job("j_1").state == "queued" and store.job("j_1").last_error == "model exploded"
    (job,) = store.claim_jobs("extract", 1, lease_s=60)
    store.fail_job(job, "again", retry_in=0.0)  # the last attempt
    assert store.job("j_1").state == "failed"
    assert store.retry_job("j_1").state == "queued"
    assert store.cancel_job("j_1").state == "cancelled"
    store.enqueue("extract", {}, job_id="j_2")
    with pytest.raises(ValidationError, match="only failed or cancelled"):
        store.retry_job("j_2")
    store.enqueue("embed", {}, job_id="j_3")
    store.finish_job(store.claim_jobs("embed", 1, lease_s=60)[0])
    assert store.prune_jobs(older_than_s=3600) == 0
    assert store.prune_jobs(older_than_s=-1) == 1 and store.job_states(["j_3"]) == {}


def test_quiet_sessions(store: Store) -> None:
    now = time.time()
    store.insert([episode("e_1", "hi", Scope(user_id="alice", session_id="s1"), at=now - 100)], None)
    store.insert([NewMemory(id="e_2", kind="episode", text="hi", raw=True, observed_at=now,
                            scope=Scope(user_id="alice", session_id="s2"))], None)
    assert [(s.session_id, s.user_id) for s, _ in store.quiet_sessions(now - 50)] == [("s1", "alice")]


def test_vectors_and_their_embed_jobs(store: Store) -> None:
    store.insert([derived("m_1", "one", ()), derived("m_2", "two")], "j_embed")
    (job,) = store.claim_jobs("embed", 1, lease_s=60)
    todo = store.unembedded(job.payload["passages"])
    assert [t for _, t in todo] == ["one", "two"]
    store.put_vectors([(todo[0][0], unit(0))], [job], renew_s=60)  # a step, lease renewed
    assert store.job("j_embed").state == "running"
    store.put_vectors([(todo[1][0], unit(1))], [job])
    assert store.job("j_embed").state == "done" and store.unembedded(job.payload["passages"]) == []
    store.insert([derived("m_3", "three")], None)
    store.put_memory_vectors("m_3", [unit(3)])
    assert store.vector(unit(3), ALICE, ALL, 1)[0][0] == rowid(store, "m_3")


# --- the injection log ----------------------------------------------------------------------

def test_the_injection_log_keeps_its_walls_its_retention_and_what_was_used(store: Store) -> None:
    web = Scope(user_id="alice", project="web", session_id="s1")
    store.insert([derived("m_1", "use pnpm", kind="convention"), derived("m_2", "node 20", kind="pitfall"),
                  derived("m_bob", "bob's", scope=BOB)], None)
    for i, at in enumerate((100.0, 200.0, 300.0)):
        store.log_injection(NewInjection(id=f"i_{i}", at=at, door="context", scope=web,
                                         query="build?", tokens=12, text="- use pnpm",
                                         items=[("m_1", "core", ("fulltext",)), ("m_2", "hits", ()),
                                                ("m_bob", "hits", ()), ("m_none", "hits", ())]),
                            keep_days=None, keep_rows=2)  # the oldest goes
    page, cursor = store.injections(ALICE, limit=1)
    assert [e.id for e in page] == ["i_2"] and cursor is not None
    rest, end = store.injections(ALICE, limit=5, cursor=cursor)
    assert [e.id for e in rest] == ["i_1"] and end is None
    # only the scope's org's memories are recorded (another user's memory of the org is)
    assert [(x.memory_id, x.rank, x.section) for x in store.injection("i_2", ALICE).items] == [
        ("m_1", 1, "core"), ("m_2", 2, "hits"), ("m_bob", 3, "hits")]
    assert store.injections(BOB)[0] == [] and store.injections(ALICE, door="proxy")[0] == []
    with pytest.raises(NotFoundError):
        store.injection("i_2", BOB)
    assert [e.id for e in store.injections_of("m_1", ALICE)] == ["i_2", "i_1"]
    before = store.change_token()
    assert store.mark_used(["m_1", "m_nope"], ALICE, at=250.0) == 1  # the latest before 250
    assert store.change_token() == before  # the log moves no cached context
    assert [x.used for x in store.injection("i_1", ALICE).items][:1] == [True]
    rates = {(r.door, r.kind): (r.injected, r.used) for r in store.heed_rates(ALICE)}
    assert rates == {("context", "convention"): (2, 1), ("context", "pitfall"): (2, 0),
                     ("context", "fact"): (2, 0)}
    assert store.heed_rates(ALICE, since=250.0)[0].injected == 1
    store.log_injection(NewInjection(id="i_9", at=100_000.0, door="context", scope=web, query=None,
                                     tokens=1), keep_days=1.0, keep_rows=None)
    assert [e.id for e in store.injections(ALICE)[0]] == ["i_9"]


# --- API keys -----------------------------------------------------------------------------

def test_api_keys(store: Store) -> None:
    assert store.key_counts() == (0, 0)
    store.add_key(("k_1", "hash1", "acme", "alice", "read", "ci", 10.0, None, None))
    store.add_key(("k_2", "hash2", "acme", None, "read,write", None, 20.0, None, None))
    assert [r[0] for r in store.key_rows()] == ["k_1", "k_2"]
    assert store.key_rows(digest="hash2")[0][:5] == ("k_2", "hash2", "acme", None, "read,write")
    assert store.revoke_key("k_1", 30.0) and not store.revoke_key("k_nope", 30.0)
    store.revoke_key("k_1", 99.0)  # revoked once, for good
    store.touch_key("k_2", 40.0)
    assert store.key_rows(key_id="k_1")[0][7] == 30.0 and store.key_rows(key_id="k_2")[0][8] == 40.0
    assert store.key_counts() == (2, 1)


def _grant(share_id: str, *, user: str | None = "alice", project: str | None = "web",
           grantee: str = "bob", kind: str = "user", access: str = "read", org: str = "default",
           at: float = 10.0) -> Share:
    return Share(id=share_id, org_id=org, user_id=user, project=project, grantee_kind=kind,
                 grantee=grantee, access=access, created_at=datetime.fromtimestamp(at, timezone.utc))


def test_grants_are_one_per_scope_and_grantee(store: Store) -> None:
    first = store.put_share(_grant("sh_1"))
    assert (first.id, first.access) == ("sh_1", "read")
    # granting the same scope to the same grantee again changes the access, not the grant
    again = store.put_share(_grant("sh_2", access="write", at=20.0))
    assert (again.id, again.access, again.created_at.timestamp()) == ("sh_1", "write", 10.0)
    store.put_share(_grant("sh_3", project=None, at=30.0))  # all of alice's: another scope
    store.put_share(_grant("sh_4", user=None, project="web", grantee="ci", kind="agent", at=40.0))
    store.put_share(_grant("sh_5", org="acme", at=50.0))
    assert [s.id for s in store.shares("default")] == ["sh_1", "sh_3", "sh_4"]
    assert [s.id for s in store.shares("default", user_id="alice")] == ["sh_1", "sh_3"]
    assert [s.id for s in store.shares("default", grantee_kind="agent", grantee="ci")] == ["sh_4"]
    assert [s.id for s in store.shares("default", project="web")] == ["sh_1", "sh_4"]
    assert [s.id for s in store.shares("default", share_id="sh_3")] == ["sh_3"]
    assert [s.id for s in store.shares("acme")] == ["sh_5"]


def test_a_grant_is_dropped_within_its_org_only(store: Store) -> None:
    store.put_share(_grant("sh_1"))
    store.put_share(_grant("sh_2", org="acme"))
    assert store.drop_share("sh_2", "default") is None  # another org's grant: untouched
    dropped = store.drop_share("sh_1", "default")
    assert dropped is not None and (dropped.user_id, dropped.grantee) == ("alice", "bob")
    assert store.drop_share("sh_1", "default") is None
    assert store.shares("default") == [] and [s.id for s in store.shares("acme")] == ["sh_2"]


# --- copies ---------------------------------------------------------------------------------

def test_rows_copied_into_another_store_keep_their_ids(store: Store, tmp_path: Path) -> None:
    s1 = Scope(user_id="alice", session_id="s1")
    store.insert([episode("e_1", "which port does the api use?", s1, at=1.0),
                  episode("e_2", "8080", s1, at=2.0), derived("m_1", "the api port is 8080",
                                                              ("e_1", "e_2"))], "j_1")
    store.put_memory_vectors("m_1", [unit(1)])
    store.put_share(_grant("sh_1"))
    copy = create_store(tmp_path / "copy.db", dim=DIM, embedder="unit")
    try:
        for table in store.counts():
            if table != "vectors":
                for batch in store.dump_rows(table, batch=2):
                    copy.load_rows(table, batch)
        copy.finish_load()
        assert copy.counts() == store.counts()
        assert copy.rowids(["e_1", "e_2", "m_1"]) == store.rowids(["e_1", "e_2", "m_1"])
        assert copy.get("m_1", ALICE).sources == ["e_1", "e_2"]
        assert copy.shares("default") == store.shares("default")
        # the context of each turn was rebuilt: the answer is found by the question's words
        assert [r for r, _ in copy.fulltext(["port"], s1, ALL, 5)] == \
            [r for r, _ in store.fulltext(["port"], s1, ALL, 5)]
        assert copy.vector(unit(1), ALICE, ALL, 1)[0][0] == rowid(store, "m_1")
    finally:
        copy.close()


# --- the contract covers the protocol -------------------------------------------------------

PROTOCOLS = (MemoryStore, RecallStore, GraphStore, WorkingMemoryStore, JobStore, ApiKeyStore,
             CopyStore, InjectionLog, ShareStore, AuditLog)


def protocol_methods() -> set[str]:
    return {name for p in PROTOCOLS for name, _ in inspect.getmembers(p, inspect.isfunction)
            if not name.startswith("_")}


def test_every_adapter_implements_every_protocol_method(store: Store) -> None:
    missing = {m for m in protocol_methods() if not callable(getattr(store, m, None))}
    assert missing == set()


def test_every_protocol_method_has_a_contract_test() -> None:
    source = Path(__file__).read_text()
    untested = {m for m in protocol_methods() if not re.search(rf"\.{m}\(", source)}
    assert untested == set()
