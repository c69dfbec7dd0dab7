"""The LLM extractor against a chat endpoint over real HTTP.

:class:`StandInChatServer` stands in for a remote model (vLLM, Ollama, OpenAI...): it
speaks the OpenAI chat-completions protocol on loopback and answers each request from the
test's script, recording what it was sent.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from standin_chat import Reply, StandInChatServer, answer

from remem.config import AgentConfig
from remem.errors import ConfigError, ExtractionError, LLMError
from remem.extract import EpisodeIn, LLMExtractor, RulesExtractor, create_extractor, ground
from remem.llm import ChatClient

THURSDAY = datetime(2024, 5, 9, 15, 30, tzinfo=timezone.utc)


@pytest.fixture
def serve() -> Iterator[Callable[..., StandInChatServer]]:
    servers: list[StandInChatServer] = []

    def start(*replies: Reply, reject_response_format: bool = False) -> StandInChatServer:
        servers.append(StandInChatServer(list(replies),
                                         reject_response_format=reject_response_format))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture
def clients() -> Iterator[Callable[..., ChatClient]]:
    made: list[ChatClient] = []

    def make(base_url: str, **kw: Any) -> ChatClient:
        made.append(ChatClient(base_url, "test-model", **kw))
        return made[-1]

    yield make
    for c in made:
        c.close()


def alice_and_bob() -> list[EpisodeIn]:
    return [
        EpisodeIn("ep-a1", "Hi Bob! How was your week?", role="Alice", event_time=THURSDAY),
        EpisodeIn("ep-b1", "Great. I ran my first marathon last Tuesday, and I only drink oat "
                  "milk now.", role="Bob", event_time=THURSDAY + timedelta(minutes=1)),
        EpisodeIn("ep-a2", "Congrats! As a nurse I never find the time.", role="Alice",
                  event_time=THURSDAY + timedelta(minutes=2)),
    ]


CLASSIFIED = answer({"topic": "catching up", "kinds": ["preference", "profile", "event"]})
PERSONAL = answer({"memories": [
    {"kind": "preference", "text": "Bob only drinks oat milk", "subject": "Bob",
     "sources": [2], "confidence": 0.9},
    {"kind": "profile", "text": "Alice is a nurse", "subject": "alice", "sources": ["[3]"]},
]})
HAPPENING = answer({"memories": [
    {"kind": "event", "text": "Bob ran his first marathon last Tuesday", "subject": "Bob",
     "sources": [2], "entities": ["marathon"], "date_phrase": "last Tuesday"},
]})


def all_supported(n: int) -> Reply:
    return answer({"verdicts": [{"candidate": i, "supported": True, "subject_ok": True,
                                 "reason": ""} for i in range(1, n + 1)]})


def test_a_conversation_becomes_memories_with_kinds_subjects_sources_and_dates(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(CLASSIFIED, PERSONAL, HAPPENING, all_supported(3))
    episodes = alice_and_bob()

    got = LLMExtractor(clients(server.base_url)).extract(episodes)

    assert [(c.kind, c.subject, c.text, c.source_ids, c.rule) for c in got] == [
        ("preference", "Bob", "Bob only drinks oat milk", ["ep-b1"], "llm.preference"),
        ("profile", "Alice", "Alice is a nurse", ["ep-a2"], "llm.profile"),
        ("event", "Bob", "Bob ran his first marathon on 7 May 2024", ["ep-b1"], "llm.event"),
    ]
    event = got[2]
    assert event.event_time is not None and event.event_time.date().isoformat() == "2024-05-07"
    assert event.observed_at == THURSDAY + timedelta(minutes=1)
    assert got[0].confidence == 0.9 and got[0].event_time is None
    # classify, one call per kind group found (personal, happening), verify
    assert len(server.requests) == 4
    # the model sees short numbers with speaker and time, never the stored ids
    transcript = server.messages(0)[-1]["content"]
    assert "[2] 2024-05-09 Thu 15:31 UTC Bob: Great. I ran my first marathon" in transcript
    assert "ep-b1" not in json.dumps(server.requests)
    # what the model proposed also passes the grounding check the memory agent runs
    assert ground(got, episodes).rejected == []


def test_chinese_keeps_its_language_and_relative_dates_resolve_against_the_turn(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    turn = EpisodeIn("ep1", "我上周搬到了杭州。以后回答请用中文。", role="user", event_time=THURSDAY)
    server = serve(
        answer({"topic": "搬家", "kinds": ["preference", "event"]}),
        answer({"memories": [{"kind": "preference", "text": "以后回答请用中文", "subject": "用户",
                              "sources": [1]}]}),
        answer({"memories": [{"kind": "event", "text": "用户上周搬到了杭州", "subject": "user",
                              "sources": [1], "date_phrase": "上周"}]}),
        all_supported(2))

    got = LLMExtractor(clients(server.base_url)).extract([turn])

    assert [(c.kind, c.subject, c.text) for c in got] == [
        ("preference", "user", "以后回答请用中文"),
        ("event", "user", "用户2024年4月29日那周搬到了杭州"),
    ]
    assert got[1].event_time == datetime(2024, 4, 29, tzinfo=timezone.utc)
    assert got[0].tags == ["zh"]


def test_invalid_json_is_sent_back_with_the_error_and_the_repaired_answer_is_used(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    bad = "Sure! The topic is hiking and Bob likes oat milk."
    server = serve(Reply(content=bad), CLASSIFIED, PERSONAL, HAPPENING, all_supported(3))

    got = LLMExtractor(clients(server.base_url)).extract(alice_and_bob())

    assert len(got) == 3
    repair = server.messages(1)
    assert repair[:2] == server.messages(0)
    assert repair[2] == {"role": "assistant", "content": bad}
    assert repair[3]["role"] == "user" and "not valid JSON" in repair[3]["content"]


def test_citing_a_turn_that_was_not_shown_is_sent_back_for_repair(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    invented = answer({"memories": [{"kind": "event", "text": "Bob ran a marathon",
                                     "subject": "Bob", "sources": [9]}]})
    server = serve(answer({"topic": "running", "kinds": ["event"]}), invented,
                   answer({"memories": [{"kind": "event", "text": "Bob ran a marathon",
                                         "subject": "Bob", "sources": [2]}]}),
                   all_supported(1))

    got = LLMExtractor(clients(server.base_url)).extract(alice_and_bob())

    assert [c.source_ids for c in got] == [["ep-b1"]]
    assert "cites [9], which is not a turn shown" in server.messages(2)[-1]["content"]


def test_a_date_phrase_must_come_from_the_cited_turn_and_is_read_in_its_context(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    def marathon(phrase: str) -> Reply:
        return answer({"memories": [{"kind": "event", "text": "Bob ran a marathon last Tuesday",
                                     "subject": "Bob", "sources": [2], "date_phrase": phrase}]})
    server = serve(answer({"topic": "running", "kinds": ["event"]}), marathon("last Friday"),
                   marathon("Tuesday"), all_supported(1))

    [event] = LLMExtractor(clients(server.base_url)).extract(alice_and_bob())

    assert "date_phrase is not written in the turns it cites" in server.messages(2)[-1]["content"]
    # "Tuesday" is read as the turn says it, "last Tuesday", on Thursday 9 May
    assert event.event_time == datetime(2024, 5, 7, tzinfo=timezone.utc)
    assert event.text == "Bob ran a marathon on 7 May 2024"


def test_output_that_stays_invalid_fails_after_exactly_attempts_calls(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(*[answer({"topic": "x", "kinds": ["feelings"]})] * 5)

    with pytest.raises(ExtractionError) as info:
        LLMExtractor(clients(server.base_url), attempts=2).extract(alice_and_bob())

    assert len(server.requests) == 2
    assert info.value.step == "classify"
    assert "still invalid after 2 call(s)" in str(info.value)
    assert "'feelings' is not a kind" in str(info.value)


def test_a_pitfall_must_state_its_fix_and_keeps_its_environment(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    episodes = [
        EpisodeIn("t1", "pnpm install fails with EACCES on the CI runner", role="user",
                  event_time=THURSDAY),
        EpisodeIn("t2", "Running it with --unsafe-perm fixed it (Ubuntu 22.04 runner).",
                  role="assistant", event_time=THURSDAY + timedelta(minutes=5)),
    ]
    no_fix = {"kind": "pitfall", "text": "pnpm install fails with EACCES on the CI runner",
              "subject": "environment", "sources": [1, 2], "symptom": "EACCES",
              "cause": "permissions", "fix": "run it with --unsafe-perm",
              "environment": "Ubuntu 22.04"}
    fixed = {**no_fix, "text": "pnpm install fails with EACCES on the CI runner; fix: run it "
                               "with --unsafe-perm"}
    server = serve(answer({"topic": "CI", "kinds": ["pitfall"]}), answer({"memories": [no_fix]}),
                   answer({"memories": [fixed]}), all_supported(1))

    [pitfall] = LLMExtractor(clients(server.base_url)).extract(episodes)

    assert pitfall.text.endswith("fix: run it with --unsafe-perm")
    assert pitfall.source_ids == ["t1", "t2"] and pitfall.rule == "llm.pitfall"
    assert "Ubuntu 22.04" in pitfall.entities
    assert "a pitfall's text must state its fix" in server.messages(2)[-1]["content"]
    # the pitfall prompt asks for symptom, cause, fix and environment
    prompt = server.messages(1)[0]["content"]
    assert all(f'"{f}"' in prompt for f in ("symptom", "cause", "fix", "environment"))


def test_verification_refuses_a_memory_with_the_wrong_subject(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient],
        caplog: pytest.LogCaptureFixture) -> None:
    wrong = answer({"memories": [
        {"kind": "preference", "text": "Alice only drinks oat milk", "subject": "Alice",
         "sources": [2]},
        {"kind": "profile", "text": "Alice is a nurse", "subject": "Alice", "sources": [3]},
    ]})
    verdicts = answer({"verdicts": [
        {"candidate": 1, "supported": True, "subject_ok": False,
         "reason": "Bob says this about himself"},
        {"candidate": 2, "supported": True, "subject_ok": True, "reason": ""},
    ]})
    server = serve(answer({"topic": "chat", "kinds": ["preference", "profile"]}), wrong, verdicts)
    caplog.set_level(logging.INFO, logger="remem.extract.llm")

    result = LLMExtractor(clients(server.base_url)).extract_verified(alice_and_bob())

    assert [c.text for c in result.candidates] == ["Alice is a nurse"]
    assert [(r.candidate.text, r.reason) for r in result.rejected] == [
        ("Alice only drinks oat milk", "wrong subject: Bob says this about himself")]
    assert any("verification refused a preference candidate" in r.getMessage()
               and r.levelno == logging.INFO for r in caplog.records)
    # the verifier saw each candidate with its subject and the turns it cites
    assert '#1 [preference] subject "Alice", cites [2]: Alice only drinks oat milk' in \
        server.messages(2)[-1]["content"]


def test_without_verification_there_is_no_verification_call(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(CLASSIFIED, PERSONAL, HAPPENING)

    got = LLMExtractor(clients(server.base_url), verify=False).extract(alice_and_bob())

    assert len(got) == 3 and len(server.requests) == 3


def test_nothing_worth_remembering_costs_one_call_and_gives_nothing(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(answer({"topic": "greetings", "kinds": []}))
    extractor = LLMExtractor(clients(server.base_url))

    assert extractor.extract([EpisodeIn("e1", "hi!", role="user")]) == []
    assert extractor.extract([]) == []
    assert len(server.requests) == 1


def test_an_http_500_fails_at_once_with_its_status_and_body(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(Reply(status=500, body='{"error": "CUDA out of memory"}'))

    with pytest.raises(LLMError) as info:
        LLMExtractor(clients(server.base_url)).extract(alice_and_bob())

    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "CUDA out of memory" in str(info.value)
    assert len(server.requests) == 1


def test_a_slow_endpoint_times_out_at_the_configured_limit(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(Reply(content="{}", delay_s=5))

    # the reply comes after 5 s: only the client's own 0.3 s limit can end the call with this
    with pytest.raises(LLMError, match="did not answer within 0.3s"):
        LLMExtractor(clients(server.base_url, timeout_s=0.3)).extract(alice_and_bob())
    assert len(server.requests) == 1  # and it is not sent again past its deadline


def test_an_unreachable_endpoint_and_a_non_completion_body_raise_llm_error(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMError, match="could not reach the chat endpoint"):
        clients(f"http://127.0.0.1:{port}/v1").complete([{"role": "user", "content": "hi"}])

    server = serve(Reply(body='{"object": "list", "data": []}'))
    with pytest.raises(LLMError, match=r"without choices\[0\].message.content"):
        clients(server.base_url).complete([{"role": "user", "content": "hi"}])


def test_a_server_that_rejects_response_format_is_asked_again_without_it(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(CLASSIFIED, PERSONAL, HAPPENING, all_supported(3),
                   reject_response_format=True)

    got = LLMExtractor(clients(server.base_url)).extract(alice_and_bob())

    assert len(got) == 3
    sent = [("response_format" in r["body"]) for r in server.requests]
    assert sent == [True, False, False, False, False]  # learned once, not sent again


def test_json_mode_is_requested_from_servers_that_accept_it(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    server = serve(Reply(content='{"ok": true}'))

    assert clients(server.base_url).complete([{"role": "user", "content": "JSON please"}]) == \
        '{"ok": true}'
    body = server.requests[0]["body"]
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "test-model" and body["temperature"] == 0
    assert "authorization" not in {k.lower() for k in server.requests[0]["headers"]}


def test_the_api_key_is_sent_as_bearer_and_never_shown_in_errors(
        serve: Callable[..., StandInChatServer], clients: Callable[..., ChatClient]) -> None:
    key = "sk-test-0123456789"
    server = serve(Reply(content="{}"),
                   Reply(status=401, body=f'{{"error": "Incorrect API key provided: {key}"}}'))
    client = clients(server.base_url, api_key=key)

    client.complete([{"role": "user", "content": "hi"}])
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "hi"}])

    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {key}"
    assert info.value.status == 401 and "Incorrect API key provided: ***" in str(info.value)
    assert key not in str(info.value) and key not in repr(client)


def test_the_factory_builds_what_the_configuration_names(
        serve: Callable[..., StandInChatServer]) -> None:
    assert create_extractor(AgentConfig(extractor="off")) is None
    assert isinstance(create_extractor(AgentConfig(extractor="rules")), RulesExtractor)
    with pytest.raises(ConfigError, match="needs llm_base_url"):
        create_extractor(AgentConfig(extractor="llm"))

    server = serve(answer({"topic": "greetings", "kinds": []}))
    extractor = create_extractor(AgentConfig(
        extractor="llm", llm_base_url=server.base_url + "/", llm_model="qwen2.5:7b",
        llm_api_key="sk-x", llm_attempts=2))
    assert isinstance(extractor, LLMExtractor) and extractor.attempts == 2
    try:
        assert extractor.extract([EpisodeIn("e1", "hello", role="user")]) == []
    finally:
        extractor.close()
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "qwen2.5:7b"
    assert request["headers"]["Authorization"] == "Bearer sk-x"


def test_without_httpx_the_client_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)

    with pytest.raises(ConfigError, match=r'pip install "remem\[openai\]"'):
        ChatClient("http://127.0.0.1:1/v1", "m")
