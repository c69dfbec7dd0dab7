"""The extraction layer: trained heads for English and Chinese turns, rules for agent
events, dates, grounding, and precision and recall on the bundled labelled corpus."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from typer.testing import CliRunner

from remem.cli import app
from remem.extract import (
    Candidate,
    EpisodeIn,
    RulesExtractor,
    extract_checked,
    find_date,
    ground,
)
from remem.extract.evaluate import bundled_corpus, load_corpus, match, run
from remem.extract.events import similar
from remem.model import ErrorEvent, FileEdit, MemoryItem, TaskEnd, TaskStart, ToolCall, render_event
from remem.text import has_cjk

WED = datetime(2024, 5, 8, 14, 0, tzinfo=timezone.utc)  # a Wednesday
RULES = RulesExtractor()


def turn(text: str, role: str = "user", *, when: datetime = WED, eid: str = "e1",
         project: str | None = None) -> EpisodeIn:
    return EpisodeIn(id=eid, text=text, role=role, event_time=when, session_id="s",
                     project=project)


def one(text: str, role: str = "user", **kw: Any) -> Candidate:
    found = RULES.extract([turn(text, role, **kw)])
    assert len(found) == 1, [c.text for c in found]
    return found[0]


def events(*raw: Any, project: str | None = None, session: str = "s1") -> list[EpisodeIn]:
    out = []
    for i, ev in enumerate(raw):
        ev = ev.model_copy(update={"session_id": ev.session_id or session,
                                   "timestamp": WED + timedelta(minutes=i)})
        out.append(EpisodeIn(id=f"v{i}", text=render_event(ev), kind="event", role="tool",
                             event=ev, event_time=ev.timestamp, session_id=ev.session_id,
                             project=project))
    return out


def call(command: str, code: int, output: str | None = None) -> ToolCall:
    return ToolCall(type="tool_call", command=command, exit_code=code, output=output)


# --- turns: English ---------------------------------------------------------------------

#: Cases the shipped heads get wrong; each is still run (at most one memory), and the list
#: must stay short: a test below fails when more than one case in ten is here.
EN_KNOWN_MISSES = {"Can you answer in Chinese from now on?", "Let's go with SQLite for now."}
ZH_KNOWN_MISSES = {"别自动提交代码。"}


@pytest.mark.parametrize(("text", "kind", "words"), [
    ("I prefer pnpm over npm.", "preference", ["prefers", "pnpm"]),
    ("Please always run ruff before you commit.", "preference", ["always run ruff"]),
    ("Never push directly to main.", "preference", ["never push"]),
    ("From now on, write commit messages in English.", "preference", ["commit messages"]),
    ("Call me Sam.", "preference", ["Sam"]),
    ("Keep your answers short.", "preference", ["short"]),
    ("Can you answer in Chinese from now on?", "preference", ["Chinese"]),
    ("I don't like it when you add type: ignore comments.", "preference", ["does not like"]),
    ("We use black with a line length of 100.", "convention", ["black", "100"]),
    ("Our convention is that every module defines __all__.", "convention", ["__all__"]),
    ("Tests go in tests/ and mirror the package.", "convention", ["tests/"]),
    ("Use snake_case for function names.", "convention", ["snake_case"]),
    ("Every PR needs a changelog entry.", "convention", ["changelog"]),
    ("We don't use ORMs here.", "convention", ["ORMs"]),
    ("The project uses Python 3.11.", "project", ["Python 3.11"]),
    ("We're on PostgreSQL 15.", "project", ["PostgreSQL"]),
    ("Run the tests with `make test`.", "project", ["make test"]),
    ("You can build it with `cargo build --release`.", "project", ["cargo build"]),
    ("We decided to drop Python 3.8 because it is end of life.", "decision",
     ["drop Python 3.8", "because"]),
    ("Let's go with SQLite for now.", "decision", ["SQLite"]),
    ("I'm a nurse.", "profile", ["User is a nurse"]),
    ("I live in Lisbon.", "profile", ["User lives in Lisbon"]),
    ("My daughter plays the cello.", "profile", ["User's daughter"]),
    ("Watch out: the tests fail if TZ isn't UTC.", "pitfall", ["TZ"]),
    ("To release, run `make dist`, then `twine upload dist/*`.", "procedure", ["make dist"]),
])
def test_english_rules(text: str, kind: str, words: list[str]) -> None:
    found = RULES.extract([turn(text)])
    assert len(found) <= 1, [c.text for c in found]
    if text in EN_KNOWN_MISSES:  # the heads' errors, measured in BENCHMARKS.md
        return
    (cand,) = found
    assert cand.kind == kind, cand
    for word in words:
        assert word.lower() in cand.text.lower(), cand.text
    assert cand.source_ids == ["e1"] and cand.rule == f"heads.{kind}"


def test_project_memories_are_about_the_project() -> None:
    assert one("The project uses Python 3.11.", project="shop-api").subject == "shop-api"
    assert one("We use black.").subject == "project"
    assert one("I prefer tabs.").subject == "user"


@pytest.mark.parametrize("text", [
    "Can you fix the failing test in test_orders.py?", "Thanks, that works!", "ok",
    "Do we use pnpm or yarn here?", "Should we always use pathlib?", "I like that approach.",
    "Please run the tests again.", "Never mind, I found it.",
    "I'm not sure this is right.", "I'm going to grab lunch.", "Don't worry about it.",
    "Let me check.", "I really like how you structured that module.",
    "这个函数是干什么的？", "好的", "我们用什么数据库？", "别急，我再想想。", "以后再说吧。",
    "我喜欢这个方案，就这么办。", "我是说第二个文件。",
])
def test_questions_and_small_talk_yield_nothing(text: str) -> None:
    assert RULES.extract([turn(text)]) == []


def test_the_agent_states_project_facts_but_not_preferences() -> None:
    assert one("The project uses Django 4.2.", role="assistant").kind == "project"
    assert RULES.extract([turn("I prefer short functions.", role="assistant")]) == []


# --- turns: Chinese ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "kind", "words"), [
    ("以后都用 pnpm 装依赖。", "preference", ["pnpm"]),
    ("不要在代码里写中文注释。", "preference", ["中文注释"]),
    ("别自动提交代码。", "preference", ["提交"]),
    ("我喜欢简洁的代码风格。", "preference", ["用户喜欢简洁"]),
    ("我不喜欢用 lambda 写复杂逻辑。", "preference", ["用户不喜欢", "lambda"]),
    ("我讨厌过度设计。", "preference", ["过度设计"]),
    ("请总是加上类型注解。", "preference", ["类型注解"]),
    ("永远不要删除迁移文件。", "preference", ["迁移文件"]),
    ("回答简短一点。", "preference", ["简短"]),
    ("用中文回答我。", "preference", ["中文"]),
    ("我们用 black 格式化代码。", "convention", ["black"]),
    ("我们的约定是所有接口都返回 JSON。", "convention", ["JSON"]),
    ("这个项目用的是 Python 3.11。", "project", ["3.11"]),
    ("我们决定用 Redis 做缓存，因为它够快。", "decision", ["Redis", "因为"]),
    ("我是一名护士。", "profile", ["护士"]),
    ("我住在杭州。", "profile", ["杭州"]),
    ("注意：本地跑测试要先启动 Docker。", "pitfall", ["Docker"]),
])
def test_chinese_rules(text: str, kind: str, words: list[str]) -> None:
    if text in ZH_KNOWN_MISSES:
        return
    cand = one(text)
    assert cand.kind == kind, cand
    for word in words:
        assert word in cand.text, cand.text
    assert cand.rule == f"heads.{kind}" and "zh" in cand.tags


def test_the_known_misses_stay_few() -> None:
    assert len(EN_KNOWN_MISSES) <= 3 and len(ZH_KNOWN_MISSES) <= 2


def test_a_chinese_preference_stays_chinese() -> None:
    cand = one("我不喜欢太长的回答。")
    assert cand.kind == "preference" and cand.subject == "user"
    assert has_cjk(cand.text) and "User" not in cand.text and "prefers" not in cand.text
    assert cand.text == "用户不喜欢太长的回答"


def test_two_clauses_of_one_instruction_are_one_memory() -> None:
    cand = one("以后都用 pnpm 装依赖，不要再用 npm 了。")
    assert cand.text == "以后都用 pnpm 装依赖，不要再用 npm 了"


def test_standing_rules_about_the_user_hold_in_every_project() -> None:
    assert one("Keep your answers short.", project="web").level == "user"
    assert one("用中文回答我。", project="web").level == "user"
    assert one("The project uses Python 3.11.", project="web").level == "project"


# --- who it is about --------------------------------------------------------------------

def test_speakers_in_a_chat_are_the_subjects_of_what_they_say_about_themselves() -> None:
    chat = [turn("Bob, how was the trip?", "Alice", eid="t0"),
            turn("Great! I moved to Lisbon last month, by the way.", "Bob", eid="t1"),
            turn("No way! I live in Berlin now.", "Alice", eid="t2"),
            turn("I'm a nurse at the Santa Maria hospital.", "Bob", eid="t3"),
            turn("I hate early mornings though.", "Bob", eid="t4"),
            turn("我不喜欢吃辣的。", "李雷", eid="t5")]
    found = {c.source_ids[0]: c for c in RULES.extract(chat)}
    assert set(found) == {"t1", "t2", "t3", "t4", "t5"}
    assert found["t1"].subject == "Bob" and found["t1"].text.startswith("Bob moved to Lisbon")
    assert found["t2"].subject == "Alice" and found["t2"].text == "Alice lives in Berlin now"
    assert found["t3"].subject == "Bob" and found["t3"].kind == "profile"
    assert (found["t4"].subject, found["t4"].kind) == ("Bob", "preference")
    assert found["t5"].text == "李雷不喜欢吃辣的" and found["t5"].subject == "李雷"


def test_the_user_role_is_the_subject_user() -> None:
    assert one("I'm a backend developer.", "user").subject == "user"
    assert one("I'm a backend developer.", "human").text == "User is a backend developer"


# --- dates ------------------------------------------------------------------------------

def test_relative_dates_are_resolved_against_the_turn_time() -> None:
    long_ago = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # a Monday
    cand = one("I went to a support group yesterday.", "Caroline", when=long_ago)
    assert cand.kind == "event" and cand.subject == "Caroline"
    assert cand.event_time is not None and cand.event_time.date().isoformat() == "2023-05-07"
    assert cand.text == "Caroline went to a support group on 7 May 2023"
    assert cand.observed_at == long_ago
    race = one("I ran a charity race last Saturday.", "Melanie", when=long_ago)
    assert race.event_time is not None and race.event_time.date().isoformat() == "2023-05-06"


def test_chinese_relative_dates() -> None:
    cand = one("我昨天去医院做了体检。")
    assert cand.kind == "event" and cand.text == "用户2024年5月7日去医院做了体检"
    assert cand.event_time is not None and cand.event_time.date().isoformat() == "2024-05-07"
    trip = one("上周我们去爬了黄山。")
    assert trip.event_time is not None and trip.event_time.date().isoformat() == "2024-04-29"


@pytest.mark.parametrize(("phrase", "start", "grain"), [
    ("yesterday", "2024-05-07", "day"), ("the day before yesterday", "2024-05-06", "day"),
    ("last week", "2024-04-29", "week"), ("last weekend", "2024-05-04", "weekend"),
    ("last month", "2024-04-01", "month"), ("last year", "2023-01-01", "year"),
    ("two weeks ago", "2024-04-24", "about"), ("3 days ago", "2024-05-05", "about"),
    ("last Saturday", "2024-05-04", "day"), ("on May 7, 2023", "2023-05-07", "day"),
    ("昨天", "2024-05-07", "day"), ("前天", "2024-05-06", "day"), ("上周", "2024-04-29", "week"),
    ("上周三", "2024-05-01", "day"), ("上个月", "2024-04-01", "month"), ("去年", "2023-01-01", "year"),
    ("三天前", "2024-05-05", "about"), ("2023年5月7日", "2023-05-07", "day"),
])
def test_find_date(phrase: str, start: str, grain: str) -> None:
    found = find_date(f"it was {phrase} I think", WED)
    assert found is not None and found.phrase == phrase
    assert (found.start.date().isoformat(), found.grain) == (start, grain)
    assert found.start.tzinfo is not None


def test_find_date_needs_a_reference_time_and_a_date() -> None:
    assert find_date("yesterday", None) is None
    assert find_date("we use May as a codename", WED) is None


# --- agent events -----------------------------------------------------------------------

def test_a_missing_command_and_its_working_variant_give_a_pitfall() -> None:
    found = RULES.extract(events(
        call("python manage.py test", 127, "bash: python: command not found"),
        call("python3 manage.py test", 0, "Ran 42 tests\nOK")))
    assert len(found) == 1
    pit = found[0]
    assert pit.kind == "pitfall" and pit.subject == "environment"
    assert "`python3`" in pit.text and "python3 manage.py test" in pit.text
    assert "command not found" in pit.text
    assert pit.entities == ["python", "python3"] and pit.source_ids == ["v0", "v1"]
    with_project = RULES.extract(events(call("python app.py", 127), call("python3 app.py", 0),
                                        project="shop"))
    assert with_project[0].subject == "shop"


def test_a_command_that_works_after_a_prerequisite() -> None:
    found = RULES.extract(events(
        call("npm test", 1, 'error: engine "node" is incompatible: expected >=20'),
        call("nvm use 20", 0), call("npm test", 0, "58 passed")))
    assert [c.kind for c in found] == ["pitfall"]
    assert "run `nvm use 20` first" in found[0].text


def test_a_rerun_after_a_code_change_or_in_another_session_is_no_pitfall() -> None:
    fixed_in_code = events(call("pytest", 1, "FAILED"), FileEdit(type="file_edit", path="a.py"),
                           call("pytest", 0))
    assert [c.kind for c in RULES.extract(fixed_in_code)] == []
    other_session = events(call("python app.py", 127))
    other_session += events(call("python3 app.py", 0), session="s2")
    assert RULES.extract([*other_session[:1], EpisodeIn(
        id="w", text="x", kind="event", event=other_session[1].event, session_id="s2")]) == []
    unrelated = events(call("make lint", 2), call("git status", 0), call("cat setup.cfg", 0))
    assert RULES.extract(unrelated) == []
    no_match = events(call("rg TODO", 1), call("rg -i todo", 0))
    assert RULES.extract(no_match) == []


def test_an_error_event_and_the_command_that_fixed_it() -> None:
    found = RULES.extract(events(ErrorEvent(type="error", message="No module named 'yaml'"),
                                 call("pip install pyyaml", 0)))
    assert [c.kind for c in found] == ["pitfall"] and "`pip install pyyaml`" in found[0].text


def test_files_edited_in_one_task_go_together_and_the_task_gives_a_procedure() -> None:
    found = RULES.extract(events(
        TaskStart(type="task_start", task="add a health check endpoint"),
        FileEdit(type="file_edit", path="api/routes/health.py"),
        FileEdit(type="file_edit", path="api/main.py"),
        call("pytest tests/test_health.py", 0), call("ls", 0), call("ruff check .", 0),
        TaskEnd(type="task_end", task="add a health check endpoint", outcome="endpoint added"),
        project="billing"))
    by_kind = {c.kind: c for c in found}
    assert set(by_kind) == {"files", "procedure"}
    files = by_kind["files"]
    assert files.text == "Files for add a health check endpoint: api/routes/health.py, api/main.py"
    assert files.entities == ["api/routes/health.py", "api/main.py"] and files.subject == "billing"
    proc = by_kind["procedure"]
    assert proc.text == ("To add a health check endpoint: run `pytest tests/test_health.py`, "
                         "then `ruff check .`. Outcome: endpoint added")
    assert proc.source_ids == ["v0", "v3", "v5", "v6"]


def test_a_failed_task_gives_no_procedure_and_a_chinese_task_stays_chinese() -> None:
    failed = RULES.extract(events(TaskStart(type="task_start", task="update the client"),
                                  call("curl -s https://x.example", 0),
                                  TaskEnd(type="task_end", outcome="gave up: upstream down")))
    assert failed == []
    zh = RULES.extract(events(TaskStart(type="task_start", task="修复登录超时"),
                              FileEdit(type="file_edit", path="auth/login.py"),
                              FileEdit(type="file_edit", path="auth/session.py"),
                              call("pytest tests/auth", 0),
                              TaskEnd(type="task_end", outcome="已修复")))
    assert [c.text for c in zh] == ["修复登录超时相关的文件：auth/login.py, auth/session.py",
                                   "修复登录超时：运行 `pytest tests/auth`。结果：已修复"]


@pytest.mark.parametrize(("failed", "other", "expected"), [
    ("python manage.py test", "python3 manage.py test", True),
    ("cargo test", "cargo test --features pg", True),
    ("docker-compose up -d", "docker compose up -d", True),
    ("git push", "git status", False), ("make lint", "cat setup.cfg", False),
    ("npm test", "npm test", False),
])
def test_similar_commands(failed: str, other: str, expected: bool) -> None:
    assert similar(failed, other) is expected


def test_episode_in_from_a_stored_event() -> None:
    now = datetime.now(timezone.utc)
    event = {"type": "tool_call", "tool": "Bash", "command": "ls", "exit_code": 0}
    item = MemoryItem(id="e_1", kind="event", text="Bash: ls", role="tool",
                      metadata={"event": event}, observed_at=now, created_at=now,
                      updated_at=now, project="p", session_id="s")
    ep = EpisodeIn.from_item(item)
    assert ep.kind == "event" and isinstance(ep.event, ToolCall) and ep.event.command == "ls"
    assert (ep.project, ep.session_id, ep.is_agent) == ("p", "s", True)


# --- grounding --------------------------------------------------------------------------

def test_grounding_refuses_what_the_sources_do_not_say() -> None:
    source = turn("I prefer pnpm over npm.")
    made_up = Candidate(kind="preference", text="User prefers Rust with tokio and axum",
                        subject="user", source_ids=["e1"], rule="test")
    real = RULES.extract([source])
    result = ground([*real, made_up], [source])
    assert result.candidates == real
    assert len(result.rejected) == 1
    refused = result.rejected[0]
    assert refused.candidate == made_up
    assert "not supported by its sources" in refused.reason and "rust" in refused.reason


def test_grounding_refuses_missing_or_unknown_sources() -> None:
    source = turn("I prefer pnpm.")
    no_source = Candidate(kind="preference", text="User prefers pnpm", subject="user", rule="t")
    elsewhere = no_source.model_copy(update={"source_ids": ["e9"]})
    reasons = [r.reason for r in ground([no_source, elsewhere], [source]).rejected]
    assert reasons == ["cites no source episode", "cites episode(s) not in this batch: e9"]


def test_extract_checked_logs_refusals(caplog: pytest.LogCaptureFixture) -> None:
    class Liar:
        def extract(self, episodes: Any) -> list[Candidate]:
            return [Candidate(kind="fact", text="The moon is made of cheese", subject="x",
                              source_ids=[episodes[0].id], rule="liar")]

    with caplog.at_level(logging.INFO, logger="remem.extract.base"):
        result = extract_checked(Liar(), [turn("We deploy on Fridays.")])
    assert result.candidates == [] and len(result.rejected) == 1
    assert "rule liar" in caplog.text and "cheese" not in caplog.text  # no content above DEBUG


def test_every_rule_candidate_on_the_corpus_is_grounded() -> None:
    assert run()["rejected"] == 0


# --- the corpus -------------------------------------------------------------------------

def test_the_corpus_is_big_enough_and_bilingual() -> None:
    cases = load_corpus()
    episodes = sum(len(c["episodes"]) for c in cases)
    assert episodes >= 150
    assert {c["lang"] for c in cases} == {"en", "zh"}
    assert sum(1 for c in cases if not c["expect"]) >= 50  # cases that should yield nothing
    assert {c.get("split") for c in cases} == {"dev", "heldout"}
    assert bundled_corpus().name == "corpus.jsonl"


def test_precision_and_recall_on_the_corpus() -> None:
    result = run()
    assert result["precision"] >= 0.85 and result["recall"] >= 0.8
    for lang in ("en", "zh"):
        assert result["by_language"][lang]["precision"] >= 0.85, lang
        assert result["by_language"][lang]["recall"] >= 0.8, lang
    # the cases written before the heads and never used to train them (old labels)
    held = result["by_split"]["heldout"]
    assert held["precision"] >= 0.65 and held["recall"] >= 0.6
    assert result["subject_accuracy"] >= 0.9 and result["date_accuracy"] >= 0.9
    # a memory filed under a neighbouring kind still counts when kinds are ignored
    loose = result["any_kind"]
    assert loose["matched"] >= result["matched"] and loose["precision"] >= result["precision"]
    gold = [{"kind": "preference", "keys": ["pathlib"]}]
    filed = [Candidate(kind="convention", text="Always use pathlib", subject="project", rule="t")]
    assert match(gold, filed) == {} and match(gold, filed, any_kind=True) == {0: 0}


def test_bench_extract_command() -> None:
    result = CliRunner().invoke(app, ["bench", "extract", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"precision", "recall", "by_language", "by_kind", "by_split", "misses"} <= set(data)
    human = CliRunner().invoke(app, ["bench", "extract"])
    assert human.exit_code == 0 and "precision" in human.stdout and "misses" not in human.stdout
