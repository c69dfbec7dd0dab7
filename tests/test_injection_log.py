"""The injection log: what was handed to a model, inside the scope walls, bounded by its
retention, with the heed rate from the later use of what was given. (Each door's own
record is checked with that door: tests/test_hooks.py, test_mcp.py, test_server_proxy.py.)"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from server_support import service
from typer.testing import CliRunner

from remem import Config, Memory, ValidationError
from remem.cli import app
from remem.model import Scope
from remem.retrieve.context import context_line
from remem.serve.keys import KeyStore

pytestmark = pytest.mark.backends

HASH = Config(embedder="hash")
runner = CliRunner()


def seed(m: Memory) -> dict[str, str]:
    """Alice's conventions and a pitfall in project web, and one of bob's."""
    ids = {
        "pnpm": m.remember("Always use pnpm, never npm", kind="convention", user_id="alice",
                           project="web").id,
        "tabs": m.remember("Indent with tabs in the Makefile", kind="convention", user_id="alice",
                           project="web").id,
        "vite": m.remember("vite build fails on node 16: use node 20", kind="pitfall",
                           user_id="alice", project="web").id,
        "bob": m.remember("Bob deploys with fly deploy", kind="convention", user_id="bob",
                          project="web").id,
    }
    m.flush()
    return ids


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_a_logged_context_records_exactly_the_memories_of_its_text_in_order(store_target: str | Path) -> None:
    with Memory(store_target, config=HASH) as m:
        seed(m)
        ctx = m.context(user_id="alice", project="web", session_id="s1", query="which build tool?",
                        log=True)
        (entry,) = m.injections(user_id="alice")
        given = [m.get(i.memory_id, user_id="alice", project="web") for i in entry.items]
        asked = Scope(user_id="alice", project="web", session_id="s1")
        assert [context_line(g, asked) for g in given] == lines_of(ctx.text)
        assert len(given) >= 3
        assert "Bob" not in " ".join(g.text for g in given)
        assert (entry.door, entry.session_id, entry.project, entry.query) == (
            "context", "s1", "web", "which build tool?")
        assert (entry.tokens, entry.text) == (ctx.tokens, ctx.text)
        assert [i.rank for i in entry.items] == list(range(1, len(entry.items) + 1))
        assert {i.section for i in entry.items} <= {"core", "working", "recall"}
        # not asked to log: nothing recorded
        m.context(user_id="alice", project="web", query="which build tool?")
        assert len(m.injections(user_id="alice")) == 1


def test_use_and_helpful_feedback_mark_what_was_given_and_make_the_heed_rate(
        store_target: str | Path) -> None:
    with Memory(store_target, config=HASH) as m:
        ids = seed(m)
        given = [(ids["pnpm"], "core", []), (ids["tabs"], "core", []),
                 (ids["vite"], "recall", ["fulltext", "vector"])]
        m.log_injection(door="hook:SessionStart", given=given, tokens=40, user_id="alice",
                        project="web", session_id="s1")
        m.log_injection(door="mcp:memory_recall", given=given[2:], tokens=12, query="vite",
                        user_id="alice", project="web")
        m.used([ids["pnpm"]], user_id="alice", project="web")
        m.feedback(ids["vite"], "helpful", user_id="alice", project="web")

        newest, first = m.injections(user_id="alice")
        assert newest.door == "mcp:memory_recall" and newest.items[0].used  # the latest that gave it
        assert [(i.memory_id, i.used) for i in first.items] == [
            (ids["pnpm"], True), (ids["tabs"], False), (ids["vite"], False)]
        assert first.items[2].channels == ["fulltext", "vector"]
        rates = {(r.door, r.kind): (r.used, r.injected) for r in m.heed(user_id="alice")}
        assert rates == {("hook:SessionStart", "convention"): (1, 2),
                         ("hook:SessionStart", "pitfall"): (0, 1),
                         ("mcp:memory_recall", "pitfall"): (1, 1)}
        assert m.heed(user_id="bob") == []


def test_log_reads_stay_inside_the_scope_walls(store_target: str | Path) -> None:
    with Memory(store_target, config=HASH) as m:
        ids = seed(m)
        m.remember("Acme ships on Fridays", kind="convention", org_id="acme", user_id="carol")
        m.log_injection(door="context", given=[(ids["pnpm"], "core", [])], tokens=5,
                        user_id="alice", project="web", session_id="a1")
        m.log_injection(door="context", given=[(ids["bob"], "core", [])], tokens=5,
                        user_id="bob", project="web", session_id="b1")
        # an item naming a memory of another org is not recorded in this one
        m.log_injection(door="proxy", given=[(ids["pnpm"], "core", [])], tokens=5,
                        org_id="acme", user_id="carol")
        assert [i.session_id for i in m.injections(user_id="alice")] == ["a1"]
        assert [i.session_id for i in m.injections(user_id="bob")] == ["b1"]
        assert [i.session_id for i in m.injections(session_id="b1")] == ["b1"]
        assert m.injections(user_id="alice", session_id="b1") == []
        assert len(m.injections()) == 2  # the default org: alice's and bob's
        (acme,) = m.injections(org_id="acme")
        assert acme.items == []
        assert m.injected(ids["pnpm"], user_id="alice")[0].session_id == "a1"
        assert m.injected(ids["pnpm"], user_id="bob") == []


def test_retention_drops_old_and_surplus_entries_when_one_is_written(store_target: str | Path) -> None:
    config = HASH.model_copy(update={"injection_log_days": 30.0, "injection_log_rows": 3})
    start = datetime(2026, 5, 1, tzinfo=timezone.utc)
    with Memory(store_target, config=config) as m:
        ids = seed(m)
        for day in (0, 10, 20):
            m.log_injection(door="context", given=[(ids["pnpm"], "core", [])], tokens=5,
                            user_id="alice", session_id=f"d{day}", at=start + timedelta(days=day))
        assert [i.session_id for i in m.injections()] == ["d20", "d10", "d0"]
        m.log_injection(door="context", given=[(ids["pnpm"], "core", [])], tokens=5,
                        user_id="alice", session_id="d35", at=start + timedelta(days=35))
        assert [i.session_id for i in m.injections()] == ["d35", "d20", "d10"]  # d0: 35 days old
        m.log_injection(door="context", given=[(ids["pnpm"], "core", [])], tokens=5,
                        user_id="alice", session_id="d36", at=start + timedelta(days=36))
        assert [i.session_id for i in m.injections()] == ["d36", "d35", "d20"]  # at most 3 rows


def test_a_purged_memory_leaves_the_log_and_pages_follow_the_cursor(store_target: str | Path) -> None:
    with Memory(store_target, config=HASH) as m:
        ids = seed(m)
        for n in range(5):
            m.log_injection(door="context", given=[(ids["pnpm"], "core", []), (ids["tabs"], "core", [])],
                            tokens=9, user_id="alice", session_id=f"s{n}")
        first = m.injections(user_id="alice", limit=3)
        rest = m.injections(user_id="alice", limit=3, cursor=first.next_cursor)
        assert [i.session_id for i in [*first, *rest]] == ["s4", "s3", "s2", "s1", "s0"]
        assert rest.next_cursor is None
        m.purge(ids["tabs"], user_id="alice", project="web")
        assert all([i.memory_id for i in e.items] == [ids["pnpm"]] for e in m.injections())
        with pytest.raises(ValidationError, match="door"):
            m.log_injection(door="a door\nwith a newline", given=[], tokens=1)
        with pytest.raises(ValidationError, match="cursor"):
            m.injections(cursor="x1")


def test_remem_log_lists_filters_and_gives_the_heed_rate(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    db = tmp_path / "m.db"
    with Memory(db, config=HASH) as m:
        ids = seed(m)
        m.log_injection(door="hook:SessionStart", given=[(ids["pnpm"], "core", [])], tokens=5,
                        user_id="alice", project="web", session_id="s1")
        m.log_injection(door="proxy", given=[(ids["bob"], "core", [])], tokens=5,
                        user_id="bob", project="web", session_id="s2")
        m.used([ids["pnpm"]], user_id="alice", project="web")
    out = runner.invoke(app, ["log", "--db", str(db), "--session", "s1", "--json"])
    assert out.exit_code == 0, out.output
    (entry,) = json.loads(out.output)["injections"]
    assert entry["door"] == "hook:SessionStart"
    assert entry["items"][0] | {"memory_id": ids["pnpm"], "used": True} == entry["items"][0]
    shown = runner.invoke(app, ["log", "--db", str(db), "--user", "bob"])
    assert shown.exit_code == 0 and "proxy" in shown.output and "SessionStart" not in shown.output
    stats = runner.invoke(app, ["log", "--db", str(db), "--stats", "--json"])
    rates = {(r["door"], r["kind"]): r["rate"] for r in json.loads(stats.output)}
    assert rates == {("hook:SessionStart", "convention"): 1.0, ("proxy", "convention"): 0.0}
    table = runner.invoke(app, ["log", "--db", str(db), "--stats"])
    assert "100% (1/1)" in table.output and "0% (0/1)" in table.output


def test_the_rest_route_keeps_a_key_to_its_user(store_target: str | Path) -> None:
    with service(store_target) as (memory, client):
        ids = seed(memory)
        for user, memory_id in (("alice", ids["pnpm"]), ("bob", ids["bob"])):
            memory.log_injection(door="proxy", given=[(memory_id, "core", [])], tokens=5,
                                 user_id=user, project="web", session_id=f"{user}-1")
        assert {i["user_id"] for i in client.get("/v1/injections").json()["items"]} == {"alice", "bob"}
        key = KeyStore(memory.store).create("default", user_id="alice", scopes=["read"]).key
        auth = {"Authorization": f"Bearer {key}"}
        page = client.get("/v1/injections", headers=auth).json()
        assert [i["session_id"] for i in page["items"]] == ["alice-1"]
        assert client.get("/v1/injections", params={"user_id": "bob"},
                          headers=auth).status_code == 403
        stats = client.get("/v1/injections/stats", headers=auth).json()["rates"]
        assert stats == [{"door": "proxy", "kind": "convention", "injected": 1, "used": 0,
                          "rate": 0.0}]
        assert client.get("/v1/injections").status_code == 401


def test_the_async_memory_reads_and_writes_the_log_too(tmp_path: Path) -> None:
    import asyncio

    from remem import AsyncMemory

    async def run() -> list[str]:
        async with AsyncMemory(tmp_path / "m.db", config=HASH) as m:
            item = await m.remember("Always use pnpm, never npm", kind="convention", user_id="alice")
            await m.log_injection(door="context", given=[(item.id, "core", [])], tokens=5,
                                  user_id="alice")
            await m.used([item.id], user_id="alice")
            rates = await m.heed(user_id="alice")
            assert [(r.used, r.injected) for r in rates] == [(1, 1)]
            return [i.memory_id for e in await m.injections(user_id="alice") for i in e.items]

    assert len(asyncio.run(run())) == 1
