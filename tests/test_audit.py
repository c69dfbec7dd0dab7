"""The audit log: every change and read through REST, MCP and the CLI, inside the walls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from server_support import service
from typer.testing import CliRunner

from remem import Config, Memory
from remem.serve.keys import KeyStore


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_every_rest_request_is_recorded_with_its_key_and_read_back_inside_the_walls(
        tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        keys = KeyStore(memory.store)
        alice = keys.create("acme", user_id="alice", scopes="read,write,admin")
        bob = keys.create("acme", user_id="bob", scopes="read,write,admin")
        org = keys.create("acme", scopes="admin")
        other = keys.create("globex", scopes="read,write,admin")
        added = client.post("/v1/memories", json={"messages": "we ship on fridays"},
                            headers=bearer(alice.key)).json()["episode_ids"][0]
        assert client.get(f"/v1/memories/{added}", headers=bearer(alice.key)).status_code == 200
        assert client.get("/v1/memories", headers=bearer(bob.key)).status_code == 200
        assert client.delete(f"/v1/memories/{added}", headers=bearer(bob.key)).status_code == 404
        client.get("/v1/memories", headers=bearer(other.key))

        mine = client.get("/v1/audit", headers=bearer(alice.key)).json()["items"]
        assert [(e["action"], e["target"], e["status"]) for e in reversed(mine)] == [
            ("POST /v1/memories", None, 201), ("GET /v1/memories/{memory_id}", added, 200)]
        assert {e["key_id"] for e in mine} == {alice.info.id}
        assert {(e["door"], e["actor"], e["user_id"], e["org_id"]) for e in mine} == {
            ("rest", "alice", "alice", "acme")}
        theirs = client.get("/v1/audit", headers=bearer(bob.key)).json()["items"]
        assert [e["action"] for e in theirs][-2:] == ["DELETE /v1/memories/{memory_id}",
                                                      "GET /v1/memories"]
        assert all(e["user_id"] == "bob" for e in theirs)  # alice's requests stay hers
        # a user-confined key cannot ask for another user's entries
        assert client.get("/v1/audit?user_id=alice", headers=bearer(bob.key)).status_code == 403
        by_org = client.get("/v1/audit?user_id=alice&action=GET /v1/memories",
                            headers=bearer(org.key)).json()["items"]
        assert [e["target"] for e in by_org] == [added]
        # reading the log is in the log too
        assert client.get("/v1/audit?action=GET /v1/audit", headers=bearer(alice.key)).json()[
            "items"][0]["key_id"] == alice.info.id
        assert all(e["org_id"] == "globex" for e in
                   client.get("/v1/audit", headers=bearer(other.key)).json()["items"])


def test_a_request_whose_path_holds_control_characters_is_recorded_escaped(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        assert client.get("/v1/memories/e_%01%C3%A9x").status_code == 404
        assert client.get("/v1/nowhere%07").status_code == 404
        entries = list(memory.audit(limit=10))
        assert [(e.action, e.target, e.status) for e in reversed(entries)] == [
            ("GET /v1/memories/{memory_id}", "e_\\x01éx", 404),
            ("GET /v1/nowhere\\x07", None, 404)]


def test_mcp_tool_calls_are_recorded(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp.client._memory import InMemoryTransport
    from mcp.client.client import Client

    from remem.integrations.agent import AgentMemory
    from remem.integrations.scope import AgentScope
    from remem.mcp.server import build_server

    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        agent = AgentMemory(m, AgentScope(user_id="carol", project="shop", root=tmp_path))

        async def talk() -> str:
            async with Client(InMemoryTransport(build_server(agent))) as client:
                await client.call_tool("memory_remember", {"text": "run tests with make test",
                                                           "kind": "convention"})
                item = m.list(user_id="carol", project="shop")[0]
                await client.call_tool("memory_forget", {"memory_id": item.id})
                return item.id

        forgotten = asyncio.run(talk())
        entries = m.audit(user_id="carol", door="mcp")
        assert [(e.action, e.target, e.status, e.actor) for e in reversed(entries)] == [
            ("memory_remember", None, 0, "carol"), ("memory_forget", forgotten, 0, "carol")]


def test_cli_writes_are_recorded_and_remem_audit_reads_them(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.cli import _app

    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    app = _app()
    added = json.loads(runner.invoke(app, ["add", "we deploy on fridays", "--db", db, "--user",
                                           "alice", "--json"]).output)["episode_ids"][0]
    assert runner.invoke(app, ["forget", added, "--db", db, "--user", "alice"]).exit_code == 0
    assert runner.invoke(app, ["search", "deploy", "--db", db, "--user", "alice"]).exit_code == 0
    shown = runner.invoke(app, ["audit", "--db", db, "--user", "alice", "--json"])
    assert shown.exit_code == 0, shown.output
    entries = json.loads(shown.output)["entries"]
    # the reads (search, audit) change nothing and are not CLI writes
    assert [(e["door"], e["action"], e["target"], e["status"]) for e in entries] == [
        ("cli", "remem forget", added, 0), ("cli", "remem add", None, 0)]
    only = json.loads(runner.invoke(app, ["audit", "--db", db, "--user", "alice", "--action",
                                          "remem forget", "--json"]).output)["entries"]
    assert [e["target"] for e in only] == [added]
    assert json.loads(runner.invoke(app, ["audit", "--db", db, "--user", "bob", "--json"])
                      .output)["entries"] == []
    bad = runner.invoke(app, ["audit", "--db", db, "--door", "telepathy"])
    assert bad.exit_code == 1 and "not a door" in bad.output
