"""Deletion that propagates: a purged memory leaves no byte behind, a forgotten one no
reachable word."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from remem import Config, Memory
from remem.model import Scope

WORD = "zanzibarquux"
WHERE = {"user_id": "alice", "project": "web"}


def store_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
                    if p.exists()).lower()


def topic_words(m: Memory) -> str:
    """Every label and keyword of the scope's topics, as stored."""
    topics = m.store.topics(Scope(org_id="default", **WHERE), exact=False)
    return " ".join(w for t in topics for w in (t.label, *t.keywords))


def seeded(m: Memory) -> str:
    """A session where a remembered memory is surrounded by turns, shown to a model,
    prefetched into working memory and placed in the mind map; returns its id."""
    m.add("hello, about the billing jobs", session_id="s1", **WHERE)
    item = m.remember(f"The {WORD} cron moves billing to 03:00 on Sundays", kind="convention",
                      session_id="s1", **WHERE)
    m.add("and the invoices are mailed after billing", session_id="s1", **WHERE)
    assert m.flush(timeout=120)
    m.context(session_id="s1", query=f"{WORD} cron", log=True, **WHERE)
    m.prefetch(session_id="s1", **WHERE)
    assert WORD in topic_words(m)
    assert any(WORD in (i.text or "") for i in m.injections(**WHERE))
    assert WORD in " ".join(r for (r,) in m.store.conn.execute(
        "SELECT reason FROM working_memory WHERE reason IS NOT NULL"))
    return item.id


def reachable(m: Memory) -> list[str]:
    """Where the word can still be read through the API."""
    found = []
    for hit in m.search(WORD, include_episodes=True, **WHERE):
        if WORD in hit.memory.text:
            found.append(f"search:{hit.memory.id}")
        if "fulltext" in hit.channels:
            found.append(f"fulltext:{hit.memory.id}")
    if WORD in m.context(session_id="s1", query=f"{WORD} cron", **WHERE).text:
        found.append("context")
    if WORD in topic_words(m):
        found.append("topics")
    return found


def test_a_purge_leaves_no_byte_of_the_memory_in_the_file_or_the_wal(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, config=Config(embedder="hash")) as m:
        memory_id = seeded(m)
        assert WORD.encode() in store_bytes(db)
        purged = m.purge(memory_id, **WHERE)
        assert memory_id in purged and any(i.startswith("e_") for i in purged)  # the episode too
        assert reachable(m) == []
        assert m.stats().episodes == 2  # the turns around it stay
        m.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert WORD.encode() not in store_bytes(db)
    assert WORD.encode() not in store_bytes(db)
    with sqlite3.connect(db) as conn:  # and the file is still a sound database
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_forget_takes_the_episode_remember_wrote_and_the_topic_words_with_it(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        memory_id = seeded(m)
        m.forget(memory_id, **WHERE)
        assert reachable(m) == []
        m.restore(memory_id, **WHERE)  # forgetting is soft: the memory comes back
        assert m.get(memory_id, **WHERE).status == "active"


def test_purging_the_turn_takes_what_was_derived_from_it_out_of_the_topics(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        memory_id = seeded(m)
        episode = m.get(memory_id, **WHERE).sources[0]
        assert set(m.purge(episode, **WHERE)) >= {episode, memory_id}
        assert reachable(m) == []
