"""Updates and forget requests said in few, ordinary words, English and Chinese: the old
memory is superseded with its history (and still answers ``as_of`` a time before), a brief
change of nothing known is no memory, and what the user asks to forget is gone, turns too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Config, Memory
from remem.extract.heads import Heads
from remem.extract.requests import asked_of_another

WEB = {"user_id": "alice", "project": "web"}


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        yield m


def say(m: Memory, text: str, session: str, when: str) -> None:
    m.add([{"role": "user", "content": text}], session_id=session, timestamp=when, **WEB)
    assert m.flush(timeout=60)


def superseded_by(m: Memory, old_word: str, new_word: str) -> None:
    """The memory holding ``old_word`` is superseded, with history, by one holding ``new_word``."""
    everything = m.list(**WEB, include_inactive=True)
    old = [i for i in everything if old_word in i.text and new_word not in i.text]
    active = [i.text for i in m.list(**WEB)]
    assert old and all(i.status == "superseded" and i.valid_to is not None for i in old), \
        [(i.status, i.text) for i in everything]
    assert any(new_word in t for t in active) and not any(old_word in t and new_word not in t
                                                          for t in active)
    assert [h.action for h in m.history(old[0].id, **WEB)] == ["created", "superseded"]


def test_a_brief_chinese_change_supersedes_and_keeps_history(mem: Memory) -> None:
    say(mem, "代码缩进用四个空格", "s1", "2026-01-10T09:00:00")
    say(mem, "改成 tab 了", "s2", "2026-02-01T09:00:00")

    superseded_by(mem, "四个空格", "tab")
    back_then = mem.list(**WEB, as_of="2026-01-20T00:00:00")
    assert [i.text for i in back_then] == ["代码缩进用四个空格"]


@pytest.mark.parametrize(("old", "new", "old_word", "new_word"), [
    ("style note: 4 spaces for indentation everywhere", "switched to tabs.", "4 spaces", "tabs"),
    ("we deploy the api to Heroku", "moved over to Fly.io last week", "Heroku", "Fly.io"),
])
def test_a_brief_change_naming_nothing_of_the_old_value_replaces_the_nearest_memory(
        mem: Memory, old: str, new: str, old_word: str, new_word: str) -> None:
    say(mem, old, "s1", "2026-01-10T09:00:00")
    say(mem, new, "s2", "2026-02-01T09:00:00")

    superseded_by(mem, old_word, new_word)


def test_a_brief_change_of_nothing_known_is_no_memory(mem: Memory) -> None:
    say(mem, "改成 tab 了", "s1", "2026-02-01T09:00:00")

    assert [i.text for i in mem.list(**WEB)] == []
    assert [h.memory.text for h in mem.search("tab", **WEB)] == ["改成 tab 了"]  # the turn stays


@pytest.mark.parametrize(("secret", "said", "request_"), [
    ("Maple Grove", "my daughter goes to Maple Grove Elementary", "scrap that bit about the school"),
    ("望京", "我家住在望京西园", "住址那段删掉吧"),
])
def test_a_forget_request_in_few_words_hides_memory_and_turns(
        mem: Memory, secret: str, said: str, request_: str) -> None:
    say(mem, said, "s1", "2026-01-10T09:00:00")
    say(mem, request_, "s2", "2026-02-01T09:00:00")

    assert not any(secret in i.text for i in mem.list(**WEB))
    assert not any(secret in h.memory.text for h in mem.search(secret, **WEB, include_episodes=True))
    gone = [i for i in mem.list(**WEB, include_inactive=True, include_episodes=True)
            if secret in i.text]
    assert any(not i.is_episode for i in gone) and all(i.status == "forgotten" for i in gone)


def test_a_forget_request_is_about_its_topic_not_its_small_talk(mem: Memory) -> None:
    say(mem, "between us: I'm planning to leave in June for a startup called Tillerworks, "
             "so I want the handover docs done by May", "s1", "2026-01-10T09:00:00")
    say(mem, "ok ship it", "s1", "2026-01-10T09:05:00")
    say(mem, "hey, about my plan to leave the company - forget I said that, ok? nothing's signed",
        "s2", "2026-02-01T09:00:00")

    assert not any("Tillerworks" in h.memory.text
                   for h in mem.search("Tillerworks", **WEB, include_episodes=True))
    kept = [i for i in mem.list(**WEB, include_episodes=True) if i.text == "ok ship it"]
    assert kept and kept[0].status == "active"  # "ok" is small talk, not the topic


def test_what_the_user_asks_to_keep_after_a_forget_request_stays(mem: Memory) -> None:
    say(mem, "my partner Tomasz works at the hosting company, he said their maintenance is "
             "Sunday nights", "s1", "2026-01-10T09:00:00")
    say(mem, "also, I always rebase onto main before merging, never merge commits",
        "s1", "2026-01-10T09:05:00")
    say(mem, "two things: forget my partner's name, I overshared. and keep reminding me about "
             "rebasing before merge, that one's important", "s2", "2026-02-01T09:00:00")

    assert not any("Tomasz" in h.memory.text
                   for h in mem.search("Tomasz", **WEB, include_episodes=True))
    assert any("rebase" in i.text for i in mem.list(**WEB))


def test_forgetting_one_thing_keeps_a_memory_that_only_shares_common_words_with_it(
        mem: Memory) -> None:
    say(mem, "here's the sandbox token for the SMS provider: tok_sbx_9f3ZqLm2Wd, use it in "
             "the integration tests", "s1", "2026-02-24T15:00:00")
    say(mem, "the provider is Plivo btw, not Twilio, even though the client lib looks similar",
        "s1", "2026-02-24T15:01:00")
    say(mem, "wait, don't keep that token anywhere. wipe it from your notes", "s2",
        "2026-02-24T15:40:00")

    active = [i.text for i in mem.list(**WEB)]
    assert any("Plivo" in t for t in active), active  # "provider" is no name of the token
    assert not any("sandbox token" in t for t in active)


@pytest.mark.parametrize("change", [
    "I moved over to Zed last week, tailor the shortcuts you suggest to its keymap",
    "forget what I told you about my shortcuts",
])
def test_a_word_that_only_begins_like_another_names_nothing_of_it(mem: Memory,
                                                                  change: str) -> None:
    say(mem, "keep your answers short, skip the long recaps", "s1", "2026-02-24T15:00:00")
    say(mem, "my keyboard shortcuts follow the vim keymap in every editor", "s1",
        "2026-02-24T15:01:00")
    say(mem, change, "s2", "2026-02-25T09:00:00")

    active = [i.text for i in mem.list(**WEB)]
    assert any("answers short" in t for t in active), active  # "short" is no "shortcut"


def test_what_the_assistant_says_never_replaces_what_the_user_said(mem: Memory) -> None:
    say(mem, "we install with npm here, there's a package-lock.json in the repo", "s1",
        "2026-01-10T09:00:00")
    mem.add([{"role": "user", "content": "did someone switch us to pnpm?"},
             {"role": "assistant", "content": "Not as far as I can see: the repo still has "
                                              "package-lock.json and no pnpm-lock.yaml."}],
            session_id="s2", timestamp="2026-01-12T09:00:00", **WEB)
    assert mem.flush(timeout=60)

    npm = [i for i in mem.list(**WEB, include_inactive=True) if "install with npm" in i.text]
    assert npm and npm[0].status == "active"


def test_forget_it_after_a_task_sets_the_task_aside_and_forgets_nothing(mem: Memory) -> None:
    say(mem, "before you tell me anything's done, run mypy --strict. non-negotiable", "s1",
        "2026-02-09T16:00:00")
    mem.add([{"role": "user", "content": "can you fix the typo in the README heading"},
             {"role": "assistant", "content": "Which one? I see three headings."},
             {"role": "user", "content": "eh forget it, I'll just do it myself"}],
            session_id="s2", timestamp="2026-02-10T17:00:00", **WEB)
    assert mem.flush(timeout=60)

    assert any("mypy" in i.text for i in mem.list(**WEB))


def test_forget_it_after_a_grumble_in_the_same_breath_forgets_nothing(mem: Memory) -> None:
    say(mem, "I like squash merges, the history stays readable", "s1", "2026-02-09T16:00:00")
    say(mem, "ugh, this rebase is a disaster. forget it, I'll sort it out myself", "s2",
        "2026-02-10T17:00:00")

    assert any("squash" in i.text for i in mem.list(**WEB))


def test_a_request_whose_first_sentence_names_what_was_said_still_forgets_it(mem: Memory) -> None:
    say(mem, "my personal email is dana.k@fastmail.com if you need to reach me", "s1",
        "2026-02-09T16:00:00")
    say(mem, "about my personal email from the other day. please forget it", "s2",
        "2026-02-10T17:00:00")

    assert not any("fastmail" in i.text for i in mem.list(**WEB))


def test_a_forgotten_value_goes_from_tool_output_that_repeats_it(mem: Memory) -> None:
    say(mem, "for this repo, commit messages start with the Jira key, like PAY-2231: fix rounding",
        "s1", "2026-01-10T09:00:00")
    mem.add_events([{"type": "tool_call", "tool": "Bash", "command": "git log --oneline -2",
                     "exit_code": 0, "output": "c1e00aa PAY-2231: fix rounding\n9a2b3c4 PAY-2230: add"}],
                   session_id="s2", timestamp="2026-01-12T09:00:00", **WEB)
    say(mem, "Forget the commit prefix convention I mentioned, please.", "s3", "2026-01-31T09:00:00")

    assert not any("PAY-2231" in h.memory.text
                   for h in mem.search("PAY-2231", **WEB, include_episodes=True))


def test_do_not_keep_it_beside_a_forget_request_is_no_wish_to_keep(mem: Memory) -> None:
    say(mem, "团建定在千岛湖，10 月中旬，我得准备一个年度规划的分享", "s1", "2026-02-01T09:00:00")
    say(mem, "团建那部分划掉，取消了，别留着", "s2", "2026-02-16T09:00:00")

    assert not any("千岛湖" in i.text for i in mem.list(**WEB))


def test_asking_someone_else_to_forget_forgets_nothing(mem: Memory) -> None:
    say(mem, "the old Braintree integration is still in legacy/braintree but nothing calls it",
        "s1", "2026-01-10T09:00:00")
    say(mem, "Sam keeps asking about the legacy stuff. tell Sam to forget about the Braintree "
             "code, he shouldn't touch it.", "s2", "2026-01-12T09:00:00")

    assert any("legacy/braintree" in i.text for i in mem.list(**WEB))


@pytest.mark.parametrize(("text", "another"), [
    ("Ravi should forget the old bash deploy script, it's dead", True),
    ("让他把旧接口忘了吧", True),
    ("about my sister Priya, forget it", False),
    ("I'd like you to forget my address", False),
    ("他的电话号码你别记了", False),
    ("帮我跟小刘说一声，让她别记老的部署脚本了", True),
    ("叫我别记了吧，算了，忘了吧", False),
])
def test_who_is_to_forget(text: str, another: bool) -> None:
    assert asked_of_another(text, Heads.load().forget_words) is another


def test_a_change_of_no_clear_kind_is_kept_as_the_change_it_makes(mem: Memory) -> None:
    # the kind head cannot tell what this is; the tuned reader reads a change
    say(mem, "接口超时统一设的 3s", "s1", "2026-01-10T09:00:00")
    say(mem, "超时调成 10s 了，3 秒太激进，报表接口老超时", "s2", "2026-02-01T09:00:00")

    superseded_by(mem, "3s", "10s")


def test_a_change_replaces_each_memory_it_names_whatever_its_kind(mem: Memory) -> None:
    say(mem, "we're still on python 3.9 here, it's pinned in .python-version. "
             "don't use anything that needs a newer interpreter", "s1", "2026-01-10T09:00:00")
    say(mem, "fyi bumped us to python 3.12 over the weekend, .python-version and CI are updated, "
             "so match statements and the new typing syntax are fine now", "s2", "2026-02-01T09:00:00")

    superseded_by(mem, "3.9", "3.12")


def test_a_change_said_in_a_project_replaces_what_the_user_said_for_everywhere(
        mem: Memory) -> None:
    mem.add([{"role": "user", "content": "the weekly sync is on Mondays at 11, keep that slot free"}],
            session_id="s1", timestamp="2026-01-10T09:00:00", user_id="alice")
    assert mem.flush(timeout=60)
    say(mem, "weekly sync moved to Tuesdays at 14:00, the new lead is in another time zone",
        "s2", "2026-02-01T09:00:00")

    superseded_by(mem, "Mondays", "Tuesdays")


@pytest.mark.parametrize(("old", "new", "old_word", "new_word"), [
    # the pairs reader reads these two as the same thing said again: said as a change,
    # the nearest memory naming the thing is what changed
    ("The etl runs on Python 3.10, so no match-statement tricks",
     "Bumped the etl to Python 3.12 across all jobs, go wild", "3.10", "3.12"),
    # no word in common, no change word: the memory of the same kind the head is sure of
    ("my laptop is a Dell XPS 13 running Ubuntu", "got a new machine last week, a Framework 16",
     "Dell", "Framework"),
    # no change word, less near in meaning than a change needs: the nearest memory naming
    # what it names, which the pairs reader is all but certain it replaces
    ("all client traffic goes through our GraphQL gateway, Apollo Router in front of the "
     "subgraphs", "big change: we killed the gateway. mobile and web call each service's REST "
     "API directly now", "Apollo", "killed"),
])
def test_a_new_value_in_other_words_replaces_the_old(mem: Memory, old: str, new: str,
                                                     old_word: str, new_word: str) -> None:
    say(mem, old, "s1", "2026-01-10T09:00:00")
    say(mem, new, "s2", "2026-02-01T09:00:00")

    superseded_by(mem, old_word, new_word)


@pytest.mark.parametrize(("said", "expect"), [
    ("deploy flow: build the image -> push to ECR -> bump the helm chart",
     "Deploy flow: 1. build the image; 2. push to ECR; 3. bump the helm chart"),
    ("日志管道是 Filebeat -> Kafka -> Flink，topic 叫 app-logs",
     "日志管道是 Filebeat -> Kafka -> Flink，topic 叫 app-logs"),
])
def test_a_chain_said_with_arrows_is_kept(mem: Memory, said: str, expect: str) -> None:
    # the numbers of the steps are the extractor's wording, not values the turn must state
    say(mem, said, "s1", "2026-01-10T09:00:00")

    assert expect in [i.text for i in mem.list(**WEB)]


@pytest.mark.parametrize(("old", "new", "old_word", "new_word"), [
    # the memory says two things, the new statement changes one: read against the whole
    # memory it is compatible, against the clause it changes it is its new value
    ("we're pinned to Node 16 on the build box, so no native fetch without a polyfill",
     "Node 20 went onto the build box this morning. native fetch is fine now", "16", "20"),
    ("my manager is Ines, she wants a design doc before any schema change",
     "after the reorg I report to Kofi Mensah", "Ines", "Kofi"),
    # both say two things: the change is one clause of each
    ("we're on Node 16 in CI, so don't use the fetch API in the build scripts",
     "heads up, the platform team bumped CI to Node 20 last night, so feel free to use fetch "
     "in the build scripts", "16", "20"),
])
def test_a_new_value_of_one_clause_replaces_the_memory_that_said_it(
        mem: Memory, old: str, new: str, old_word: str, new_word: str) -> None:
    say(mem, old, "s1", "2026-01-10T09:00:00")
    say(mem, new, "s2", "2026-02-01T09:00:00")

    superseded_by(mem, old_word, new_word)


@pytest.mark.parametrize(("old", "new"), [
    ("the frontend stack is React 18 with Vite and Tailwind, don't pull in any other UI kit",
     "move the orders table to server-side paging, the frontend chokes when the list gets long"),
    ("前端技术栈是 React 18 + Vite，组件库用 Ant Design，别引别的 UI 库",
     "订单表改成后端分页，前端数据一多就卡"),
])
def test_a_clause_worded_as_a_change_changes_only_what_it_names(mem: Memory, old: str,
                                                                new: str) -> None:
    say(mem, old, "s1", "2026-01-10T09:00:00")
    say(mem, new, "s2", "2026-02-01T09:00:00")

    assert any(i.text.lower().startswith(old[:12].lower()) for i in mem.list(**WEB))


def test_a_brief_change_replaces_what_it_is_about_among_equally_near_memories(
        mem: Memory) -> None:
    say(mem, "my lead is Marcus, he's strict about test coverage so let's not skip tests",
        "s1", "2026-02-09T09:00:00")
    say(mem, "ugh, monday. anyway the bm25 scoring is off for really short docs", "s1",
        "2026-02-09T09:10:00")
    say(mem, "reorg landed. I report to Dana Whitfield now", "s2", "2026-02-12T09:00:00")

    superseded_by(mem, "Marcus", "Dana")
    assert any("bm25" in i.text for i in mem.list(**WEB))


@pytest.mark.parametrize(("said", "asked", "kept", "gone"), [
    ("I use Helix as my editor, and heads up, I'm going through a divorce so I may be "
     "offline some days", "keep the editor bit, but drop the other personal thing I "
     "mentioned", "Helix", "divorce"),
    ("我用 Emacs 写代码，另外最近在办离婚，可能偶尔不在线", "编辑器那部分留着，另外那件私事别记了",
     "Emacs", "离婚"),
])
def test_a_forget_request_in_one_clause_of_a_sentence_keeps_what_the_other_keeps(
        mem: Memory, said: str, asked: str, kept: str, gone: str) -> None:
    say(mem, said, "s1", "2026-02-09T09:00:00")
    say(mem, asked, "s2", "2026-02-10T09:00:00")

    active = [i.text for i in mem.list(**WEB)]
    assert any(kept in t for t in active), active
    assert not any(gone in t for t in active), active
    assert not any(gone in h.memory.text for h in mem.search(gone, **WEB, include_episodes=True))


@pytest.mark.parametrize(("ours", "theirs", "kept"), [
    ("our iOS app targets Swift 5.9", "Lena mentioned her team already moved to Swift 6, "
     "we can't yet", "5.9"),
    ("我们的服务跑在 Java 17 上", "听说他们组已经升到 Java 21 了，我们暂时不动", "Java 17"),
])
def test_another_teams_change_leaves_ours_as_it_is(mem: Memory, ours: str, theirs: str,
                                                   kept: str) -> None:
    say(mem, ours, "s1", "2026-01-10T09:00:00")
    say(mem, theirs, "s2", "2026-02-01T09:00:00")

    assert any(kept in i.text for i in mem.list(**WEB)), [
        (i.status, i.text) for i in mem.list(**WEB, include_inactive=True)]


def test_forgetting_a_category_while_keeping_another_takes_every_clause_of_it(
        mem: Memory) -> None:
    say(mem, "I live in Porto, and I'm diabetic so keep our sessions short", "s1",
        "2026-02-09T09:00:00")
    say(mem, "the project is a Flask API for bus timetables", "s1", "2026-02-09T09:05:00")
    say(mem, "forget everything personal I've told you, keep just the project info", "s2",
        "2026-02-10T09:00:00")

    active = [i.text for i in mem.list(**WEB)]
    assert any("Flask" in t for t in active), active
    assert not any("Porto" in t or "diabetic" in t for t in active), active


@pytest.mark.parametrize(("first", "then", "kept"), [
    # another attribute of the same thing: who reviews the other half
    ("前端的代码评审找孙悦，她要求写清楚改动原因", "后端接口那块的评审找郑凯就行", "孙悦"),
    # a one-off exception to a standing rule
    ("日志统一用 zap，输出 JSON，别用 fmt.Println 调试",
     "这个一次性的导数脚本就直接 fmt.Println 吧，跑完就删", "zap"),
])
def test_what_only_looks_like_a_change_leaves_the_memory_as_it_is(
        mem: Memory, first: str, then: str, kept: str) -> None:
    say(mem, first, "s1", "2026-01-10T09:00:00")
    say(mem, then, "s2", "2026-02-01T09:00:00")

    assert any(kept in i.text for i in mem.list(**WEB)), [
        (i.status, i.text) for i in mem.list(**WEB, include_inactive=True)]


def test_forget_this_said_after_a_task_in_one_sentence_forgets_only_the_task(mem: Memory) -> None:
    say(mem, "你好，我叫林晓峰，叫我晓峰就行", "s1", "2026-02-09T09:00:00")
    say(mem, "帮我写个脚本批量改图片尺寸，要支持 webp……算了，不用了，忘了这事吧，直接用 Pillow 的命令行",
        "s1", "2026-02-09T09:10:00")

    assert any("晓峰" in i.text for i in mem.list(**WEB))
