"""Sharing with permissions: grants and revocations over real HTTP on loopback, team memory
written by several users and attributed to each, and the walls where no grant opens them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from server_support import service
from typer.testing import CliRunner

from remem import Config, Memory
from remem.cli import app
from remem.errors import PermissionDeniedError
from remem.serve.keys import KeyStore

HASH = Config(embedder="hash")
runner = CliRunner()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _texts(client: httpx.Client, key: str, query: str) -> dict[str, str | None]:
    answer = client.post("/v1/search", json={"query": query, "include_episodes": False},
                         headers=bearer(key))
    assert answer.status_code == 200, answer.text
    return {h["memory"]["text"]: h["shared_by"] for h in answer.json()["hits"]}


def test_a_grant_opens_one_project_over_rest_until_it_is_revoked(tmp_path: Path) -> None:
    with service(tmp_path / "team.db") as (memory, client):
        keys = KeyStore(memory.store)
        alice = keys.create("acme", user_id="alice").key
        bob = keys.create("acme", user_id="bob").key
        mallory = keys.create("acme", user_id="mallory").key
        other_org = keys.create("globex", scopes="read,write,admin").key
        memory.remember("The web app deploys with make ship", kind="convention", org_id="acme",
                        user_id="alice", project="web")
        memory.remember("Alice's bank pin hint is her cat", kind="fact", org_id="acme",
                        user_id="alice", project="home")
        memory.flush()
        assert _texts(client, bob, "deploy web app make ship") == {}  # the wall, no grant
        made = client.post("/v1/shares", json={"grantee": "bob", "project": "web"},
                           headers=bearer(alice))
        assert made.status_code == 201, made.text
        grant = made.json()
        assert (grant["user_id"], grant["project"], grant["access"]) == ("alice", "web", "read")
        seen = _texts(client, bob, "deploy web app make ship")
        assert seen == {"The web app deploys with make ship": grant["id"]}
        assert "Alice's bank pin hint is her cat" not in _texts(client, bob, "bank pin cat")
        assert _texts(client, mallory, "deploy web app make ship") == {}
        assert _texts(client, other_org, "deploy web app make ship") == {}
        # a user's key grants only on its own memories, and cannot revoke another's grant
        forged = client.post("/v1/shares", json={"grantee": "mallory", "user_id": "alice"},
                             headers=bearer(mallory))
        assert forged.status_code == 403 and forged.json()["error"]["code"] == "wrong_user"
        assert client.delete(f"/v1/shares/{grant['id']}", headers=bearer(mallory)).status_code == 404
        assert client.delete(f"/v1/shares/{grant['id']}", headers=bearer(other_org)).status_code == 404
        listed = client.get("/v1/shares", headers=bearer(bob)).json()["shares"]
        assert [s["id"] for s in listed] == [grant["id"]]  # bob sees what he was given
        assert client.get("/v1/shares", headers=bearer(mallory)).json()["shares"] == []
        bad = client.post("/v1/shares", json={"grantee": "bob", "access": "own"}, headers=bearer(alice))
        assert bad.status_code == 422 and "error" in bad.json()
        gone = client.delete(f"/v1/shares/{grant['id']}", headers=bearer(alice))
        assert gone.status_code == 200 and gone.json()["id"] == grant["id"]
        assert _texts(client, bob, "deploy web app make ship") == {}
        assert client.delete(f"/v1/shares/{grant['id']}", headers=bearer(alice)).status_code == 404


def test_team_memory_is_written_by_its_members_and_names_each_writer(tmp_path: Path) -> None:
    with Memory(tmp_path / "team.db", config=HASH) as m:
        m.share(grantee="bob", user_id="team-web", access="write")
        m.share(grantee="carol", user_id="team-web", access="write")
        m.share(grantee="dave", user_id="team-web")  # read only
        by_bob = m.remember("The staging database is db.stg.internal", kind="project",
                            user_id="team-web", writer="bob")
        by_carol = m.add("Releases are cut on Thursdays", user_id="team-web", writer="carol")
        with pytest.raises(PermissionDeniedError, match="dave holds no write grant"):
            m.remember("Ship it on Friday night", user_id="team-web", writer="dave")
        with pytest.raises(PermissionDeniedError):
            m.remember("Ship it on Friday night", user_id="team-web", writer="erin")
        m.flush()
        assert by_bob.metadata["writer"] == "bob"
        assert m.get(by_carol.episode_ids[0], user_id="team-web").metadata["writer"] == "carol"
        hits = m.search("staging database", user_id="dave", include_episodes=False)
        assert hits and hits[0].memory.id == by_bob.id and hits[0].shared_by is not None
        assert "shared by team-web" in hits[0].reasons
        # a grant to the team reaches each of its members, and no one else
        m.remember("The api service runs on port 8443", kind="project", user_id="frank", project="api")
        m.share(grantee="team-web", grantee_kind="team", user_id="frank", project="api")
        m.flush()
        for member in ("bob", "carol", "dave"):
            assert any("8443" in h.memory.text for h in m.search("api port", user_id=member))
        assert not any("8443" in h.memory.text for h in m.search("api port", user_id="erin"))
        visible = {(s.grantee_kind, s.grantee) for s in m.shares(user_id="frank")}
        assert visible == {("team", "team-web")}
        assert {s.user_id for s in m.shares(grantee="dave")} == {"team-web", "frank"}


def test_team_members_write_over_rest_with_their_own_keys(tmp_path: Path) -> None:
    with service(tmp_path / "team.db") as (memory, client):
        keys = KeyStore(memory.store)
        bob = keys.create("acme", user_id="bob").key
        carol = keys.create("acme", user_id="carol").key
        memory.share(grantee="bob", org_id="acme", user_id="team-web", access="write")
        memory.share(grantee="carol", org_id="acme", user_id="team-web")  # read only
        wrote = client.post("/v1/remember", json={"user_id": "team-web", "kind": "project",
                                                  "text": "The staging database is db.stg.internal"},
                            headers=bearer(bob))
        assert wrote.status_code == 201, wrote.text
        assert (wrote.json()["user_id"], wrote.json()["metadata"]["writer"]) == ("team-web", "bob")
        added = client.post("/v1/memories", json={"user_id": "team-web", "messages": "Releases "
                                                  "are cut on Thursdays"}, headers=bearer(bob))
        assert added.status_code == 201
        episode = memory.get(added.json()["episode_ids"][0], org_id="acme", user_id="team-web")
        assert episode.metadata["writer"] == "bob"
        refused = client.post("/v1/remember", json={"user_id": "team-web", "text": "Ship on Fridays"},
                              headers=bearer(carol))
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
        memory.flush()
        seen = _texts(client, carol, "staging database")
        assert seen.get("The staging database is db.stg.internal") is not None


def test_the_command_line_grants_lists_and_revokes(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    env = {"REMEM_EMBEDDER": "hash"}
    with Memory(db, config=HASH) as m:
        m.remember("We review on Tuesdays", kind="convention", user_id="alice", project="web")
        m.flush()
    made = runner.invoke(app, ["share", "grant", "ci-bot", "--agent", "--user", "alice",
                               "--project", "web", "--db", db, "--json"], env=env)
    assert made.exit_code == 0, made.output
    grant_id = json.loads(made.stdout)["id"]
    with Memory(db, config=HASH) as m:
        hits = m.search("review day", agent_id="ci-bot", include_episodes=False)
        assert [h.memory.text for h in hits if h.shared_by == grant_id] == ["We review on Tuesdays"]
    listed = runner.invoke(app, ["share", "list", "--user", "alice", "--db", db], env=env)
    assert f"{grant_id}  user alice, project web -> agent ci-bot: read" in listed.stdout
    wrong = runner.invoke(app, ["share", "grant", "bob", "--access", "admin", "--user", "alice",
                                "--db", db], env=env)
    assert wrong.exit_code == 1 and "access" in wrong.stderr
    gone = runner.invoke(app, ["share", "revoke", grant_id, "--user", "alice", "--db", db], env=env)
    assert gone.exit_code == 0 and "revoked" in gone.stdout
    with Memory(db, config=HASH) as m:
        assert all(h.shared_by is None for h in m.search("review day", agent_id="ci-bot"))
