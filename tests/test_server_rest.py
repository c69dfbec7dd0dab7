"""The REST service over real HTTP: every Memory operation, pagination, errors, events."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_support import EventReader, open_memory, service, wait_until
from typer.testing import CliRunner

from remem import Config, Memory
from remem.cli import app

pytestmark = pytest.mark.backends

Api = tuple[Memory, httpx.Client]


@pytest.fixture
def api(store_target: str | Path) -> Iterator[Api]:
    with service(store_target) as pair:
        yield pair


@pytest.fixture(scope="module")
def shared_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """One server for the tests that only read or are refused."""
    with service(tmp_path_factory.mktemp("shared") / "remem.db") as pair:
        yield pair


def test_health_ready_and_the_openapi_spec(shared_api: Api) -> None:
    _, client = shared_api
    assert client.get("/v1/health").json()["status"] == "ok"
    ready = client.get("/v1/ready").json()
    assert ready == {"status": "ready", "embedder": "hash:256", "auth": "single_user",
                     "embed_backlog": 0}
    spec = client.get("/openapi.json").json()
    for path in ("/v1/memories", "/v1/events", "/v1/search", "/v1/flush", "/v1/memories/{memory_id}",
                 "/v1/memories/{memory_id}/forget", "/v1/memories/{memory_id}/history", "/v1/stats",
                 "/v1/events/stream", "/v1/chat/completions", "/v1/ready", "/v1/health"):
        assert path in spec["paths"], path
    assert set(spec["paths"]["/v1/memories/{memory_id}"]) == {"get", "patch", "delete"}
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_an_added_turn_can_be_read_back_and_found_at_once(api: Api) -> None:
    _, client = api
    response = client.post("/v1/memories", json={
        "user_id": "alice", "project": "web", "session_id": "s1", "timestamp": "2023-05-08T13:56:00Z",
        "metadata": {"turn": "D1:3"},
        "messages": [{"role": "user", "content": "I moved to pnpm last week"},
                     {"role": "assistant", "content": "Noted, pnpm it is."}]})
    assert response.status_code == 201
    first, second = response.json()["episode_ids"]
    item = client.get(f"/v1/memories/{first}").json()
    assert (item["text"], item["user_id"], item["project"], item["session_id"]) == (
        "I moved to pnpm last week", "alice", "web", "s1")
    assert item["metadata"] == {"turn": "D1:3"}
    assert item["event_time"].startswith("2023-05-08T13:56:00")
    hits = client.post("/v1/search", json={"user_id": "alice", "query": "pnpm"}).json()["hits"]
    assert hits[0]["memory"]["id"] in (first, second)
    assert "fulltext" in hits[0]["channels"]
    # another user's search does not see alice's turns
    assert client.post("/v1/search", json={"user_id": "bob", "query": "pnpm"}).json()["hits"] == []


def test_list_pages_through_everything_newest_first(api: Api) -> None:
    _, client = api
    ids = client.post("/v1/memories", json={
        "user_id": "alice", "messages": [f"message number {i}" for i in range(5)]}).json()["episode_ids"]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"user_id": "alice", "include_episodes": True, "limit": 2}
        page = client.get("/v1/memories", params={**params, **({"cursor": cursor} if cursor else {})}).json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]
    assert pages == 3
    bad = client.get("/v1/memories", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "cursor"


def test_agent_events_are_stored_and_searchable(api: Api) -> None:
    _, client = api
    response = client.post("/v1/events", json={"user_id": "alice", "project": "web", "events": [
        {"type": "tool_call", "tool": "Bash", "command": "python manage.py test", "exit_code": 127,
         "output": "bash: python: command not found"}]})
    assert response.status_code == 201
    (event_id,) = response.json()["episode_ids"]
    item = client.get(f"/v1/memories/{event_id}").json()
    assert item["kind"] == "event" and item["metadata"]["event"]["exit_code"] == 127
    hits = client.post("/v1/search", json={"user_id": "alice", "query": "command not found"}).json()["hits"]
    assert [h["memory"]["id"] for h in hits][:1] == [event_id]


def test_remember_update_forget_history_and_purge_a_memory(api: Api) -> None:
    _, client = api
    kept = client.post("/v1/remember", json={"text": "the team deploys with make ship",
                                              "kind": "convention", "user_id": "alice"})
    assert kept.status_code == 201
    assert (kept.json()["kind"], kept.json()["text"]) == ("convention", "the team deploys with make ship")
    mid = kept.json()["id"]
    updated = client.patch(f"/v1/memories/{mid}", json={"text": "the team deploys with make release",
                                                         "reason": "renamed"})
    assert updated.status_code == 200
    assert (updated.json()["text"], updated.json()["version"]) == ("the team deploys with make release", 2)
    forgotten = client.post(f"/v1/memories/{mid}/forget", json={"reason": "outdated"}).json()
    assert forgotten["status"] == "forgotten"
    hits = client.post("/v1/search", json={"user_id": "alice", "query": "deploys release"}).json()["hits"]
    assert mid not in [h["memory"]["id"] for h in hits]
    history = client.get(f"/v1/memories/{mid}/history").json()["entries"]
    assert [(e["action"], e["text"], e["reason"]) for e in history][:2] == [
        ("created", "the team deploys with make ship", None),
        ("updated", "the team deploys with make release", "renamed")]
    assert history[-1]["status"] == "forgotten"
    deleted = client.delete(f"/v1/memories/{mid}").json()["deleted"]
    assert mid in deleted and len(deleted) == 2  # with the turn remember() wrote for it
    gone = client.get(f"/v1/memories/{mid}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"


def test_a_raw_episode_cannot_be_edited(api: Api) -> None:
    _, client = api
    (eid,) = client.post("/v1/memories", json={"messages": "we use pnpm"}).json()["episode_ids"]
    response = client.patch(f"/v1/memories/{eid}", json={"text": "we use npm"})
    assert response.status_code == 422
    assert "cannot be edited" in response.json()["error"]["message"]
    assert client.get(f"/v1/memories/{eid}").json()["text"] == "we use pnpm"


@pytest.mark.parametrize(("method", "path", "body", "status", "code", "says"), [
    ("GET", "/v1/memories/e_nope", None, 404, "not_found", "e_nope"),
    ("POST", "/v1/memories", b'{"messages": [', 400, "malformed_json", "not valid JSON"),
    ("POST", "/v1/memories", {"messages": "hi", "colour": "red"}, 422, "invalid_request", "body.colour"),
    ("POST", "/v1/memories", {}, 422, "invalid_request", "body.messages"),
    ("POST", "/v1/memories", [1, 2], 422, "invalid_request", "JSON object"),
    ("POST", "/v1/memories", {"messages": [{"role": "user", "content": "  "}]}, 422, "invalid_field",
     "messages[0].content"),
    ("POST", "/v1/memories", {"messages": "hi", "timestamp": "last tuesday"}, 422, "invalid_field",
     "ISO 8601"),
    ("POST", "/v1/events", {"events": [{"type": "teleport"}]}, 422, "invalid_field", "events[0].type"),
    ("POST", "/v1/search", {"query": "x", "k": 0}, 422, "invalid_request", "body.k"),
    ("POST", "/v1/search", {"query": ""}, 422, "invalid_field", "query"),
    ("GET", "/v1/memories?users_id=alice", None, 422, "invalid_request", "query.users_id"),
    ("GET", "/v1/jobs?limit=5&limit=500", None, 422, "invalid_request", "more than once"),
    ("POST", "/v1/search?k=3", {"query": "x"}, 422, "invalid_request", "query.k"),
    ("GET", "/v1/nowhere", None, 404, "route_not_found", "/v1/nowhere"),
    ("PUT", "/v1/health", None, 405, "method_not_allowed", "PUT"),
])
def test_errors_are_json_with_a_stable_code_and_a_helpful_message(
        shared_api: Api, method: str, path: str, body: object, status: int, code: str, says: str) -> None:
    _, client = shared_api
    kwargs = {"content": body, "headers": {"content-type": "application/json"}} \
        if isinstance(body, bytes) else {"json": body} if body is not None else {}
    response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert says in error["message"]


def test_a_repeatable_query_parameter_takes_several_values(shared_api: Api) -> None:
    _, client = shared_api
    listed = client.get("/v1/memories?kinds=fact&kinds=preference&include_episodes=true")
    assert listed.status_code == 200, listed.text


def test_a_bad_message_in_a_batch_writes_nothing(api: Api) -> None:
    _, client = api
    response = client.post("/v1/memories", json={"user_id": "alice", "messages": [
        {"role": "user", "content": "this one is fine"}, {"role": "user", "content": "bell \x07"}]})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "messages[1].content"
    assert client.get("/v1/memories", params={"include_episodes": True}).json()["items"] == []


def test_flush_waits_for_embedding_and_stats_count_it(api: Api) -> None:
    _, client = api
    client.post("/v1/memories", json={"messages": ["one turn", "another turn"]})
    assert client.post("/v1/flush", json={"timeout": 30}).json() == {"done": True}
    stats = client.get("/v1/stats").json()
    assert stats["episodes"] == 2
    assert stats["vectors"] == stats["passages"] == 2


def test_the_event_stream_announces_an_add_then_its_readiness(api: Api) -> None:
    _, client = api
    with client.stream("GET", "/v1/events/stream") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = EventReader(stream)
        added = client.post("/v1/memories", json={"user_id": "alice", "session_id": "s1",
                                                   "messages": "we ship on fridays"}).json()
        kind, data = events.next()
        assert kind == "ingest"
        assert (data["episode_ids"], data["user_id"], data["session_id"]) == (
            added["episode_ids"], "alice", "s1")
        kind, data = events.next()
        assert (kind, data["episode_ids"], data["state"]) == ("ready", added["episode_ids"], "done")
    # ready means searchable by meaning: the vector is there
    hits = client.post("/v1/search", json={"query": "fridays", "user_id": "alice"}).json()["hits"]
    assert "vector" in hits[0]["channels"]


def test_feedback_skills_and_the_mind_map(api: Api) -> None:
    _, client = api
    mid = client.post("/v1/remember", json={"text": "run the tests with pytest -q", "kind": "procedure",
                                             "user_id": "alice"}).json()["id"]
    helpful = client.post(f"/v1/memories/{mid}/feedback", json={"verdict": "helpful", "note": "worked"})
    assert helpful.status_code == 200 and helpful.json()["metadata"]["helpful"] == 1
    wrong = client.post(f"/v1/memories/{mid}/feedback", json={"verdict": "wrong"}).json()
    assert wrong["status"] == "forgotten"
    history = client.get(f"/v1/memories/{mid}/history").json()["entries"]
    assert [e["reason"] for e in history][-2:] == ["feedback: helpful (worked)", "feedback: wrong"]
    bad = client.post(f"/v1/memories/{mid}/feedback", json={"verdict": "meh"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "body.verdict"
    tree = client.get("/v1/tree", params={"user_id": "alice"}).json()
    assert {"label", "children", "memories", "size"} <= set(tree)
    assert client.get("/v1/skills", params={"user_id": "alice"}).json() == {"skills": []}
    assert client.get("/v1/skills", params={"status": "rejected"}).status_code == 422
    not_skill = client.post(f"/v1/skills/{mid}/approve")
    assert not_skill.status_code == 422 and "not a skill" in not_skill.json()["error"]["message"]
    assert client.post("/v1/decay").json() == {"archived": []}


def test_context_gives_a_model_ready_block_within_its_budget(api: Api) -> None:
    _, client = api
    mid = client.post("/v1/remember", json={"text": "the team deploys with make ship",
                                             "kind": "convention", "user_id": "alice"}).json()["id"]
    context = client.post("/v1/context", json={"user_id": "alice", "query": "how do we deploy?",
                                                "budget_tokens": 200}).json()
    assert "make ship" in context["text"]
    assert mid in [m["id"] for m in context["memories"]]
    assert 0 < context["tokens"] <= 200
    other = client.post("/v1/context", json={"user_id": "bob", "query": "how do we deploy?"}).json()
    assert "make ship" not in other["text"]
    assert client.post("/v1/context", json={"budget_tokens": 0}).status_code == 422


def test_prefetch_warms_a_sessions_working_memory(api: Api) -> None:
    _, client = api
    mid = client.post("/v1/remember", json={"text": "the team deploys with make ship",
                                             "kind": "convention", "user_id": "alice"}).json()["id"]
    client.post("/v1/memories", json={"user_id": "alice", "session_id": "s1",
                                      "messages": "how do we deploy again?"})
    warmed = client.post("/v1/prefetch", json={"user_id": "alice", "session_id": "s1"})
    assert warmed.status_code == 200 and mid in warmed.json()["warmed"]
    missing = client.post("/v1/prefetch", json={"user_id": "alice"})
    assert missing.status_code == 422 and missing.json()["error"]["field"] == "body.session_id"


def test_jobs_can_be_listed_cancelled_and_retried(store_target: str | Path) -> None:
    held = Config(embedder="hash", run_worker=False)  # no worker: jobs stay queued
    with service(store_target, held) as (_, client):
        added = client.post("/v1/memories", json={"messages": "hello"}).json()
        queued = client.get("/v1/jobs", params={"state": "queued"}).json()["jobs"]
        assert set(added["job_ids"]) <= {job["id"] for job in queued}
        job_id = added["job_ids"][0]
        assert client.post(f"/v1/jobs/{job_id}/cancel").json()["state"] == "cancelled"
        assert client.post(f"/v1/jobs/{job_id}/retry").json()["state"] == "queued"
        retried = client.post(f"/v1/jobs/{job_id}/retry")
        assert retried.status_code == 422 and "queued" in retried.json()["error"]["message"]
        missing = client.post("/v1/jobs/j_nope/cancel")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"
        assert client.get("/v1/jobs", params={"state": "sleeping"}).status_code == 422


def test_an_add_whose_jobs_are_cancelled_still_ends_its_wait(store_target: str | Path) -> None:
    held = Config(embedder="hash", run_worker=False)  # no worker: jobs stay queued
    with service(store_target, held) as (_, client), \
            client.stream("GET", "/v1/events/stream") as stream:
        events = EventReader(stream)
        added = client.post("/v1/memories", json={"messages": "hello"}).json()
        assert events.next()[0] == "ingest"
        for job_id in added["job_ids"]:
            client.post(f"/v1/jobs/{job_id}/cancel")
        kind, data = events.next()
        assert (kind, data["episode_ids"], data["state"]) == ("ready", added["episode_ids"], "cancelled")


def test_serve_says_how_to_install_the_server_extra(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "uvicorn" else real(name, *a))
    result = CliRunner().invoke(app, ["serve", "--db", str(tmp_path / "r.db")])
    assert result.exit_code == 1
    assert 'pip install "remem[server]"' in " ".join(result.output.split())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_remem_serve_runs_the_service_until_interrupted(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "REMEM_EMBEDDER": "hash"}
    proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--port", str(port), "--db",
                             str(tmp_path / "team.db")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        def health() -> dict[str, str] | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).json()
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                return None

        assert wait_until(health, timeout=30)["status"] == "ok"
        added = httpx.post(f"http://127.0.0.1:{port}/v1/memories", json={"messages": "hello"}, timeout=5)
        assert added.status_code == 201
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode in (0, 130), err  # 130: the shell's code for "ended by Ctrl-C"
    assert "Traceback" not in err and "Application shutdown complete" in err
    assert "single-user mode" in err
    with open_memory(tmp_path / "team.db") as m:
        assert m.stats().episodes == 1


def test_a_foreign_host_or_origin_is_refused(api: Api) -> None:
    """DNS rebinding: a page under another name must not reach a loopback server."""
    _, client = api
    client.post("/v1/memories", json={"user_id": "alice", "messages": "secret plans"})
    rebound = client.get("/v1/memories", params={"include_episodes": True},
                         headers={"Host": "evil.example:8420"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "host_not_allowed"
    assert "secret" not in rebound.text
    cross = client.get("/v1/memories", headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    same = client.get("/v1/memories", headers={"Origin": "http://localhost:8420"})
    assert same.status_code == 200


def test_pinned_must_be_a_real_boolean(api: Api) -> None:
    _, client = api
    refused = client.post("/v1/remember", json={"user_id": "alice", "text": "we deploy on fridays",
                                                "pinned": 0})
    assert refused.status_code == 422 and "pinned" in refused.text
    assert client.get("/v1/memories", params={"user_id": "alice"}).json()["items"] == []
