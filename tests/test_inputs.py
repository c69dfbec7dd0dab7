"""Bad input is refused at the door with a ValidationError naming the field, and nothing
is written."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from remem import Config, Memory, ValidationError

LIMIT = 50


@pytest.fixture
def small(open_memory: Callable[..., Memory]) -> Memory:
    """A store with a 50-character limit and one episode already in it."""
    m = open_memory(config=Config(max_text_chars=LIMIT))
    m.add("already here", user_id="alice")
    m.flush()
    return m


def assert_refused(m: Memory, field: str, call: Callable[[], Any], *, says: str = "") -> None:
    before = m.stats()
    with pytest.raises(ValidationError) as err:
        call()
    assert isinstance(err.value, ValueError)
    assert field in str(err.value), str(err.value)
    assert err.value.field.startswith(field.split(".")[0])
    assert says in str(err.value)
    after = m.stats()
    assert after.episodes == before.episodes
    assert after.passages == before.passages
    assert after.jobs == before.jobs


@pytest.mark.parametrize(("messages", "field", "says"), [
    ("", "messages[0].content", "empty"),
    ("  \n\t ", "messages[0].content", "empty"),
    ("x" * (LIMIT + 1), "messages[0].content", f"limit of {LIMIT}"),
    ("lone \ud800 surrogate", "messages[0].content", "UTF-8"),
    ("nul \x00 byte", "messages[0].content", "control character"),
    ("escape \x1b[31m red", "messages[0].content", "control character"),
    ({"role": "user", "content": "hi", "colour": "red"}, "messages[0].colour", "not a known field"),
    ({"role": "user", "content": 123}, "messages[0].content", "string"),
    ({"role": "user", "text": ["a", "list"]}, "messages[0].text", "valid string"),
    ({"role": "user"}, "messages[0].content", "missing"),
    ({"role": "user", "content": "a", "text": "b"}, "messages[0]", "both"),
    ({"role": 7, "content": "hi"}, "messages[0].role", "valid string"),
    ({"role": "us\x00er", "content": "hi"}, "messages[0].role", "control character"),
    ({"speaker": "\udcff", "content": "hi"}, "messages[0].speaker", "UTF-8"),
    ({"role": "user", "content": "hi", "timestamp": "last tuesday"}, "messages[0].timestamp",
     "ISO 8601"),
    ({"role": "user", "content": "hi", "metadata": "turn 3"}, "messages[0].metadata", "dictionary"),
    ({"role": "user", "content": "hi", "metadata": {"k": "\ud800"}}, "messages[0].metadata",
     "cannot be stored as JSON"),
    ({"role": "user", "content": "hi", "metadata": {"when": datetime(2023, 5, 8)}},
     "messages[0].metadata", "JSON"),
    ([], "messages", "empty"),
    (42, "messages", "got int"),
    (b"bytes are not text", "messages", "got bytes"),
    ([{"role": "user", "content": "fine"}, 3.5], "messages[1]", "got float"),
])
def test_a_bad_message_is_refused_and_nothing_is_written(
    small: Memory, messages: Any, field: str, says: str
) -> None:
    assert_refused(small, field, lambda: small.add(messages, user_id="alice"), says=says)


def test_a_text_at_the_limit_is_accepted(small: Memory) -> None:
    small.add("x" * LIMIT, user_id="alice")
    assert small.stats().episodes == 2


def test_one_bad_message_in_a_list_stops_the_whole_call(small: Memory) -> None:
    messages = [{"role": "user", "content": "first"}, {"role": "user", "content": "second"},
                {"role": "user", "content": "third \x00"}]
    assert_refused(small, "messages[2].content", lambda: small.add(messages, user_id="alice"))
    assert [i.text for i in small.list(user_id="alice", include_episodes=True)] == ["already here"]


@pytest.mark.parametrize(("kwargs", "field", "says"), [
    ({"user_id": 5}, "user_id", "string"),
    ({"user_id": "  "}, "user_id", "empty"),
    ({"org_id": ["acme"]}, "org_id", "string"),
    ({"project": "web\x07"}, "project", "control character"),
    ({"session_id": "s\ud800"}, "session_id", "UTF-8"),
    ({"timestamp": "2023-13-45"}, "timestamp", "ISO 8601"),
    ({"timestamp": 1683554160}, "timestamp", "ISO 8601 string or datetime"),
    ({"metadata": ["not", "a", "dict"]}, "metadata", "dict"),
    ({"metadata": {"n": float("nan")}}, "metadata", "JSON"),
    ({"metadata": {"tags": {"a", "b"}}}, "metadata", "JSON"),
])
def test_bad_call_options_are_refused(small: Memory, kwargs: dict[str, Any], field: str,
                                      says: str) -> None:
    kwargs = {"user_id": "alice", **kwargs}
    assert_refused(small, field, lambda: small.add("hello", **kwargs), says=says)


def test_an_unknown_keyword_is_a_type_error(small: Memory) -> None:
    with pytest.raises(TypeError, match="colour"):
        small.add("hello", user_id="alice", colour="red")  # type: ignore[call-arg]
    assert small.stats().episodes == 1


@pytest.mark.parametrize(("events", "field"), [
    ([{"type": "tool_call", "command": "ls"}, {"type": "nope"}], "events[1].type"),
    ({"type": "error"}, "events[0].error.message"),
    ({"type": "tool_call", "command": "ls", "timestamp": "soon"}, "events[0].tool_call.timestamp"),
    ({"type": "tool_call", "command": "ls", "output": "bad \ud800"}, "events[0]"),
    ([], "events"),
    ("ls -la", "events"),
])
def test_bad_events_are_refused(small: Memory, events: Any, field: str) -> None:
    assert_refused(small, field, lambda: small.add_events(events, user_id="alice"))


def test_control_characters_in_event_output_are_stripped_not_refused(small: Memory) -> None:
    r = small.add_events({"type": "tool_call", "command": "pytest",
                          "output": "\x1b[31mFAILED\x1b[0m test_x \x00"}, user_id="alice")
    assert small.get(r.episode_ids[0]).text == "Bash: pytest\nFAILED test_x "


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"k": 0}, "k"),
    ({"k": "10"}, "k"),
    ({"budget_tokens": 0}, "budget_tokens"),
    ({"as_of": "the day before"}, "as_of"),
    ({"since": "2023/05/08"}, "since"),
    ({"until": "tomorrow"}, "until"),
    ({"user_id": 3}, "user_id"),
])
def test_bad_search_options_are_refused(small: Memory, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        small.search("hello", **kwargs)


@pytest.mark.parametrize("query", ["", "   ", "a\x00b", "\ud800", "q" * (LIMIT + 1)])
def test_a_bad_query_is_refused(small: Memory, query: str) -> None:
    with pytest.raises(ValidationError, match="query"):
        small.search(query, user_id="alice")


def test_bad_list_options_are_refused(small: Memory) -> None:
    with pytest.raises(ValidationError, match="limit"):
        small.list(limit=0)
    with pytest.raises(ValidationError, match="limit"):
        small.list(limit=100_000)
    with pytest.raises(ValidationError, match="cursor"):
        small.list(cursor="page-2")


def test_bad_update_and_forget_arguments_are_refused(small: Memory) -> None:
    eid = small.list(include_episodes=True)[0].id
    with pytest.raises(ValidationError, match="text"):
        small.update(eid, text="", user_id="alice")
    with pytest.raises(ValidationError, match="reason"):
        small.forget(eid, reason="because \ud800", user_id="alice")
    assert small.get(eid).status == "active"
    assert [h.action for h in small.history(eid)] == ["created"]


def test_metadata_nested_too_deep_is_refused_not_a_crash(hash_mem: Memory) -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    with pytest.raises(ValidationError) as err:
        hash_mem.add([{"role": "user", "content": "hi", "metadata": deep}], user_id="u")
    assert "nested" in str(err.value)
    assert hash_mem.stats().episodes == 0


def test_a_cursor_past_any_row_is_refused(hash_mem: Memory) -> None:
    with pytest.raises(ValidationError):
        hash_mem.list(user_id="u", cursor=str(2**70))
