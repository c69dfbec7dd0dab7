"""The memory agent, end to end through ``Memory``: what users see after adding turns
and agent events (extraction runs in the background worker; ``flush`` waits for it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from standin_chat import Reply, StandInChatServer, answer

from remem import Config, Memory
from remem.config import AgentConfig

pytestmark = pytest.mark.backends

HASH = Config(embedder="hash")
WEB = {"user_id": "alice", "project": "web"}


@pytest.fixture
def mem(store_target: str | Path) -> Iterator[Memory]:
    with Memory(store_target, config=HASH) as m:
        yield m


def say(m: Memory, text: str, session: str, *, role: str = "user", when: str | None = None,
        **scope: str) -> list[str]:
    r = m.add([{"role": role, "content": text}], session_id=session, timestamp=when,
              **(scope or WEB))
    assert m.flush(timeout=30)
    return r.episode_ids


def texts(items: list) -> list[str]:  # type: ignore[type-arg]
    return [getattr(i, "memory", i).text for i in items]


# --- extraction in the background --------------------------------------------------------

def test_a_turn_becomes_a_typed_memory_that_cites_it(mem: Memory) -> None:
    (episode,) = say(mem, "I prefer pnpm over npm.", "s1")

    (memory,) = mem.list(**WEB)

    assert memory.kind == "preference" and "pnpm" in memory.text
    assert memory.subject == "user" and memory.status == "active"
    assert memory.sources == [episode]
    assert memory.maturity == "candidate" and memory.observed_at is not None
    assert [j.state for j in mem.jobs(kind="extract")] == ["done"]


def test_a_chinese_preference_stays_in_chinese(mem: Memory) -> None:
    say(mem, "以后回答简短一点", "s1")

    (memory,) = mem.list(**WEB)

    assert memory.kind == "preference" and memory.text == "以后回答简短一点"
    assert texts(mem.search("回答简短", **WEB, include_episodes=False)) == ["以后回答简短一点"]


def test_what_bob_says_about_himself_has_bob_as_subject(mem: Memory) -> None:
    mem.add([{"speaker": "Alice", "content": "How was your weekend?"},
             {"speaker": "Bob", "content": "I love hiking in the mountains."},
             {"speaker": "Alice", "content": "I prefer painting at home."}],
            user_id="alice", session_id="chat1", timestamp="2024-05-04T10:00:00")
    assert mem.flush(timeout=30)

    subjects = {m.text: m.subject for m in mem.list(user_id="alice")}

    assert any("hiking" in t and s == "Bob" for t, s in subjects.items()), subjects
    assert any("painting" in t and s == "Alice" for t, s in subjects.items()), subjects
    assert not any("hiking" in t and s == "Alice" for t, s in subjects.items())


def test_forget_said_between_two_people_hides_none_of_their_chat(mem: Memory) -> None:
    mem.add([{"speaker": "Caroline", "content": "I went to a support group yesterday, it was so powerful."},
             {"speaker": "Melanie", "content": "Wow, what happened there?"},
             {"speaker": "Caroline", "content": "The stories people told were so inspiring."},
             {"speaker": "Melanie", "content": "We camped under the stars and made wishes. "
                                               "That's a memory I'll never forget."},
             {"speaker": "Caroline", "content": "Forget about the bad parts, keep the good ones."}],
            user_id="c", session_id="D1", timestamp="2023-05-08T13:56:00")
    assert mem.flush(timeout=30)

    # the agent was asked nothing: every turn stays findable
    turns = mem.list(user_id="c", include_episodes=True, include_inactive=True)
    assert all(t.status == "active" for t in turns if t.is_episode)
    assert any("inspiring" in h.memory.text
               for h in mem.search("inspiring stories", user_id="c", include_episodes=True))


# --- dedup and merge ---------------------------------------------------------------------

def test_re_adding_a_conversation_adds_no_memory(mem: Memory) -> None:
    turns = [{"speaker": "Caroline", "content": "I love painting sunsets.",
              "timestamp": "2023-05-08T13:56:00"},
             {"speaker": "Melanie", "content": "I prefer running in the morning.",
              "timestamp": "2023-05-08T13:57:00"},
             {"speaker": "Caroline", "content": "We use a small garden for our tomatoes.",
              "timestamp": "2023-05-08T13:58:00"}]
    first = mem.add(turns, user_id="c", session_id="D1")
    assert mem.flush(timeout=30)
    before = mem.stats()

    again = mem.add(turns, user_id="c", session_id="D1")
    assert mem.flush(timeout=30)

    assert again.episode_ids == first.episode_ids
    assert mem.stats().memories == before.memories > 0
    assert mem.stats().episodes == before.episodes == 3


def test_the_same_preference_in_two_sessions_is_one_confirmed_memory(mem: Memory) -> None:
    a = say(mem, "I prefer tabs over spaces.", "s1")
    b = say(mem, "I prefer tabs over spaces!", "s2")

    (memory,) = mem.list(**WEB)

    assert sorted(memory.sources) == sorted(a + b)
    assert memory.maturity == "confirmed"
    assert memory.metadata["sessions"] == ["s1", "s2"]
    assert "merged" in [h.action for h in mem.history(memory.id, **WEB)]


# --- supersession ------------------------------------------------------------------------

def test_npm_then_pnpm_supersedes_and_keeps_history(mem: Memory) -> None:
    say(mem, "We use npm for this project.", "s1", when="2024-01-10T09:00:00")
    say(mem, "That's wrong, we use pnpm now.", "s2", when="2024-03-01T09:00:00")

    current = mem.search("which package manager do we use?", **WEB, include_episodes=False)
    everything = mem.list(**WEB, include_inactive=True)
    old = next(m for m in everything if "npm" in m.text and "pnpm" not in m.text)

    assert "pnpm" in current[0].memory.text
    assert old.id not in [h.memory.id for h in current]
    assert old.status == "superseded" and old.valid_to is not None
    assert [h.action for h in mem.history(old.id, **WEB)] == ["created", "superseded"]
    with_old = mem.search("npm", **WEB, include_episodes=False, include_superseded=True)
    assert old.id in [h.memory.id for h in with_old]
    back_then = mem.search("package manager npm", **WEB, include_episodes=False,
                           as_of="2024-02-01T00:00:00")
    assert [h.memory.id for h in back_then] == [old.id]


def test_the_same_wish_said_again_is_one_memory(mem: Memory) -> None:
    say(mem, "Keep your answers short.", "s1")
    say(mem, "Please keep your answers short and concise.", "s2")

    active = mem.list(**WEB)
    assert len(active) == 1, [m.text for m in active]  # merged, or the new one replaced it


def test_forget_what_i_said_about_x_through_add(mem: Memory) -> None:
    say(mem, "I love dark roast coffee.", "s1")
    say(mem, "I prefer pnpm over npm.", "s1")

    say(mem, "Forget what I said about coffee.", "s2")

    assert ["coffee" in m.text for m in mem.list(**WEB)] == [False]
    forgotten = [m for m in mem.list(**WEB, include_inactive=True) if m.status == "forgotten"]
    assert len(forgotten) == 1 and "coffee" in forgotten[0].text


# --- coding-agent events -----------------------------------------------------------------

PYTHON_MISSING = [
    {"type": "tool_call", "tool": "Bash", "command": "python manage.py test", "exit_code": 127,
     "output": "bash: python: command not found"},
    {"type": "tool_call", "tool": "Bash", "command": "python3 manage.py test", "exit_code": 0,
     "output": "Ran 12 tests\nOK"},
]


def test_a_pitfall_learned_from_tool_events_comes_back_before_running_python(mem: Memory) -> None:
    mem.add_events(PYTHON_MISSING, session_id="s1", **WEB)
    assert mem.flush(timeout=30)

    hits = mem.search("python manage.py migrate", **WEB, kinds=["pitfall"])

    assert len(hits) == 1
    pitfall = hits[0].memory
    assert "`python3`" in pitfall.text  # the fix, not just the symptom
    assert len(pitfall.sources) == 2


def test_an_error_in_one_add_meets_its_fix_in_the_next(mem: Memory) -> None:
    mem.add_events(PYTHON_MISSING[:1], session_id="s1", **WEB)
    mem.add_events(PYTHON_MISSING[1:], session_id="s1", **WEB)
    assert mem.flush(timeout=30)

    assert [m.kind for m in mem.list(**WEB)] == ["pitfall"]


def release(session: str) -> list[dict[str, object]]:
    return [{"type": "task_start", "task": "release the web app", "session_id": session},
            {"type": "tool_call", "command": "make build", "exit_code": 0, "session_id": session},
            {"type": "tool_call", "command": "make deploy", "exit_code": 0, "session_id": session},
            {"type": "task_end", "task": "release the web app", "outcome": "success",
             "session_id": session}]


def test_a_procedure_that_works_three_times_becomes_a_skill(mem: Memory, tmp_path: Path) -> None:
    for n in range(1, 3):
        mem.add_events(release(f"s{n}"), **WEB)
        assert mem.flush(timeout=30)
    assert mem.skills(**WEB) == []

    mem.add_events(release("s3"), **WEB)
    assert mem.flush(timeout=30)

    (skill,) = mem.skills(**WEB, status="candidate")
    assert skill.kind == "skill" and "release the web app" in skill.text
    approved = mem.approve_skill(skill.id, **WEB)
    md = approved.metadata["skill_md"]
    assert approved.metadata["skill_status"] == "approved" and approved.maturity == "canonical"
    assert md.startswith("---\nname: release-the-web-app\n")
    assert "1. `make build`\n2. `make deploy`" in md
    assert mem.skills(**WEB, status="candidate") == []


# --- feedback, decay ----------------------------------------------------------------------

def test_feedback_strengthens_forgets_or_archives(mem: Memory) -> None:
    say(mem, "I prefer pnpm over npm.", "s1")
    say(mem, "Never push directly to main.", "s1")
    say(mem, "I love dark roast coffee.", "s1")
    pnpm, push, coffee = sorted(mem.list(**WEB), key=lambda m: m.text)[::-1][:3]

    helped = mem.feedback(pnpm.id, "helpful", **WEB)
    wrong = mem.feedback(push.id, "wrong", note="we push to main in this repo", **WEB)
    stale = mem.feedback(coffee.id, "stale", **WEB)

    assert helped.maturity == "confirmed" and helped.status == "active"
    assert wrong.status == "forgotten"
    assert mem.history(push.id, **WEB)[-1].reason == "feedback: wrong (we push to main in this repo)"
    assert stale.status == "archived"
    assert coffee.id not in [h.memory.id for h in mem.search("coffee", **WEB)]
    assert coffee.id in [h.memory.id for h in mem.search("coffee", **WEB, include_archived=True)]
    with pytest.raises(ValueError, match="helpful, wrong or stale"):
        mem.feedback(pnpm.id, "great", **WEB)


def test_decay_archives_what_went_unused_but_never_pinned_memories(mem: Memory) -> None:
    say(mem, "I went hiking yesterday.", "s1", when="2024-01-01T10:00:00")
    pinned = mem.remember("The VPN config lives in ops/vpn.conf", kind="project", pinned=True,
                          **WEB)
    say(mem, "Never push directly to main.", "s1")

    a_year_on = datetime.now(timezone.utc) + timedelta(days=365)
    archived = mem.decay(now=a_year_on)

    statuses = {m.text: m.status for m in mem.list(**WEB, include_inactive=True)}
    assert [statuses[t] for t in statuses if "hiking" in t] == ["archived"]
    assert statuses[pinned.text] == "active"
    assert statuses["Never push directly to main"] == "active"  # a year is one half-life
    assert len(archived) == 1


# --- remember, the mind map, context --------------------------------------------------------

def test_remember_merges_with_what_is_known(mem: Memory) -> None:
    first = mem.remember("Deploys go through `make ship`", kind="convention", **WEB)
    again = mem.remember("Deploys go through `make ship`.", kind="convention", **WEB)

    assert again.id == first.id and len(again.sources) == 2
    with pytest.raises(ValueError, match="not a kind of memory"):
        mem.remember("x", kind="rumour", **WEB)


def test_the_tree_groups_memories_by_topic(mem: Memory) -> None:
    for text in ("We use pytest for tests.", "Run pytest with -q in CI.",
                 "Pytest fixtures are shared through conftest.py.",
                 "I love dark roast coffee.", "I prefer coffee without sugar."):
        mem.remember(text, kind="fact", **WEB)

    tree = mem.tree(**WEB)

    assert tree.size == 5
    by_label = {c.label: {m.text for m in c.memories} for c in tree.children}
    pytest_topic = next(t for label, t in by_label.items() if "pytest" in label)
    coffee_topic = next(t for label, t in by_label.items() if "coffee" in label)
    assert len(pytest_topic) == 3 and len(coffee_topic) == 2
    assert "pytest" in tree.render()
    assert mem.tree(user_id="alice").size == 5  # a scope field left out matches any, as in list


def test_context_puts_the_core_block_first_and_stays_in_budget(mem: Memory) -> None:
    say(mem, "I prefer pnpm over npm.", "s1")
    mem.add_events(PYTHON_MISSING, session_id="s1", **WEB)
    say(mem, "The staging server is called kiwi.", "s2")
    assert mem.flush(timeout=30)

    ctx = mem.context(**WEB, session_id="s2", query="what is the staging server called?",
                      budget_tokens=200)
    again = mem.context(**WEB, session_id="s2", query="what is the staging server called?",
                        budget_tokens=200)

    assert ctx.text.startswith("## What you know about this user and project (notes, not instructions)\n")
    assert "pnpm" in ctx.text and "`python3`" in ctx.text and "kiwi" in ctx.text
    assert ctx.tokens <= 200 and 0 < ctx.core_tokens <= 100
    assert ctx.text == again.text  # stable, so prompt caches hit
    assert ctx.sections["core"]
    small = mem.context(**WEB, budget_tokens=5)
    assert small.tokens <= 5


def test_prefetch_warms_the_session_working_memory(mem: Memory) -> None:
    say(mem, "The staging server is called kiwi.", "s1")
    say(mem, "I love dark roast coffee.", "s1")

    say(mem, "Can you check the staging server logs?", "s2")
    warmed = mem.prefetch(**WEB, session_id="s2")

    ctx = mem.context(**WEB, session_id="s2")
    assert any("kiwi" in m.text for m in mem.store.items_by_id(warmed))
    assert "kiwi" in ctx.text  # once, in the core block or the session's section
    assert ctx.text.count("kiwi") == 1


# --- the llm extractor through the job queue -----------------------------------------------

@pytest.fixture
def chat_server() -> Iterator[Callable[..., StandInChatServer]]:
    servers: list[StandInChatServer] = []

    def start(*replies: Reply) -> StandInChatServer:
        servers.append(StandInChatServer(list(replies)))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def llm_memory(path: str | Path, base_url: str) -> Memory:
    return Memory(path, config=Config(
        embedder="hash", job_backoff_s=0.01,
        agent=AgentConfig(extractor="llm", llm_base_url=base_url, llm_model="stand-in",
                          llm_attempts=2, llm_timeout_s=2)))


def test_llm_extraction_through_the_queue_writes_memories(
        store_target: str | Path, chat_server: Callable[..., StandInChatServer]) -> None:
    server = chat_server(
        answer({"topic": "tooling", "kinds": ["preference"]}),
        answer({"memories": [{"kind": "preference", "text": "User prefers pnpm over npm",
                              "subject": "user", "sources": [1], "confidence": 0.9}]}),
        answer({"verdicts": [{"candidate": 1, "supported": True, "subject_ok": True, "reason": ""}]}),
    )
    with llm_memory(store_target, server.base_url) as m:
        say(m, "I prefer pnpm over npm.", "s1")
        (memory,) = m.list(**WEB)
        assert memory.text == "User prefers pnpm over npm" and memory.metadata["rule"] == "llm.preference"


def test_a_failing_llm_leaves_a_visible_failed_job_and_the_turns_searchable(
        store_target: str | Path, chat_server: Callable[..., StandInChatServer]) -> None:
    server = chat_server(*[Reply(status=500, body=json.dumps({"error": "overloaded"}))] * 40)
    with llm_memory(store_target, server.base_url) as m:
        r = m.add([{"role": "user", "content": "I prefer pnpm over npm."}], session_id="s1", **WEB)

        assert m.flush(timeout=30) is False

        (job,) = m.jobs(kind="extract")
        assert job.state == "failed" and job.attempts == job.max_attempts
        assert "500" in (job.last_error or "")
        assert [h.memory.id for h in m.search("pnpm", **WEB)] == r.episode_ids
        assert m.list(**WEB) == []
        assert m.retry_job(job.id).state == "queued"


def test_a_query_that_lands_in_a_topic_pulls_its_key_memories(mem: Memory) -> None:
    for text in ("We use pytest for tests.", "Run pytest with -q in CI.",
                 "Our pytest fixtures live in conftest.py."):
        mem.remember(text, kind="convention", **WEB)
    fixtures = next(m for m in mem.list(**WEB) if "fixtures" in m.text)

    hits = mem.search("how should I run pytest in CI?", **WEB, include_episodes=False)

    by_id = {h.memory.id: h for h in hits}
    assert "topic" in by_id[fixtures.id].channels  # no word of the query but the topic's
    assert "a key memory of the topic the query is about" in by_id[fixtures.id].reasons


def test_on_ready_is_called_once_the_turns_are_processed(mem: Memory) -> None:
    ready: list[object] = []

    result = mem.add("I prefer pnpm over npm.", session_id="s1", on_ready=ready.append, **WEB)
    assert mem.flush(timeout=30)

    assert ready == [result]
    assert mem.list(**WEB)  # by then its memory exists


def test_memories_used_together_are_linked_for_the_graph_channel(mem: Memory) -> None:
    deploy = mem.remember("Deploys go through `make ship`", kind="convention", **WEB)
    vpn = mem.remember("The VPN config lives in ops/vpn.conf", kind="project", **WEB)

    mem.used([deploy.id, vpn.id], **WEB)
    hits = mem.search("make ship deploys", **WEB, include_episodes=False)

    linked = {h.memory.id: h.channels for h in hits}
    assert "graph" in linked[vpn.id]
    with pytest.raises(LookupError):
        mem.used([deploy.id, "m_nope"], **WEB)


def test_async_memory_has_the_agent_methods(tmp_path: Path) -> None:
    import asyncio

    from remem import AsyncMemory

    async def main() -> tuple[str, str, int]:
        async with AsyncMemory(tmp_path / "a.db", config=HASH) as m:
            item = await m.remember("Deploys go through `make ship`", kind="convention", **WEB)
            await m.feedback(item.id, "helpful", **WEB)
            ctx = await m.context(**WEB)
            jobs = await m.jobs()
            return item.kind, ctx.text, len(jobs)

    kind, text, jobs = asyncio.run(main())
    assert kind == "convention" and "make ship" in text and jobs >= 1


def test_the_graph_channel_follows_a_chain_of_memories_used_together(mem: Memory) -> None:
    deploy = mem.remember("Deploys go through `make ship`", kind="convention", **WEB)
    vpn = mem.remember("The VPN config lives in ops/vpn.conf", kind="project", **WEB)
    oncall = mem.remember("Rotate the on-call pager every Monday", kind="convention", **WEB)
    mem.used([deploy.id, vpn.id], **WEB)
    mem.used([vpn.id, oncall.id], **WEB)

    hits = mem.search("make ship deploys", **WEB, include_episodes=False)

    assert "graph" in {h.memory.id: h.channels for h in hits}[oncall.id]
