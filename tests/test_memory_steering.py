"""The public calls a person steers memory with (the console is built on them): restore,
pin, the edges of a memory, listing by status and as of a time, flagged memories."""

from __future__ import annotations

from datetime import timedelta
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


def test_strength_halves_each_half_life_unused_and_rises_with_use(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        item = m.remember("The staging host is db2.internal", kind="fact", user_id="alice")
        m.flush()
        half_life = m.config.agent.half_life_days["fact"]
        start = m.get(item.id, user_id="alice").updated_at
        fresh = m.strength(item.id, now=start, user_id="alice")
        later = m.strength(item.id, now=start + timedelta(days=half_life), user_id="alice")
        assert later == pytest.approx(fresh / 2)
        m.used([item.id], user_id="alice")
        assert m.strength(item.id, user_id="alice") > fresh  # used: younger and more used
        with pytest.raises(NotFoundError):
            m.strength(item.id, user_id="bob")


def test_around_gives_the_turns_before_and_after_in_the_same_session(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=HASH) as m:
        m.add(["Can you look at the flaky login test?", "The staging database runs on port 5433",
               "Thanks, I will point the test at port 5433."], user_id="alice", session_id="s1")
        m.add("Another session entirely", user_id="alice", session_id="s2")
        m.flush()
        turns = {t.text: t for t in m.list(user_id="alice", include_episodes=True, limit=20)
                 if t.is_episode}
        middle = turns["The staging database runs on port 5433"]
        before, after = m.around(middle.id, user_id="alice")
        assert [t.text for t in before] == ["Can you look at the flaky login test?"]
        assert [t.text for t in after] == ["Thanks, I will point the test at port 5433."]
        first = turns["Can you look at the flaky login test?"]
        before, after = m.around(first.id, window=2, user_id="alice")
        assert before == [] and [t.text for t in after] == [
            "The staging database runs on port 5433", "Thanks, I will point the test at port 5433."]
        assert m.around(turns["Another session entirely"].id, user_id="alice") == ([], [])
        with pytest.raises(ValidationError, match="window"):
            m.around(middle.id, window=-1, user_id="alice")
