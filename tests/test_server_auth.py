"""API keys over real HTTP: no key, a wrong or revoked key, scopes, and the walls between
orgs and users; oversized and malformed bodies; refusing to listen openly with no key."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from server_support import EventReader, open_memory, service
from typer.testing import CliRunner

from remem import ConfigError, Memory
from remem.cli import app
from remem.serve.keys import KeyStore
from remem.serve.run import check_bind, is_loopback

pytestmark = pytest.mark.backends


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass
class Secured:
    memory: Memory
    client: httpx.Client
    keys: KeyStore
    acme: str  # read, write
    acme_read: str
    acme_admin: str
    acme_alice: str  # read, write, for alice only
    globex: str  # read, write, admin


@contextmanager
def secured_service(path: str | Path) -> Iterator[Secured]:
    with service(path) as (memory, client):
        keys = KeyStore(memory.store)
        yield Secured(
            memory, client, keys,
            acme=keys.create("acme", scopes="read,write").key,
            acme_read=keys.create("acme", scopes="read").key,
            acme_admin=keys.create("acme", scopes="admin").key,
            acme_alice=keys.create("acme", user_id="alice").key,
            globex=keys.create("globex", scopes="read,write,admin").key,
        )


@pytest.fixture
def secured(store_target: str | Path) -> Iterator[Secured]:
    with secured_service(store_target) as running:
        yield running


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """One server with keys for the tests that are refused and change nothing."""
    with secured_service(tmp_path_factory.mktemp("locked") / "remem.db") as running:
        yield running


ROUTES = [("GET", "/v1/ready"), ("GET", "/v1/stats"), ("GET", "/v1/memories"),
          ("GET", "/v1/memories/e_x"), ("POST", "/v1/memories"), ("POST", "/v1/search"),
          ("POST", "/v1/flush"), ("DELETE", "/v1/memories/e_x"), ("GET", "/v1/events/stream"),
          ("POST", "/v1/chat/completions")]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_without_a_key_every_route_but_health_is_refused(locked: Secured, method: str,
                                                         path: str) -> None:
    response = locked.client.request(method, path, json={"user_id": "alice", "messages": "hi"}
                                     if method == "POST" else None)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "missing_key"
    assert "Authorization: Bearer" in response.json()["error"]["message"]
    assert response.headers["www-authenticate"] == "Bearer"
    assert locked.client.get("/v1/health").status_code == 200


@pytest.mark.parametrize("header", ["Bearer rmk_not-a-key", "Basic YWxpY2U6c2VjcmV0", "Bearer"])
def test_a_wrong_or_malformed_key_is_refused(locked: Secured, header: str) -> None:
    response = locked.client.get("/v1/memories", headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_key"


def test_a_key_with_one_character_changed_is_refused(locked: Secured) -> None:
    forged = locked.acme[:-1] + ("A" if locked.acme[-1] != "A" else "B")
    assert locked.client.get("/v1/memories", headers=bearer(forged)).status_code == 401
    assert locked.client.get("/v1/memories", headers=bearer(locked.acme)).status_code == 200


def test_a_revoked_key_is_refused_from_then_on(secured: Secured) -> None:
    assert secured.client.get("/v1/memories", headers=bearer(secured.acme)).status_code == 200
    key_id = secured.keys.verify(secured.acme).id  # type: ignore[union-attr]
    secured.keys.revoke(key_id)
    response = secured.client.get("/v1/memories", headers=bearer(secured.acme))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "revoked_key"
    assert key_id in response.json()["error"]["message"]


def test_one_orgs_key_never_reaches_anothers_memories(secured: Secured) -> None:
    client = secured.client
    secret = "globex launches project nightingale on monday"
    (gid,) = client.post("/v1/memories", json={"user_id": "alice", "messages": secret},
                         headers=bearer(secured.globex)).json()["episode_ids"]
    acme = bearer(secured.acme_admin)
    for method, path, body in [
            ("GET", f"/v1/memories/{gid}", None), ("GET", f"/v1/memories/{gid}/history", None),
            ("POST", f"/v1/memories/{gid}/forget", None), ("DELETE", f"/v1/memories/{gid}", None),
            ("PATCH", f"/v1/memories/{gid}", {"text": "overwritten"}),
            ("POST", f"/v1/memories/{gid}/feedback", {"verdict": "wrong"}),
            ("POST", f"/v1/skills/{gid}/approve", None)]:
        response = client.request(method, path, headers=acme, json=body)
        assert response.status_code == 404, (method, path)
        assert "nightingale" not in response.text
    # naming the other org in the request is refused, not obeyed
    for response in [
        client.get("/v1/memories", params={"org_id": "globex", "include_episodes": True}, headers=acme),
        client.get(f"/v1/memories/{gid}", params={"org_id": "globex"}, headers=acme),
        client.post("/v1/search", json={"org_id": "globex", "query": "nightingale"}, headers=acme),
        client.post("/v1/memories", json={"org_id": "globex", "messages": "x"}, headers=acme),
        client.post("/v1/remember", json={"org_id": "globex", "text": "x"}, headers=acme),
        client.get("/v1/tree", params={"org_id": "globex"}, headers=acme),
        client.post("/v1/context", json={"org_id": "globex", "query": "nightingale"}, headers=acme),
        client.post("/v1/prefetch", json={"org_id": "globex", "session_id": "s1"}, headers=acme),
        client.get("/v1/skills", params={"org_id": "globex"}, headers=acme),
    ]:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "wrong_org"
        assert "nightingale" not in response.text
    listed = client.get("/v1/memories", params={"include_episodes": True}, headers=acme).json()
    assert listed["items"] == []
    found = client.post("/v1/search", json={"query": "nightingale monday"}, headers=acme).json()
    assert found["hits"] == []
    # and the other org's memory is untouched
    item = client.get(f"/v1/memories/{gid}", headers=bearer(secured.globex)).json()
    assert (item["text"], item["status"]) == (secret, "active")


def test_a_key_writes_into_its_own_org(secured: Secured) -> None:
    (eid,) = secured.client.post("/v1/memories", json={"user_id": "bob", "messages": "acme uses k8s"},
                                 headers=bearer(secured.acme)).json()["episode_ids"]
    assert secured.memory.get(eid, org_id="acme").org_id == "acme"
    with pytest.raises(LookupError):
        secured.memory.get(eid)  # not in the default org


def test_a_users_key_acts_for_that_user_only(secured: Secured) -> None:
    client, alice = secured.client, bearer(secured.acme_alice)
    (bob_id,) = client.post("/v1/memories", json={"user_id": "bob", "messages": "bob likes tabs"},
                            headers=bearer(secured.acme)).json()["episode_ids"]
    (own,) = client.post("/v1/memories", json={"messages": "alice likes spaces"},
                         headers=alice).json()["episode_ids"]
    assert secured.memory.get(own, org_id="acme").user_id == "alice"
    assert client.get(f"/v1/memories/{bob_id}", headers=alice).status_code == 404
    refused = client.post("/v1/search", json={"user_id": "bob", "query": "tabs"}, headers=alice)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "wrong_user"
    listed = client.get("/v1/memories", params={"include_episodes": True}, headers=alice).json()
    assert own in [item["id"] for item in listed["items"]]
    assert {item["user_id"] for item in listed["items"]} == {"alice"}
    hits = client.post("/v1/search", json={"query": "likes tabs spaces"}, headers=alice).json()["hits"]
    assert own in {hit["memory"]["id"] for hit in hits}
    assert {hit["memory"]["user_id"] for hit in hits} == {"alice"}


def test_a_read_only_key_cannot_write(secured: Secured) -> None:
    client = secured.client
    response = client.post("/v1/memories", json={"messages": "sneaky"}, headers=bearer(secured.acme_read))
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "insufficient_scope" and "write" in error["message"]
    assert "remem keys create" in error["message"]
    listed = client.get("/v1/memories", params={"include_episodes": True},
                        headers=bearer(secured.acme_read)).json()
    assert listed["items"] == []


def test_purge_jobs_decay_and_store_wide_stats_need_the_admin_scope(secured: Secured) -> None:
    client = secured.client
    for method, path in [("GET", "/v1/jobs"), ("POST", "/v1/jobs/j_x/retry"), ("POST", "/v1/jobs/j_x/cancel"),
                         ("POST", "/v1/decay")]:
        refused = client.request(method, path, headers=bearer(secured.acme))
        assert refused.status_code == 403 and "admin" in refused.json()["error"]["message"], path
    assert client.get("/v1/jobs", headers=bearer(secured.acme_admin)).status_code == 200
    (eid,) = client.post("/v1/memories", json={"messages": "to be purged"},
                         headers=bearer(secured.acme)).json()["episode_ids"]
    assert client.delete(f"/v1/memories/{eid}", headers=bearer(secured.acme)).status_code == 403
    assert client.get("/v1/stats", headers=bearer(secured.acme)).status_code == 403
    assert client.get(f"/v1/memories/{eid}", headers=bearer(secured.acme)).status_code == 200
    assert client.delete(f"/v1/memories/{eid}", headers=bearer(secured.acme_admin)).json() == {
        "deleted": [eid]}
    assert client.get("/v1/stats", headers=bearer(secured.acme_admin)).json()["episodes"] == 0


def test_an_admin_key_sees_and_touches_only_its_own_orgs_jobs(secured: Secured) -> None:
    client = secured.client
    acme = client.post("/v1/memories", json={"messages": "acme builds with make"},
                       headers=bearer(secured.acme)).json()["job_ids"]
    globex = client.post("/v1/memories", json={"messages": "globex builds with bazel"},
                         headers=bearer(secured.globex)).json()["job_ids"]
    assert client.post("/v1/flush", headers=bearer(secured.acme)).status_code == 200

    seen = {j["id"] for j in client.get("/v1/jobs", headers=bearer(secured.acme_admin)).json()["jobs"]}

    assert set(acme) <= seen and not set(globex) & seen
    other = client.post(f"/v1/jobs/{globex[0]}/cancel", headers=bearer(secured.acme_admin))
    assert other.status_code == 404 and other.json()["error"]["code"] == "job_not_found"


def test_the_event_stream_shows_only_the_keys_org(secured: Secured) -> None:
    client = secured.client
    with client.stream("GET", "/v1/events/stream", headers=bearer(secured.acme)) as stream:
        events = EventReader(stream)
        client.post("/v1/memories", json={"messages": "globex news"}, headers=bearer(secured.globex))
        mine = client.post("/v1/memories", json={"messages": "acme news"},
                           headers=bearer(secured.acme)).json()
        kind, data = events.next()  # globex's add came first, but is not shown here
        assert (kind, data["episode_ids"], data["org_id"]) == ("ingest", mine["episode_ids"], "acme")
    other = client.get("/v1/events/stream", params={"org_id": "globex"}, headers=bearer(secured.acme))
    assert other.status_code == 403


def test_oversized_bodies_get_413_and_write_nothing(tmp_path: Path) -> None:
    with service(tmp_path / "remem.db", max_body_bytes=4096) as (memory, client):
        big = {"messages": "x" * 10_000}
        response = client.post("/v1/memories", json=big)
        assert response.status_code == 413
        error = response.json()["error"]
        assert error["code"] == "body_too_large" and "4,096 bytes" in error["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: the size is counted as it comes
            yield b'{"messages": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        chunked = client.post("/v1/memories", content=chunks(),
                              headers={"content-type": "application/json"})
        assert chunked.status_code == 413
        assert memory.stats().episodes == 0
        assert client.post("/v1/memories", json={"messages": "small"}).status_code == 201


def test_malformed_json_with_a_valid_key_gets_400(locked: Secured) -> None:
    response = locked.client.post("/v1/search", content=b'{"query": "x",}',
                                  headers={**bearer(locked.acme), "content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_json"


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.10", False), ("example.com", False)])
def test_which_addresses_count_as_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_listening_beyond_this_machine_needs_an_active_key(tmp_path: Path) -> None:
    with open_memory(tmp_path / "remem.db") as memory:
        keys = KeyStore(memory.store)
        check_bind("127.0.0.1", keys)  # single-user mode on loopback is fine
        with pytest.raises(ConfigError, match="remem keys create"):
            check_bind("0.0.0.0", keys)
        key = keys.create("acme")
        check_bind("0.0.0.0", keys)
        keys.revoke(key.info.id)
        with pytest.raises(ConfigError, match="no API key"):
            check_bind("0.0.0.0", keys)


def test_remem_serve_refuses_a_public_address_without_a_key(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert "refusing to listen on 0.0.0.0" in output and "remem keys create --org ORG" in output


def test_keys_from_the_cli_open_the_service_and_revoking_closes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    db = tmp_path / "remem.db"
    runner = CliRunner()
    created = runner.invoke(app, ["keys", "create", "--org", "acme", "--user", "alice", "--scopes",
                                  "read", "--name", "laptop", "--json", "--db", str(db)])
    assert created.exit_code == 0, created.output
    import json

    made = json.loads(created.stdout)
    assert made["key"].startswith("rmk_") and made["id"].startswith("k_")
    assert (made["org_id"], made["user_id"], made["scopes"], made["name"]) == (
        "acme", "alice", ["read"], "laptop")
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("remem.db"))
    assert made["key"].encode() not in stored  # only its hash is kept
    plain = runner.invoke(app, ["keys", "create", "--org", "acme", "--db", str(db)])
    assert plain.stdout.strip().startswith("rmk_") and len(plain.stdout.split()) == 1
    listed = json.loads(runner.invoke(app, ["keys", "list", "--json", "--db", str(db)]).stdout)
    assert [k["id"] for k in listed][0] == made["id"]
    assert all("key" not in k for k in listed)
    with service(db) as (_, client):
        assert client.get("/v1/memories", headers=bearer(made["key"])).status_code == 200
        revoked = runner.invoke(app, ["keys", "revoke", made["id"], "--db", str(db)])
        assert revoked.exit_code == 0 and made["id"] in revoked.stdout
        assert client.get("/v1/memories", headers=bearer(made["key"])).status_code == 401
    unknown = runner.invoke(app, ["keys", "revoke", "k_nope", "--db", str(db)])
    assert unknown.exit_code == 1 and "remem keys list" in unknown.output
    bad = runner.invoke(app, ["keys", "create", "--org", "acme", "--scopes", "read,root", "--db", str(db)])
    assert bad.exit_code == 1 and "read, write, admin" in bad.output
