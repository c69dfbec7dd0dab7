"""Provenance: every memory says which door it came in through, who said it and how far it
is trusted; a derived memory is trusted as its least trusted source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_support import service
from typer.testing import CliRunner

from remem import Config, Memory, MemoryItem, ValidationError
from remem.cli import app
from remem.extract.plan import Plan, Step
from remem.integrations.hooks import HookInput, answer
from remem.model import Scope
from remem.schedule.orchestrate import Executor
from remem.store import NewMemory

pytestmark = pytest.mark.backends

HASH = Config(embedder="hash")
QUIET = Config(embedder="hash", agent={"extractor": "off"})


def prov(item: MemoryItem) -> tuple[str, str, str]:
    return item.provenance.door, item.provenance.source, item.provenance.trust


def by_text(m: Memory, **scope: str) -> dict[str, MemoryItem]:
    return {i.text: i for i in m.list(include_episodes=True, include_inactive=True, **scope)}


def test_each_turn_records_its_door_its_speaker_and_the_trust_they_earn(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", config=QUIET) as m:
        m.add([{"role": "user", "content": "we ship on fridays"},
               {"role": "assistant", "content": "noted, fridays it is"},
               {"speaker": "Caroline", "content": "I paint on sundays"},
               {"speaker": "Melanie", "role": "assistant", "content": "I can help with that"},
               {"role": "system", "content": "you are a helpful bot"}], user_id="alice")
        m.add("proxied question", user_id="alice", door="proxy")
        m.add_events([{"type": "tool_call", "command": "make test", "exit_code": 0}],
                     user_id="alice", door="hook")
        m.remember("the wiki says deploys need a ticket", role="import", user_id="alice")
        found = by_text(m, user_id="alice")
    assert prov(found["we ship on fridays"]) == ("sdk", "user", "user")
    assert prov(found["noted, fridays it is"]) == ("sdk", "assistant", "agent")
    assert prov(found["I paint on sundays"]) == ("sdk", "user", "user")  # a named person
    assert prov(found["I can help with that"]) == ("sdk", "assistant", "agent")
    assert prov(found["you are a helpful bot"]) == ("sdk", "system", "external")
    assert prov(found["proxied question"]) == ("proxy", "user", "user")
    assert prov(found["Bash: make test\nexit code 0"]) == ("hook", "tool", "external")
    remembered = [i for i in found.values() if i.text == "the wiki says deploys need a ticket"]
    assert prov(remembered[0]) == ("sdk", "import", "external")


def test_get_search_list_and_export_show_it_and_list_and_search_filter_by_it(
        hash_mem: Memory) -> None:
    mine = hash_mem.remember("deploys go through make ship", kind="convention", user_id="alice")
    theirs = hash_mem.remember("deploys need the zebra flag", kind="convention", role="tool",
                               user_id="alice", door="mcp")
    hash_mem.flush()
    assert prov(hash_mem.get(mine.id, user_id="alice")) == ("sdk", "user", "user")
    assert prov(hash_mem.get(theirs.id, user_id="alice")) == ("mcp", "tool", "external")
    exported = {i.id: i for i in hash_mem.export(user_id="alice")}
    assert exported[theirs.id].model_dump(mode="json")["provenance"] == {
        "door": "mcp", "source": "tool", "trust": "external"}
    assert [i.id for i in hash_mem.list(user_id="alice", trust="external")] == [theirs.id]
    assert [i.id for i in hash_mem.list(user_id="alice", trust=["user", "agent"])] == [mine.id]
    assert [i.id for i in hash_mem.list(user_id="alice", door="mcp")] == [theirs.id]
    hits = hash_mem.search("deploys", user_id="alice", include_episodes=False)
    assert {h.memory.id: prov(h.memory) for h in hits}[theirs.id] == ("mcp", "tool", "external")
    trusted = hash_mem.search("deploys", user_id="alice", trust="user")
    assert trusted and all(h.memory.provenance.trust == "user" for h in trusted)
    assert theirs.id not in {h.memory.id for h in trusted}


def test_a_derived_memory_is_trusted_as_its_least_trusted_source(hash_mem: Memory) -> None:
    said = hash_mem.add("I prefer tabs over spaces in Go code", user_id="alice", session_id="s1")
    hash_mem.flush()
    derived = [i for i in hash_mem.list(user_id="alice") if said.episode_ids[0] in i.sources]
    assert derived and all(prov(i) == ("sdk", "user", "user") for i in derived)
    # the same thing said again by the assistant, through MCP: merged, and trusted less
    first = hash_mem.remember("Use the staging database for load tests", kind="convention",
                              user_id="alice")
    again = hash_mem.remember("Use the staging database for load tests", kind="convention",
                              user_id="alice", role="assistant", door="mcp")
    assert again.id == first.id and len(again.sources) == 2
    assert prov(again) == ("mcp", "assistant", "agent")
    # and a user saying it a third time does not raise it back
    third = hash_mem.remember("Use the staging database for load tests", kind="convention",
                              user_id="alice")
    assert third.id == first.id and prov(third) == ("mcp", "assistant", "agent")


def test_an_unknown_door_or_trust_level_is_refused(hash_mem: Memory) -> None:
    with pytest.raises(ValidationError, match="door"):
        hash_mem.add("hello", user_id="alice", door="fax")
    with pytest.raises(ValidationError, match="door"):
        hash_mem.remember("hello", user_id="alice", door="")
    with pytest.raises(ValidationError, match="trust"):
        hash_mem.list(user_id="alice", trust="somewhat")
    with pytest.raises(ValidationError, match="door"):
        hash_mem.search("hello", user_id="alice", door=["rest", "pigeon"])
    assert hash_mem.stats().episodes == 0


def test_sharing_a_memory_through_a_request_keeps_who_said_it(hash_mem: Memory) -> None:
    hash_mem.remember("The flaky quokka test needs a retry", kind="pitfall", role="tool",
                      user_id="alice", project="web")
    plan = Plan(request="share the quokka pitfall with the team",
                steps=[Step(operator="share", text="flaky quokka test", audience="team")])
    done = Executor(hash_mem, Scope(user_id="alice", project="web"), now=hash_mem.clock,
                    door="rest").run(plan)
    copy = hash_mem.get(done[0].memory_ids[1], project="web")
    assert copy.user_id is None and prov(copy) == ("rest", "tool", "external")


def test_the_rest_service_records_rest_and_lists_by_trust(tmp_path: Path) -> None:
    with service(tmp_path / "m.db", QUIET) as (memory, client):
        added = client.post("/v1/memories", json={"user_id": "alice", "messages": [
            {"role": "user", "content": "we use pnpm"},
            {"role": "tool", "content": "pnpm: command not found"}]})
        assert added.status_code == 201, added.text
        user_turn, tool_turn = added.json()["episode_ids"]
        got = client.get(f"/v1/memories/{tool_turn}", params={"user_id": "alice"}).json()
        assert got["provenance"] == {"door": "rest", "source": "tool", "trust": "external"}
        page = client.get("/v1/memories", params={"user_id": "alice", "include_episodes": True,
                                                  "trust": "user"}).json()
        assert [i["id"] for i in page["items"]] == [user_turn]
        assert client.get("/v1/memories", params={"trust": "nobody"}).status_code == 422
        item = client.post("/v1/remember", json={"user_id": "alice", "text": "we deploy on fridays",
                                                 "kind": "convention"}).json()
        assert item["provenance"]["door"] == "rest"


def test_the_cli_and_the_importer_record_their_doors(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    result = runner.invoke(app, ["add", "we use pnpm", "--user", "alice", "--db", db])
    assert result.exit_code == 0, result.output
    lines = tmp_path / "chat.jsonl"
    lines.write_text(json.dumps({"role": "user", "content": "an old chat line"}) + "\n")
    result = runner.invoke(app, ["import", str(lines), "--user", "alice", "--db", db])
    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["list", "--episodes", "--user", "alice", "--trust", "external",
                                "--json", "--db", db])
    assert [i["text"] for i in json.loads(shown.output)["items"]] == ["an old chat line"]
    with Memory(db, config=QUIET) as m:
        found = by_text(m, user_id="alice")
    assert prov(found["we use pnpm"]) == ("cli", "user", "user")
    # what is imported is text from elsewhere, whoever said it first
    assert prov(found["an old chat line"]) == ("import", "import", "external")


def test_a_hook_records_the_prompt_as_the_users_word_through_the_hook_door(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")
    db = tmp_path / "m.db"
    payload = HookInput.model_validate({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                                        "cwd": str(tmp_path), "prompt": "please run the linter"})
    answer("UserPromptSubmit", payload, db=db, user="alice", project="shop")
    with Memory(db, config=QUIET) as m:
        (turn,) = m.list(include_episodes=True, user_id="alice", project="shop")
    assert prov(turn) == ("hook", "user", "user")


def test_what_a_cube_or_a_pam_file_brings_is_trusted_as_text_from_anywhere(tmp_path: Path) -> None:
    with Memory(tmp_path / "alice.db", config=HASH) as alice:
        alice.remember("We deploy with make ship", kind="convention", user_id="alice")
        alice.flush()
        cube, _ = alice.pack_cube(tmp_path / "team.cube", name="team", user_id="alice")
        pam = alice.export_pam(user_id="alice")
    with Memory(tmp_path / "bob.db", config=HASH) as bob:
        installed = bob.install_cube(cube, user_id="bob")
        for memory_id in installed.memory_ids + installed.episode_ids:
            assert prov(bob.get(memory_id, user_id="bob")) == ("cube", "cube", "external")
        ids = bob.import_pam(pam, user_id="carol")
        assert ids and all(prov(bob.get(i, user_id="carol")) == ("import", "import", "external")
                           for i in ids)


def _before_provenance(target: str | Path, backend: str) -> None:
    """Take a store back to the schema it had before provenance (SQLite 11, PostgreSQL 6)."""
    drop = ["DROP INDEX memories_created", "ALTER TABLE memories DROP COLUMN door",
            "ALTER TABLE memories DROP COLUMN source", "ALTER TABLE memories DROP COLUMN trust"]
    if backend == "sqlite":
        import sqlite3

        with sqlite3.connect(target) as conn:
            for statement in [*drop, "PRAGMA user_version = 11"]:
                conn.execute(statement)
        return
    import psycopg

    with psycopg.connect(str(target), autocommit=True) as conn:
        later = ["DROP TABLE fulltext_log", "DROP TRIGGER passages_fulltext_insert ON passages",
                 "DROP TRIGGER passages_fulltext_delete ON passages", "DROP FUNCTION remem_fulltext_added",
                 "ALTER TABLE passages DROP COLUMN context_text"]  # PostgreSQL 8
        for statement in [*later, *drop, "DELETE FROM remem_migrations WHERE number >= 7"]:
            conn.execute(statement)


def test_what_was_stored_before_provenance_gets_it_from_roles_sources_and_watermarks(
        store_target: str | Path, backend: str) -> None:
    alice = Scope(user_id="alice")
    with Memory(store_target, config=QUIET) as m:
        user, assistant = m.add([{"role": "user", "content": "we ship on fridays"},
                                 {"role": "assistant", "content": "fridays, noted"}],
                                user_id="alice").episode_ids
        (event,) = m.add_events([{"type": "error", "message": "disk full"}],
                                user_id="alice").episode_ids
        imported = m.remember("a rule from the wiki", role="import", user_id="alice")
        m.store.insert([
            NewMemory(id="e_cube", kind="episode", text="from a cube", raw=True, scope=alice,
                      observed_at=1.0, role="user", metadata={"cube": {"name": "team"}}),
            NewMemory(id="m_both", kind="fact", text="both said it", raw=False, scope=alice,
                      observed_at=1.0, source_ids=[user, assistant]),
            NewMemory(id="m_alone", kind="fact", text="cites nothing", raw=False, scope=alice,
                      observed_at=1.0)], None)
    _before_provenance(store_target, backend)
    with Memory(store_target, config=QUIET) as m:
        found = {i.id: prov(i) for i in m.list(include_episodes=True, user_id="alice")}
    assert found[user] == ("unknown", "user", "user")
    assert found[assistant] == ("unknown", "assistant", "agent")
    assert found[event] == ("unknown", "tool", "external")
    assert found[imported.sources[0]] == found[imported.id] == ("import", "import", "external")
    assert found["e_cube"] == ("cube", "cube", "external")
    assert found["m_both"] == ("unknown", "assistant", "agent")
    assert found["m_alone"] == ("unknown", "user", "user")
