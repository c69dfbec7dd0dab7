"""The memory proxy over real HTTP, in front of a stand-in OpenAI-compatible model server:
the user's memory goes into the system message, the answer comes back unchanged, and the
exchange is remembered."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import StandInOpenAI, service, wait_until

from remem import Memory
from remem.serve.keys import KeyStore

UPSTREAM_KEY = "sk-upstream-secret-123"
QUESTION = "which package manager do I use?"


@dataclass
class Proxied:
    memory: Memory
    client: httpx.Client
    model: StandInOpenAI


def seed(memory: Memory) -> None:
    memory.add("I moved to pnpm last week", user_id="alice", session_id="old")
    memory.add("I use yarn for everything", user_id="bob", session_id="old")


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[Proxied]:
    with StandInOpenAI() as model, service(tmp_path / "remem.db", upstream_base_url=model.base_url,
                                           upstream_api_key=UPSTREAM_KEY) as (memory, client):
        seed(memory)
        yield Proxied(memory, client, model)


def chat(question: str = QUESTION, **extra: Any) -> dict[str, Any]:
    return {"model": "stand-in-model", "messages": [{"role": "user", "content": question}], **extra}


def remembered(memory: Memory, session: str, **scope: str) -> list[tuple[str | None, str]]:
    page = memory.list(include_episodes=True, session_id=session, **scope)
    return [(item.role, item.text) for item in reversed(page)]


def test_the_answer_comes_back_unchanged_with_the_users_memory_given_to_the_model(
        proxied: Proxied) -> None:
    response = proxied.client.post("/v1/chat/completions", json=chat(temperature=0.2),
                                   headers={"X-Remem-User": "alice", "X-Remem-Session": "s9"})
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == proxied.model.reply
    assert int(response.headers["x-remem-memories"]) >= 1
    (sent,) = proxied.model.requests
    messages = sent["json"]["messages"]
    assert messages[0]["role"] == "system" and "pnpm" in messages[0]["content"]
    assert "yarn" not in json.dumps(sent["json"])  # bob's memory stays bob's
    assert messages[1:] == [{"role": "user", "content": QUESTION}]
    assert (sent["json"]["model"], sent["json"]["temperature"]) == ("stand-in-model", 0.2)
    assert sent["headers"]["Authorization"] == f"Bearer {UPSTREAM_KEY}"


def test_the_exchange_is_remembered_as_two_turns(proxied: Proxied) -> None:
    proxied.client.post("/v1/chat/completions", json=chat(),
                        headers={"X-Remem-User": "alice", "X-Remem-Session": "s9",
                                 "X-Remem-Project": "web"})
    turns = wait_until(lambda: remembered(proxied.memory, "s9", user_id="alice", project="web"))
    assert turns == [("user", QUESTION), ("assistant", proxied.model.reply)]
    page = proxied.memory.list(include_episodes=True, session_id="s9", user_id="alice",
                               project="web")
    assert [(i.provenance.door, i.provenance.trust) for i in reversed(page)] == [
        ("proxy", "user"), ("proxy", "agent")]


def test_an_existing_system_message_gets_the_memory_added(proxied: Proxied) -> None:
    request = {"model": "m", "messages": [{"role": "system", "content": "You are terse."},
                                          {"role": "user", "content": QUESTION}], "user": "alice"}
    assert proxied.client.post("/v1/chat/completions", json=request).status_code == 200
    messages = proxied.model.requests[0]["json"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].startswith("You are terse.\n\n") and "pnpm" in messages[0]["content"]


def test_a_streamed_answer_is_passed_through_chunk_for_chunk(proxied: Proxied) -> None:
    with proxied.client.stream("POST", "/v1/chat/completions", json=chat(stream=True),
                               headers={"X-Remem-User": "alice", "X-Remem-Session": "s10"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        received = b"".join(response.iter_bytes())
    assert received == proxied.model.sent[0]
    assert received.count(b"data: ") == len(proxied.model.chunks()) + 1
    assert "pnpm" in proxied.model.requests[0]["json"]["messages"][0]["content"]
    turns = wait_until(lambda: remembered(proxied.memory, "s10", user_id="alice"))
    assert turns == [("user", QUESTION), ("assistant", proxied.model.reply)]


def test_pasted_terminal_output_does_not_break_the_chat(proxied: Proxied) -> None:
    question = "why did this fail?\n\x1b[31mERROR: pnpm not found\x1b[0m"
    response = proxied.client.post("/v1/chat/completions", json=chat(question),
                                   headers={"X-Remem-User": "alice", "X-Remem-Session": "s11"})
    assert response.status_code == 200
    assert proxied.model.requests[0]["json"]["messages"][-1]["content"] == question  # as sent
    turns = wait_until(lambda: remembered(proxied.memory, "s11", user_id="alice"))
    assert "ERROR: pnpm not found" in turns[0][1] and "\x1b" not in turns[0][1]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_error_is_a_502_that_says_what_the_model_said(tmp_path: Path, stream: bool) -> None:
    with StandInOpenAI(fail_status=404) as model, service(
            tmp_path / "remem.db", upstream_base_url=model.base_url) as (memory, client):
        response = client.post("/v1/chat/completions", json=chat(stream=stream),
                               headers={"X-Remem-User": "alice", "X-Remem-Session": "s1"})
        assert response.status_code == 502
        error = response.json()["error"]
        assert error["code"] == "upstream_error"
        assert "HTTP 404" in error["message"] and "model 'nope' does not exist" in error["message"]
        assert memory.list(include_episodes=True) == []  # an exchange with no answer is not kept


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # bound, never listening
        with service(tmp_path / "remem.db", upstream_base_url=dead) as (_, client):
            response = client.post("/v1/chat/completions", json=chat(user="alice"))
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_unreachable" and dead in error["message"]


def test_without_an_upstream_the_proxy_says_how_to_configure_one(tmp_path: Path) -> None:
    with service(tmp_path / "remem.db") as (_, client):
        response = client.post("/v1/chat/completions", json=chat(user="alice"))
    assert response.status_code == 503
    assert "--upstream" in response.json()["error"]["message"]


def test_a_chat_without_a_user_is_refused(proxied: Proxied) -> None:
    response = proxied.client.post("/v1/chat/completions", json=chat())
    assert response.status_code == 400
    assert "X-Remem-User" in response.json()["error"]["message"]
    assert proxied.model.requests == []
    bad = proxied.client.post("/v1/chat/completions", json={"model": "m", "messages": []},
                              headers={"X-Remem-User": "alice"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "body.messages"


def test_with_keys_the_proxy_keeps_to_the_keys_org_and_user(proxied: Proxied) -> None:
    keys = KeyStore(proxied.memory.store)
    key = keys.create("acme", user_id="alice").key
    auth = {"Authorization": f"Bearer {key}"}
    assert proxied.client.post("/v1/chat/completions", json=chat(user="alice")).status_code == 401
    other = proxied.client.post("/v1/chat/completions", json=chat(),
                                headers={**auth, "X-Remem-User": "bob"})
    assert other.status_code == 403 and other.json()["error"]["code"] == "wrong_user"
    response = proxied.client.post("/v1/chat/completions", json=chat(),
                                   headers={**auth, "X-Remem-Session": "k1"})
    assert response.status_code == 200
    (sent,) = proxied.model.requests
    # alice's memories of the default org are not acme's alice's
    assert response.headers["x-remem-memories"] == "0" and "pnpm" not in json.dumps(sent["json"])
    assert key not in json.dumps(sent)  # the remem key never reaches the upstream
    assert sent["headers"]["Authorization"] == f"Bearer {UPSTREAM_KEY}"
    turns = wait_until(lambda: remembered(proxied.memory, "k1", org_id="acme", user_id="alice"))
    assert turns[0] == ("user", QUESTION)


@pytest.mark.parametrize("stream", [False, True])
def test_the_log_records_exactly_the_memories_the_model_was_given(proxied: Proxied, stream: bool) -> None:
    from remem.model import Scope
    from remem.retrieve.context import context_line

    proxied.memory.remember("Alice prefers tabs over spaces", kind="preference", user_id="alice")
    proxied.memory.flush()
    response = proxied.client.post("/v1/chat/completions", json=chat(stream=stream),
                                   headers={"X-Remem-User": "alice", "X-Remem-Session": "s9"})
    assert response.status_code == 200
    (sent,) = proxied.model.requests
    system = sent["json"]["messages"][0]["content"]
    (entry,) = proxied.memory.injections(user_id="alice")
    assert (entry.door, entry.session_id, entry.query) == ("proxy", "s9", QUESTION)
    given = [proxied.memory.get(i.memory_id, user_id="alice") for i in entry.items]
    asked = Scope(user_id="alice", session_id="s9")
    assert [context_line(g, asked) for g in given] == [
        line for line in system.splitlines() if line.startswith("- ")]
    assert {"pnpm", "tabs"} <= {w for g in given for w in g.text.split()}
    assert int(response.headers["x-remem-memories"]) == len(given)
    assert entry.text is not None and entry.text in system
    assert proxied.memory.injections(user_id="bob") == []


def test_nothing_is_logged_when_the_upstream_refuses_the_request(tmp_path: Path) -> None:
    with StandInOpenAI(fail_status=404) as model, service(
            tmp_path / "remem.db", upstream_base_url=model.base_url) as (memory, client):
        seed(memory)
        response = client.post("/v1/chat/completions", json=chat(),
                               headers={"X-Remem-User": "alice"})
        assert response.status_code == 502
        assert memory.injections() == []
