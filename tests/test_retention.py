"""The retention policy: old turns compacted for good while their memories stay, old
memories archived or purged, per kind and per scope; pinned ones and the walls kept."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from remem import Config, ConfigError, Memory
from remem.cli import app
from remem.config import RetentionRule
from remem.model import new_id

pytestmark = pytest.mark.backends

WORD = "zanzibarquux"
DAY = 86400.0


def policy(*rules: dict[str, Any], **config: Any) -> Config:
    return Config(embedder="hash", retention={"rules": list(rules)}, **config)


def later(days: float = 365.0) -> datetime:
    """A present far enough ahead for everything stored so far to be old."""
    return datetime.fromtimestamp(time.time() + days * DAY, timezone.utc)


def store_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
                    if p.exists()).lower()


def test_compacted_turns_leave_no_byte_in_the_file_or_the_wal_and_their_memories_stay(
        tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    rule = {"items": "episodes", "older_than_days": 30, "action": "compact"}
    with Memory(db, config=policy(rule)) as m:
        # a question that becomes no memory, and a wish that becomes one
        old = m.add([{"role": "user", "content": f"what does {WORD} mean?"},
                     {"role": "user", "content": "I prefer tabs over spaces in Go code"}],
                    user_id="alice", session_id="s1")
        assert m.flush(timeout=120)
        cutoff = time.time()
        new = m.add("and the invoices go out on mondays", user_id="alice", session_id="s1")
        assert m.flush(timeout=120)
        m.context(user_id="alice", session_id="s1", query=f"what does {WORD} mean", log=True)
        derived = [i for i in m.list(user_id="alice") if set(old.episode_ids) & set(i.sources)]
        assert all(i.sources == [old.episode_ids[1]] for i in derived)
        assert derived and WORD.encode() in store_bytes(db)

        done = m.apply_retention(now=datetime.fromtimestamp(cutoff + 30 * DAY, timezone.utc))
        assert done.compacted == old.episode_ids and set(done.noted) == {i.id for i in derived}
        assert [i.id for i in m.list(user_id="alice", include_episodes=True, kinds=["episode"])] \
            == new.episode_ids  # the newer turn stays
        for memory in derived:  # the memories stay, and say that their sources went
            kept = m.get(memory.id, user_id="alice")
            assert kept.text == memory.text and kept.status == "active" and kept.sources == []
            note = m.history(memory.id, user_id="alice")[-1]
            assert note.action == "sources_compacted" and old.episode_ids[1] in (note.reason or "")
        assert not [h for h in m.search(f"what does {WORD} mean", user_id="alice")
                    if WORD in h.memory.text]
        assert all(i.text is None for i in m.injections(user_id="alice"))
        m.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw = store_bytes(db)
        assert WORD.encode() not in raw
        assert b"i prefer tabs over spaces in go code" not in raw
    assert WORD.encode() not in store_bytes(db)
    with sqlite3.connect(db) as conn:  # and the file is still a sound database
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_archive_and_purge_per_kind_and_scope_keep_pins_and_walls(
        open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=policy(
        {"items": "fact", "user_id": "alice", "older_than_days": 10, "action": "archive"},
        {"items": "convention", "project": "web", "older_than_days": 10, "action": "purge"}))
    fact = m.remember("The office plant is a ficus", user_id="alice")
    pinned = m.remember("The wifi password rotates monthly", user_id="alice", pinned=True)
    bobs = m.remember("The office plant is a cactus", user_id="bob")
    web = m.remember("Deploys go through make ship", kind="convention", user_id="alice",
                     project="web")
    api = m.remember("Deploys go through the api pipeline", kind="convention", user_id="alice",
                     project="api")
    assert m.flush(timeout=60)

    assert m.apply_retention(now=later(5)).model_dump(include={"archived", "purged"}) == {
        "archived": [], "purged": []}  # nothing is old enough yet
    preview = m.apply_retention(now=later(), dry_run=True)
    assert (preview.archived, preview.purged) == ([fact.id], [web.id])
    assert m.get(fact.id, user_id="alice").status == "active"  # a dry run changes nothing

    done = m.apply_retention(now=later())
    assert done.archived == [fact.id]
    assert web.id in done.purged and web.sources[0] in done.purged  # with the turn it came from
    assert m.get(fact.id, user_id="alice").status == "archived"
    assert m.get(pinned.id, user_id="alice").status == "active"
    assert m.get(bobs.id, user_id="bob").status == "active"
    assert m.get(api.id, user_id="alice", project="api").status == "active"
    assert web.id not in {i.id for i in m.export(user_id="alice", project="web")}
    audit = {(e.action, e.target, e.user_id) for e in m.audit(user_id="alice", door="retention")}
    assert ("retention archive", fact.id, "alice") in audit
    assert ("retention purge", web.id, "alice") in audit
    assert m.apply_retention(now=later()).archived == []  # done once


def test_a_purge_that_would_take_a_pinned_memory_with_it_is_left_undone(
        open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=policy({"items": "procedure", "older_than_days": 1, "action": "purge"},
                                  agent={"extractor": "off"}))
    steps = m.remember("To release: tag, build, push the image", kind="procedure", user_id="alice")
    rule = m.remember("Releases follow the tag-build-push steps", kind="convention",
                      user_id="alice", pinned=True)
    m.store.link([(rule.id, steps.id, "derived_from", 1.0)])
    assert m.apply_retention(now=later(), dry_run=True).purged == [steps.id]
    assert m.apply_retention(now=later()).purged == []
    assert m.get(steps.id, user_id="alice").status == "active"
    assert m.get(rule.id, user_id="alice").pinned
    m.pin(rule.id, pinned=False, user_id="alice")
    assert set(m.apply_retention(now=later()).purged) >= {steps.id, rule.id}


def test_a_run_confined_to_one_user_reaches_no_other(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=policy({"items": "memories", "older_than_days": 1, "action": "archive"}))
    alice = m.remember("Alice takes the early train", user_id="alice")
    bob = m.remember("Bob takes the late train", user_id="bob")
    assert m.apply_retention(now=later(), user_id="bob").archived == [bob.id]
    assert m.get(alice.id, user_id="alice").status == "active"
    alices = policy({"items": "memories", "user_id": "alice", "older_than_days": 1,
                     "action": "archive"})
    other = open_memory(config=alices)
    assert other.apply_retention(now=later(), user_id="bob").archived == []


def test_the_policy_runs_as_a_scheduled_job(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=policy({"items": "episodes", "older_than_days": 1, "action": "compact"},
                                  agent={"extractor": "off"}))
    assert "retention" in [t.name for t in m.triggers.rules]
    turn = m.add("a turn to compact", user_id="alice").episode_ids[0]
    assert m.flush(timeout=60)
    job = new_id("j_")
    m.store.enqueue("retention", {"now": later().timestamp()}, job_id=job)
    assert m.wait([job], timeout=60)
    assert m.job(job).result == {"compacted": 1, "noted": 0, "archived": 0, "purged": 0}
    assert m.store.items_by_id([turn]) == []
    assert [e.target for e in m.audit(door="retention")] == [turn]
    quiet = open_memory(config=Config(embedder="hash"))
    assert "retention" not in [t.name for t in quiet.triggers.rules]  # off by default
    assert quiet.apply_retention(now=later()).model_dump(exclude={"at"}) == {
        "dry_run": False, "compacted": [], "noted": [], "archived": [], "purged": []}


def test_rules_are_checked_when_the_config_is_made() -> None:
    with pytest.raises(ValueError, match="episodes are compacted"):
        RetentionRule(items="episodes", older_than_days=3, action="purge")
    with pytest.raises(ValueError, match="episodes are compacted"):
        RetentionRule(items="fact", older_than_days=3, action="compact")
    with pytest.raises(ValueError, match="unknown items 'turns'"):
        RetentionRule(items="turns", older_than_days=3, action="compact")
    with pytest.raises(ValueError):
        RetentionRule(items="fact", older_than_days=0, action="archive")
    rules = [{"items": "event", "older_than_days": 30, "action": "archive"}]
    env = Config.from_env({"REMEM_RETENTION": json.dumps(rules)})
    assert env.retention.rules[0].items == "event" and env.retention.every_s == 86400.0
    assert Config.from_env({"REMEM_RETENTION": json.dumps({"rules": rules, "every_s": None})}
                           ).retention.every_s is None
    with pytest.raises(ConfigError, match="REMEM_RETENTION is not JSON"):
        Config.from_env({"REMEM_RETENTION": "episodes:30d"})


def test_remem_retention_previews_and_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    assert runner.invoke(app, ["add", "an old turn", "--user", "alice", "--db", db]).exit_code == 0
    empty = runner.invoke(app, ["retention", "--db", db])
    assert empty.exit_code == 0 and "no retention rules" in empty.output
    monkeypatch.setenv("REMEM_RETENTION", json.dumps(
        [{"items": "episodes", "older_than_days": 7, "action": "compact"}]))
    future = later().isoformat()
    preview = runner.invoke(app, ["retention", "--dry-run", "--now", future, "--db", db])
    assert preview.exit_code == 0, preview.output
    assert preview.output.splitlines()[0] == "would compact 1 episodes"
    done = runner.invoke(app, ["retention", "--now", future, "--json", "--db", db])
    assert done.exit_code == 0, done.output
    assert len(json.loads(done.output)["compacted"]) == 1
    with Memory(db, config=Config(embedder="hash")) as m:
        assert m.stats().episodes == 0
        assert {e.action for e in m.audit()} >= {"remem retention", "retention compact"}
