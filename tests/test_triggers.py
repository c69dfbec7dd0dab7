"""Triggers queue background work when something happens: a tool error, a session's
start or end, a quiet session, a timer; a developer adds one in a few lines."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Config, Memory
from remem.schedule import Trigger

pytestmark = pytest.mark.backends

WEB = {"user_id": "alice", "project": "web"}


@pytest.fixture
def mem(store_target: str | Path) -> Iterator[Memory]:
    with Memory(store_target, config=Config(embedder="hash", run_worker=False)) as m:
        yield m


def kinds(m: Memory, state: str = "queued") -> list[str]:
    return sorted(j.kind for j in m.jobs(state=state))


def test_a_turn_queues_extraction_and_one_prefetch_per_session(mem: Memory) -> None:
    mem.add("I prefer pnpm.", session_id="s1", **WEB)
    mem.add("And tabs, not spaces.", session_id="s1", **WEB)
    mem.add("No session here.", **WEB)

    assert kinds(mem) == ["embed", "embed", "embed", "extract", "extract", "extract", "prefetch"]
    assert mem.flush(timeout=30)
    assert kinds(mem, "done").count("prefetch") == 1


def test_a_trigger_on_tool_errors_is_a_few_lines(mem: Memory) -> None:
    mem.triggers.add(Trigger("prefetch-on-error", on="tool_error", job="prefetch",
                             coalesce=True, needs_session=True))
    mem.add_events([{"type": "tool_call", "command": "make test", "exit_code": 0}], session_id="s1", **WEB)
    mem.flush(timeout=30)
    mem.add_events([{"type": "tool_call", "command": "make lint", "exit_code": 2}], session_id="s1", **WEB)

    queued = mem.jobs(state="queued", kind="prefetch")
    assert len(queued) == 1  # the error asked for one; the turn's own prefetch coalesced with it


def test_session_end_fires_its_triggers(mem: Memory) -> None:
    mem.triggers.add(Trigger("decay-at-end", on="session_end", job="decay"))

    queued = mem.end_session(session_id="s1", **WEB)

    assert [j.kind for j in mem.jobs(state="queued")] == ["decay"] and len(queued) == 1
    assert mem.flush(timeout=30)
    assert mem.jobs(kind="decay")[0].result == {"archived": 0}


def test_a_timer_fires_once_per_period_whatever_the_ticks(mem: Memory) -> None:
    now = time.time()
    first = mem.triggers.tick(now)
    again = mem.triggers.tick(now + 60)
    next_day = mem.triggers.tick(now + 86400)

    assert len(first) == 1 and again == [] and len(next_day) == 1
    assert kinds(mem) == ["decay", "decay"]


def test_an_idle_trigger_fires_once_per_quiet_spell(mem: Memory) -> None:
    mem.triggers.add(Trigger("prefetch-when-idle", on="idle", job="prefetch", idle_s=60))
    mem.add("Let's look at the deploy script.", session_id="s9", **WEB)
    now = time.time()

    mem.triggers.tick(now)  # not quiet for a minute yet
    mem.triggers.tick(now + 120)
    mem.triggers.tick(now + 180)  # the same quiet spell

    prefetches = mem.jobs(kind="prefetch")
    assert len(prefetches) == 2  # the turn's own, and one for the quiet spell
