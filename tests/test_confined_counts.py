"""Counts cross no wall: a key confined to one user sees that user's counts and jobs only."""

from __future__ import annotations

from pathlib import Path

from server_support import service

from remem.serve.keys import KeyStore


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_stats_with_a_key_confined_to_one_user_count_only_that_user(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        keys = KeyStore(memory.store)
        alice = keys.create("acme", user_id="alice", scopes="read,write,admin").key
        org = keys.create("acme", scopes="read,write,admin").key
        memory.add(["one", "two", "three"], org_id="acme", user_id="alice", session_id="a")
        memory.add(["x1", "x2", "x3", "x4", "x5"], org_id="acme", user_id="bob", session_id="b")
        memory.add(["elsewhere"], org_id="globex", user_id="carol")
        memory.flush(timeout=60)
        mine = client.get("/v1/stats", headers=bearer(alice)).json()
        assert mine["episodes"] == 3
        assert mine["passages"] == 3 and mine["vectors"] == 3
        assert mine["size_bytes"] == 0  # the file holds the others' data too
        assert sum(mine["jobs"].values()) == len(memory.jobs(org_id="acme", user_id="alice", limit=1000))
        whole_org = client.get("/v1/stats", headers=bearer(org)).json()
        assert whole_org["episodes"] == 8  # the org's, not globex's
        assert memory.stats().episodes == 9


def test_jobs_with_a_key_confined_to_one_user_list_only_that_users_jobs(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        keys = KeyStore(memory.store)
        alice = keys.create("acme", user_id="alice", scopes="read,write,admin").key
        org = keys.create("acme", scopes="admin").key
        mine = memory.add("alice's turn", org_id="acme", user_id="alice", session_id="a").job_ids
        theirs = memory.add("bob's turn", org_id="acme", user_id="bob", session_id="b").job_ids
        memory.flush(timeout=60)
        listed = {j["id"] for j in client.get("/v1/jobs", headers=bearer(alice)).json()["jobs"]}
        assert set(mine) <= listed and not set(theirs) & listed
        everyone = {j["id"] for j in client.get("/v1/jobs", headers=bearer(org)).json()["jobs"]}
        assert set(mine) | set(theirs) <= everyone
        # nor can it act on another user's job by its id
        response = client.post(f"/v1/jobs/{theirs[0]}/retry", headers=bearer(alice))
        assert response.status_code == 404
