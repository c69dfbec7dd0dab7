"""The public calls a person steers memory with (the console is built on them): restore,
pin, the edges of a memory, listing by status and as of a time, flagged memories."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Config, Memory, NotFoundError, ValidationError

HASH = Config(embedder="hash")


def test_restore_brings_a_forgotten_memory_back_into_search_and_time(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        item = m.remember("Always use pnpm, never npm", kind="convention", user_id="alice")
        m.flush()
        m.forget(item.id, user_id="alice")
        assert all(h.memory.id != item.id for h in m.search("pnpm npm", user_id="alice"))
        back = m.restore(item.id, user_id="alice")
        assert (back.status, back.valid_to) == ("active", None)
        assert any(h.memory.id == item.id for h in m.search("pnpm npm", user_id="alice"))
        assert [e.action for e in m.history(item.id, user_id="alice")][-2:] == ["forgotten", "restored"]
        with pytest.raises(ValidationError, match="only a forgotten"):
            m.restore(item.id, user_id="alice")
        with pytest.raises(NotFoundError):
            m.restore(item.id, user_id="bob")


def test_pin_and_unpin_are_kept_in_the_history(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        item = m.remember("Releases go out on Tuesdays", kind="convention", user_id="alice")
        assert m.pin(item.id, user_id="alice").pinned
        assert not m.pin(item.id, pinned=False, user_id="alice").pinned
        assert [e.action for e in m.history(item.id, user_id="alice")][-2:] == ["pinned", "unpinned"]
        with pytest.raises(NotFoundError):
            m.pin(item.id, user_id="bob")


def test_a_supersession_is_an_edge_both_ways_and_as_of_lists_what_was_known(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        m.add("We deploy the web app with make ship", timestamp="2026-05-01T10:00:00Z",
              user_id="alice", project="web", session_id="s1")
        m.add("From now on we deploy the web app with fly deploy instead of make ship",
              timestamp="2026-05-20T10:00:00Z", user_id="alice", project="web", session_id="s2")
        m.flush()
        (old,) = m.list(statuses=["superseded"], user_id="alice", project="web")
        (new,) = m.list(user_id="alice", project="web")
        assert "make ship" in old.text and "fly deploy" in new.text
        (link,) = [x for x in m.links(new.id, user_id="alice") if x.type == "supersedes"]
        assert (link.direction, link.memory.id) == ("out", old.id)
        assert [(x.type, x.direction) for x in m.links(old.id, user_id="alice")] == [("supersedes", "in")]
        assert [i.id for i in m.list(as_of="2026-05-10", user_id="alice", project="web")] == [old.id]
        assert [i.id for i in m.list(as_of="2026-05-25", user_id="alice", project="web")] == [new.id]
        with pytest.raises(ValidationError, match="statuses"):
            m.list(statuses=["gone"])
        with pytest.raises(NotFoundError):
            m.links(new.id, user_id="bob")


def test_list_keeps_the_memories_of_one_maturity_subject_or_time(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        tabs = m.remember("Alice prefers tabs", kind="preference", subject="user", user_id="alice")
        ci = m.remember("CI runs on every push", kind="convention", subject="project", user_id="alice")
        m.feedback(ci.id, "helpful", user_id="alice")
        m.feedback(ci.id, "helpful", user_id="alice")
        confirmed = m.get(ci.id, user_id="alice").maturity
        assert confirmed != "candidate"
        assert [i.id for i in m.list(maturity=confirmed, user_id="alice")] == [ci.id]
        assert [i.id for i in m.list(subject="user", user_id="alice")] == [tabs.id]
        assert m.list(until="2000-01-01", user_id="alice") == []
        assert len(m.list(since="2000-01-01", user_id="alice")) == 2
        with pytest.raises(ValidationError, match="maturity"):
            m.list(maturity="ripe")
