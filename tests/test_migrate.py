"""``remem migrate``: a store copied to the other backend and back answers the same,
with every table's rows, and a second run changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from remem import Config, Memory, StoreError
from remem.cli import app
from remem.migrate import migrate

HASH = Config(embedder="hash")
#: one present for every store, so that recency scores the same before and after a move
_NOW = time.time() + 86400
CLOCK = {"clock": lambda: _NOW}
QUERIES = ["how do we deploy?", "which package manager", "部署", "lunch", "redis cache"]


def fill(m: Memory) -> None:
    m.add([{"role": "user", "content": "We deploy with make ship on Fridays"},
           {"role": "assistant", "content": "Noted: make ship, Fridays only"}],
          user_id="alice", session_id="s1", project="web")
    m.add("I prefer pnpm over npm", user_id="alice", project="web", session_id="s2")
    m.add("我们用 make ship 部署", user_id="bob", session_id="s3")
    m.add("lunch is at noon", user_id="alice")
    m.remember("The redis cache keeps keys for an hour", kind="fact", user_id="alice")
    gone = m.add("an old phone number 555-0100", user_id="alice").episode_ids[0]
    assert m.flush(timeout=60)
    m.forget(gone, reason="obsolete", user_id="alice")
    m.used([h.memory.id for h in m.search("deploy", user_id="alice", k=2)], user_id="alice")


def answers(m: Memory) -> list[list[tuple[str, tuple[str, ...]]]]:
    return [[(h.memory.id, tuple(sorted(h.channels))) for h in m.search(q, user_id=u, k=10)]
            for q in QUERIES for u in ("alice", "bob")]


def test_a_store_goes_to_postgresql_and_back_and_answers_the_same(tmp_path: Path, pg_url: str) -> None:
    source = tmp_path / "source.db"
    with Memory(source, config=HASH, **CLOCK) as m:
        fill(m)
        before, stats, listed = answers(m), m.stats(), m.list(user_id="alice", include_inactive=True)

    report = migrate(source, pg_url)
    assert report.counts["memories"] == stats.episodes + stats.memories
    assert report.counts["vectors"] == stats.vectors > 0
    assert migrate(source, pg_url).counts == report.counts  # a second run copies nothing twice

    with Memory(pg_url, config=HASH, **CLOCK) as m:
        assert m.stats().model_dump(exclude={"path", "size_bytes", "schema_version"}) == \
            stats.model_dump(exclude={"path", "size_bytes", "schema_version"})
        assert [i.id for i in m.list(user_id="alice", include_inactive=True)] == [i.id for i in listed]
        on_pg = answers(m)
    # the same hits found the same ways; the order of near-equal scores may differ, as the
    # two backends round the last bits of a cosine differently
    assert [sorted(hits) for hits in on_pg] == [sorted(hits) for hits in before]
    def ranked(runs: list[list[tuple[str, tuple[str, ...]]]]) -> list[list[tuple[str, tuple[str, ...]]]]:
        return [[h for h in hits if h[1] != ("vector",)] for hits in runs]

    assert ranked(on_pg) == ranked(before)  # what more than a vector found ranks the same

    back = tmp_path / "back.db"
    migrate(pg_url, f"sqlite:///{back}")
    with Memory(back, config=HASH, **CLOCK) as m:
        again = answers(m)
    assert [sorted(hits) for hits in again] == [sorted(hits) for hits in before]
    assert ranked(again) == ranked(before)

    with Memory(pg_url, config=HASH, **CLOCK) as m:
        m.add("a turn written after the move", user_id="alice")  # new rows get new ids
        assert m.flush(timeout=30)
        assert m.search("written after the move", user_id="alice", k=1)[0].memory.text.lower() == \
            "a turn written after the move"


def test_what_cannot_be_migrated_is_refused(tmp_path: Path, pg_url: str) -> None:
    with pytest.raises(StoreError, match="holds no remem store"):
        migrate(tmp_path / "missing.db", pg_url)
    assert not (tmp_path / "missing.db").exists()
    with Memory(tmp_path / "a.db", config=HASH, **CLOCK) as m:
        m.add("hello", user_id="alice")
    with Memory(pg_url, config=Config(embedder="hash", agent={"extractor": "off"})) as m:
        m.add("another store's data", user_id="bob")
    with pytest.raises(StoreError, match="already holds memories that are not in the source"):
        migrate(tmp_path / "a.db", pg_url)


def test_the_command_reports_what_it_copied(tmp_path: Path, pg_url: str) -> None:
    with Memory(tmp_path / "a.db", config=Config(embedder="hash", agent={"extractor": "off"})) as m:
        m.add("we deploy with make ship", user_id="alice")
        assert m.flush(timeout=30)
    result = CliRunner().invoke(app, ["migrate", "--from", str(tmp_path / "a.db"), "--to", pg_url])
    assert result.exit_code == 0, result.output
    assert "copied and verified: 1 memories and episodes, 1 vectors" in result.output
    bad = CliRunner().invoke(app, ["migrate", "--from", str(tmp_path / "a.db"), "--to", "mysql://x/y"])
    assert bad.exit_code == 1 and "unknown store URL scheme 'mysql'" in bad.output


def test_the_round_trip_bench_finds_every_answer_unchanged(tmp_path: Path, pg_url: str) -> None:
    import json

    from test_bench_metrics import locomo_sample

    from remem.bench.locomo import load

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(locomo_sample()))
    result = CliRunner().invoke(app, ["bench", "migrate", "--data", str(data), "--pg", pg_url,
                                      "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["questions"] == sum(len(c.questions) for c in load(data)) > 0
    assert figures["rows_copied"]["memories"] > 0
    assert figures["identical_after_round_trip"] == 1.0
    assert figures["differences_after_round_trip"] == []
