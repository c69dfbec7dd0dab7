"""Search as users see it: full text in Chinese and English, filters, time, budgets,
neighbours; and the pure ranking and time-phrase functions underneath."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import pytest

from remem import Config, Memory, RetrievalConfig
from remem.config import AgentConfig
from remem.retrieve.fusion import rrf
from remem.retrieve.query import analyse, time_span
from remem.text import estimate_tokens

# these tests are about episodes: the memory agent stays off
pytestmark = [pytest.mark.usefixtures("episodes_only"), pytest.mark.backends]
EPISODES_ONLY = AgentConfig(extractor="off")


def ids(hits: list) -> list[str]:
    return [h.memory.id for h in hits]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@pytest.fixture
def far_timezone() -> Iterator[None]:
    """Run with a local time zone far from UTC, where local-time slips show."""
    if not hasattr(time, "tzset"):
        pytest.skip("needs time.tzset")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", "Asia/Shanghai")
        time.tzset()
        yield
    time.tzset()


# --- full text: Chinese and English ------------------------------------------------------


@pytest.fixture
def mixed(mem: Memory) -> dict[str, str]:
    texts = {
        "zh_answer": "以后都用中文回答",
        "zh_deploy": "我们团队每周五下午部署生产环境",
        "en_deploy": "We deploy with make ship",
        "en_fruit": "I like oranges and apples",
    }
    r = mem.add(list(texts.values()), user_id="alice")
    mem.flush()
    return dict(zip(texts, r.episode_ids, strict=True))


def test_a_chinese_word_is_found_through_full_text(mem: Memory, mixed: dict[str, str]) -> None:
    hits = mem.search("中文", user_id="alice")
    assert hits[0].memory.id == mixed["zh_answer"]
    assert hits[0].channels["fulltext"] == 1
    assert all("fulltext" not in h.channels for h in hits[1:])


def test_a_two_character_word_inside_a_sentence_is_found(mem: Memory,
                                                         mixed: dict[str, str]) -> None:
    for word in ("部署", "周五", "环境"):
        hits = mem.search(word, user_id="alice")
        assert hits[0].memory.id == mixed["zh_deploy"], word
        assert "fulltext" in hits[0].channels, word


def test_english_words_match_their_stem(mem: Memory, mixed: dict[str, str]) -> None:
    hits = mem.search("deploying", user_id="alice")
    assert hits[0].memory.id == mixed["en_deploy"]
    assert hits[0].channels["fulltext"] == 1
    assert [h.memory.id for h in hits if "fulltext" in h.channels] == [mixed["en_deploy"]]
    assert "fulltext" in mem.search("oranges", user_id="alice")[0].channels


def test_full_text_works_before_vectors_exist(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=Config(embed_in_background=True, agent=EPISODES_ONLY))
    m.worker.start = lambda: None  # type: ignore[method-assign]  # keep the worker idle
    eid = m.add("the staging password rotates every Monday", user_id="alice").episode_ids[0]
    assert m.stats().vectors == 0
    hits = m.search("staging password", user_id="alice")
    assert ids(hits) == [eid]
    assert set(hits[0].channels) == {"fulltext"}


def test_query_punctuation_and_quotes_are_harmless(mem: Memory, mixed: dict[str, str]) -> None:
    for query in ['"deploy" AND (ship) OR NOT *', "deploy -- ship; DROP TABLE memories", "NEAR("]:
        hits = mem.search(query, user_id="alice")
        assert hits, query
    assert mem.stats().episodes == 4


# --- long texts ----------------------------------------------------------------------------

TOPICS = ["the build pipeline", "our coffee machine", "the quarterly budget", "a hiking trip",
          "the database migration", "the new intern", "a broken laptop", "the office plants"]


def long_text(rare_at: int, n: int = 16) -> str:
    sentences = [f"Sentence {i} is a note about {TOPICS[i % len(TOPICS)]} and what we did "
                 f"with it on day {i} of the project." for i in range(n)]
    sentences[rare_at] = "The quokka mascot sticker is stuck on the server rack in room nine."
    return " ".join(sentences)


@pytest.fixture
def chunked(open_memory: Callable[..., Memory]) -> Memory:
    """Small passages, so that a few sentences already make a long text."""
    return open_memory(config=Config(chunk_tokens=48, agent=EPISODES_ONLY))


def test_a_long_text_is_split_but_hits_cite_the_whole_episode(chunked: Memory) -> None:
    mem = chunked
    text = long_text(rare_at=11)
    eid = mem.add(text, user_id="alice").episode_ids[0]
    mem.add("quokkas are small marsupials", user_id="bob")
    mem.flush()
    stats = mem.stats()
    assert stats.episodes == 2
    assert stats.passages >= 4  # the long one was split
    assert stats.vectors == stats.passages

    hits = mem.search("quokka sticker", user_id="alice")

    assert ids(hits) == [eid]  # once, not once per passage, and not bob's
    assert hits[0].memory.text == text
    assert hits[0].sources[0].id == eid
    assert "fulltext" in hits[0].channels


def test_the_passage_that_matches_is_found_in_meaning_too(chunked: Memory) -> None:
    mem = chunked
    text = long_text(rare_at=13)
    eid = mem.add(text, user_id="alice").episode_ids[0]
    mem.add(["the cat sleeps on the sofa", "we bought new chairs"], user_id="alice")
    mem.flush()
    hits = mem.search("where is the mascot sticker?", user_id="alice", k=3)
    assert hits[0].memory.id == eid
    assert hits[0].channels.get("vector") == 1


# --- filters ---------------------------------------------------------------------------------


@pytest.fixture
def may(mem: Memory) -> dict[str, str]:
    """Three standups in May 2023 and one event."""
    r = mem.add([
        {"role": "user", "content": "standup: we fixed the login bug",
         "timestamp": "2023-05-01T09:00:00"},
        {"role": "user", "content": "standup: we shipped the search page",
         "timestamp": "2023-05-10T09:00:00"},
        {"role": "user", "content": "standup: we planned the billing work",
         "timestamp": "2023-05-20T09:00:00"},
    ], user_id="alice", session_id="standups")
    ev = mem.add_events({"type": "error", "message": "standup bot crashed",
                         "timestamp": "2023-05-10T10:00:00"}, user_id="alice")
    mem.flush()
    return {"d1": r.episode_ids[0], "d10": r.episode_ids[1], "d20": r.episode_ids[2],
            "event": ev.episode_ids[0]}


def test_as_of_hides_what_happened_later(mem: Memory, may: dict[str, str]) -> None:
    hits = mem.search("what happened at standup?", user_id="alice", as_of="2023-05-05T00:00:00")
    assert ids(hits) == [may["d1"]]
    later = mem.search("what happened at standup?", user_id="alice", as_of="2023-05-15")
    assert set(ids(later)) == {may["d1"], may["d10"], may["event"]}


def test_since_and_until_filter_by_event_time(mem: Memory, may: dict[str, str]) -> None:
    hits = mem.search("standup", user_id="alice", since="2023-05-05", until="2023-05-15")
    assert set(ids(hits)) == {may["d10"], may["event"]}
    assert set(ids(mem.search("standup", user_id="alice", since="2023-05-15"))) == {may["d20"]}
    assert set(ids(mem.search("standup", user_id="alice", until="2023-05-05"))) == {may["d1"]}
    assert mem.search("standup", user_id="alice", since="2023-06-01") == []


def test_kinds_filter(mem: Memory, may: dict[str, str]) -> None:
    assert ids(mem.search("standup", user_id="alice", kinds=["event"])) == [may["event"]]
    assert ids(mem.search("standup", user_id="alice", kinds="event")) == [may["event"]]
    episodes = mem.search("standup", user_id="alice", kinds=["episode"])
    assert set(ids(episodes)) == {may["d1"], may["d10"], may["d20"]}
    assert mem.search("standup", user_id="alice", include_episodes=False) == []


def test_k_is_respected(mem: Memory) -> None:
    mem.add([f"note {i}: the release checklist item number {i}" for i in range(15)],
            user_id="alice")
    mem.flush()
    for k in (1, 5, 12):
        assert len(mem.search("release checklist", user_id="alice", k=k)) == k
    assert len(mem.search("release checklist", user_id="alice", k=100)) == 15


def test_budget_tokens_caps_the_total_size_of_hits(mem: Memory) -> None:
    texts = [f"deploy note {i}: " + "we ran the deploy script and watched the logs " * (i + 1)
             for i in range(6)]
    mem.add(texts, user_id="alice")
    mem.flush()
    unlimited = mem.search("deploy script logs", user_id="alice", k=10)
    assert sum(h.tokens for h in unlimited) > 120
    for budget in (30, 60, 120):
        hits = mem.search("deploy script logs", user_id="alice", k=10, budget_tokens=budget)
        assert hits
        assert sum(h.tokens for h in hits) <= budget
        assert all(h.tokens == estimate_tokens(h.memory.text) for h in hits)


# --- time ------------------------------------------------------------------------------------


@pytest.fixture
def week(mem: Memory) -> dict[str, str]:
    r = mem.add([
        {"role": "user", "content": "I repainted the kitchen", "timestamp": "2023-05-07T10:00:00"},
        {"role": "user", "content": "I went to the dentist", "timestamp": "2023-05-08T20:00:00"},
        {"role": "user", "content": "I baked sourdough bread", "timestamp": "2023-05-09T09:00:00"},
    ], user_id="alice")
    mem.flush()
    return dict(zip(("may7", "may8", "may9"), r.episode_ids, strict=True))


def test_yesterday_is_read_against_as_of(mem: Memory, week: dict[str, str]) -> None:
    hits = mem.search("what did I do yesterday?", user_id="alice", as_of="2023-05-09T12:00:00")
    assert hits[0].memory.id == week["may8"]
    assert hits[0].channels["time"] == 1
    assert all("time" not in h.channels for h in hits[1:])

    two_days = mem.search("what did I do 2 days ago?", user_id="alice", as_of="2023-05-09T12:00")
    assert two_days[0].memory.id == week["may7"]
    assert "time" in two_days[0].channels


def test_yesterday_is_a_utc_day_whatever_the_local_zone(mem: Memory, week: dict[str, str],
                                                        far_timezone: None) -> None:
    hits = mem.search("what did I do yesterday?", user_id="alice", as_of="2023-05-09T12:00:00")
    assert hits[0].memory.id == week["may8"]
    assert [h.memory.id for h in hits if "time" in h.channels] == [week["may8"]]


def test_naive_times_are_utc_for_events_as_for_messages(mem: Memory, far_timezone: None) -> None:
    when = utc(2023, 5, 8, 13, 56)
    msg = mem.add("hello", user_id="alice", timestamp="2023-05-08T13:56:00").episode_ids[0]
    own = mem.add_events({"type": "task_start", "task": "deploy",
                          "timestamp": "2023-05-08T13:56:00"}, user_id="alice").episode_ids[0]
    call = mem.add_events({"type": "task_end", "outcome": "ok"}, user_id="alice",
                          timestamp="2023-05-08T13:56:00").episode_ids[0]
    assert [mem.get(i).event_time for i in (msg, own, call)] == [when, when, when]


def test_a_named_month_uses_the_time_channel(mem: Memory) -> None:
    r = mem.add([
        {"role": "user", "content": "we adopted a cat", "timestamp": "2023-04-20T10:00:00"},
        {"role": "user", "content": "we adopted a dog", "timestamp": "2023-05-12T10:00:00"},
    ], user_id="alice")
    mem.flush()
    hits = mem.search("what pet did we adopt in May 2023?", user_id="alice")
    assert hits[0].memory.id == r.episode_ids[1]
    assert "time" in hits[0].channels
    assert "time" not in hits[1].channels


# --- neighbours ------------------------------------------------------------------------------

TURNS = [
    "Hi Mel! How have you been?",
    "Great, I took a pottery class and made a blue bowl.",
    "Wow, that sounds lovely. Did you enjoy it?",
    "Yes, it was so calming. I want to go again.",
    "What else is new with you?",
    "My kids started swimming lessons.",
    "Oh nice, how are they doing?",
    "They love the water!",
]


def add_chat(m: Memory) -> list[str]:
    r = m.add([{"speaker": "Caroline" if i % 2 == 0 else "Melanie", "text": t}
               for i, t in enumerate(TURNS)], user_id="alice", session_id="chat-1")
    m.flush()
    return r.episode_ids


def test_turns_next_to_a_strong_hit_come_with_the_neighbor_channel(mem: Memory) -> None:
    turns = add_chat(mem)
    hits = {h.memory.id: h for h in mem.search("pottery class bowl", user_id="alice", k=8)}
    assert ids(mem.search("pottery class bowl", user_id="alice", k=1)) == [turns[1]]
    for adjacent in (turns[0], turns[2]):
        assert "neighbor" in hits[adjacent].channels
        assert "next to a strong hit in the same conversation" in hits[adjacent].reasons


def test_only_turns_next_to_the_seeds_are_neighbours(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=Config(agent=EPISODES_ONLY, retrieval=RetrievalConfig(
        neighbor_seeds=1, neighbor_window=1, weight_context=0.0)))
    turns = add_chat(m)
    hits = m.search("pottery class bowl", user_id="alice", k=8)
    assert hits[0].memory.id == turns[1]
    assert {h.memory.id for h in hits if "neighbor" in h.channels} == {turns[0], turns[2]}


def test_neighbours_stay_inside_the_scope(mem: Memory) -> None:
    turns = add_chat(mem)
    other = mem.add("a reply in bob's copy of chat-1", user_id="bob",
                    session_id="chat-1").episode_ids[0]
    mem.flush()
    hits = mem.search("They love the water!", user_id="alice", k=20)
    assert other not in ids(hits)
    assert set(ids(hits)) == set(turns)


# --- fusion (pure) ---------------------------------------------------------------------------


def test_rrf_adds_weighted_reciprocal_ranks() -> None:
    scores, ranks = rrf({"fulltext": [1, 2, 3], "vector": [3, 1]},
                        {"fulltext": 1.0, "vector": 0.5}, k=10)
    assert scores[1] == pytest.approx(1 / 11 + 0.5 / 12)
    assert scores[2] == pytest.approx(1 / 12)
    assert scores[3] == pytest.approx(1 / 13 + 0.5 / 11)
    assert ranks == {1: {"fulltext": 1, "vector": 2}, 2: {"fulltext": 2},
                     3: {"fulltext": 3, "vector": 1}}
    assert sorted(scores, key=scores.__getitem__, reverse=True) == [1, 3, 2]


def test_rrf_weights_default_to_one_and_zero_weight_adds_nothing() -> None:
    scores, ranks = rrf({"a": [7], "b": [7, 8]}, {"b": 0.0}, k=1)
    assert scores == {7: pytest.approx(1 / 2), 8: 0.0}
    assert ranks == {7: {"a": 1, "b": 1}, 8: {"b": 2}}
    assert rrf({}, {}, k=60) == ({}, {})


# --- time phrases (pure) ---------------------------------------------------------------------

NOW = utc(2023, 5, 10, 15, 30)  # a Wednesday


def span(start: datetime, end: datetime) -> tuple[float, float]:
    """``[start, end)`` as time_span returns it (end minus a millisecond)."""
    return start.timestamp(), end.timestamp() - 1e-3


@pytest.mark.parametrize(("phrase", "expected"), [
    ("what did we do today?", span(utc(2023, 5, 10), utc(2023, 5, 11))),
    ("what happened yesterday", span(utc(2023, 5, 9), utc(2023, 5, 10))),
    ("昨天我们做了什么", span(utc(2023, 5, 9), utc(2023, 5, 10))),
    ("前天", span(utc(2023, 5, 8), utc(2023, 5, 9))),
    ("what did I do last week?", span(utc(2023, 5, 1), utc(2023, 5, 8))),
    ("上周的会议", span(utc(2023, 5, 1), utc(2023, 5, 8))),
    ("this week", span(utc(2023, 5, 8), utc(2023, 5, 15))),
    ("2 days ago", span(utc(2023, 5, 8), utc(2023, 5, 9))),
    ("three weeks ago", span(utc(2023, 4, 19), utc(2023, 4, 26))),
    ("last month", span(utc(2023, 4, 1), utc(2023, 5, 1))),
    ("in May 2023", span(utc(2023, 5, 1), utc(2023, 6, 1))),
    ("back in december", span(utc(2022, 12, 1), utc(2023, 1, 1))),  # the last December
    ("this month", span(utc(2023, 5, 1), utc(2023, 6, 1))),
    ("last year", span(utc(2022, 1, 1), utc(2023, 1, 1))),
    ("in 2024", span(utc(2024, 1, 1), utc(2025, 1, 1))),  # a leap year: 366 days
    ("on 8 May 2023", span(utc(2023, 5, 8), utc(2023, 5, 9))),
    ("on 2023-05-08", span(utc(2023, 5, 8), utc(2023, 5, 9))),
    ("in 2022", span(utc(2022, 1, 1), utc(2023, 1, 1))),
])
def test_time_span_of_a_phrase(phrase: str, expected: tuple[float, float]) -> None:
    got = time_span(phrase, NOW)
    assert got is not None
    assert got == pytest.approx(expected)


@pytest.mark.parametrize("phrase", ["which package manager?", "I may go", "deploy to prod",
                                    "2023-02-30", "中文回答", "3000 years ago", "in 9999",
                                    "events of December 9999"])
def test_no_time_span_without_a_time_phrase(phrase: str) -> None:
    assert time_span(phrase, NOW) is None


def test_time_span_moves_with_now() -> None:
    later = NOW + timedelta(days=7)
    assert time_span("yesterday", later) == pytest.approx(span(utc(2023, 5, 16), utc(2023, 5, 17)))


def test_analyse_drops_stopwords_and_finds_names() -> None:
    plan = analyse("What did Caroline say about the Pottery Class yesterday?", NOW)
    assert "caroline" in plan.terms and "pottery" in plan.terms
    assert not {"what", "did", "the", "about"} & set(plan.terms)
    assert "Caroline" in plan.entities
    assert plan.span is not None
    assert analyse("以后都用中文回答", NOW).terms[:2] == ("以后", "后都")


def test_turns_said_by_the_person_a_question_names_rank_with_the_speaker_channel(
        mem: Memory) -> None:
    mem.add([{"speaker": "Caroline", "text": "Melanie, I started painting sunsets last month."},
             {"speaker": "Melanie", "text": "I love pottery, it calms me down."},
             {"speaker": "Caroline", "text": "Pottery sounds lovely."},
             {"speaker": "Melanie", "text": "We also go camping with the kids."}],
            user_id="alice", session_id="s1")
    mem.flush()
    hits = mem.search("What hobbies does Melanie's family enjoy?", user_id="alice", k=4)
    by_speaker = {h.memory.role: [] for h in hits}
    for h in hits:
        by_speaker[h.memory.role].append("speaker" in h.channels)
    assert all(by_speaker["Melanie"]) and not any(by_speaker["Caroline"])
    assert "said by someone the query names" in hits[0].reasons
    assert hits[0].memory.role == "Melanie"
    # without a name in the query there is no speaker channel
    assert not any("speaker" in h.channels for h in mem.search("hobbies", user_id="alice"))


class _ThreadNoting:
    """The bundled embedder, noting the thread each query is embedded on."""

    def __init__(self, inner: object, parallel: bool) -> None:
        self.inner, self.parallel_queries, self.threads = inner, parallel, []
        self.name, self.dim = inner.name, inner.dim  # type: ignore[attr-defined]

    def embed_queries(self, texts: list[str]) -> object:
        import threading

        self.threads.append(threading.get_ident())
        return self.inner.embed_queries(texts)  # type: ignore[attr-defined]

    def embed_passages(self, texts: list[str]) -> object:
        return self.inner.embed_passages(texts)  # type: ignore[attr-defined]


def test_a_query_is_embedded_beside_the_full_text_or_before_it_with_the_same_hits(
        open_memory: Callable[..., Memory], e5: object) -> None:
    import threading

    writer = open_memory()
    writer.add(["we deploy the billing service on Fridays", "the login page moved to React",
                "Dana fixed a race in the billing worker", "lunch is at noon"], user_id="u")
    writer.flush()
    beside, before = _ThreadNoting(e5, True), _ThreadNoting(e5, False)
    results = []
    for embedder in (beside, before):
        reader = open_memory(embedder=embedder)
        results.append([[(h.memory.id, h.score, h.channels) for h in reader.search(q, user_id="u")]
                        for q in ("when is billing deployed?", "what changed on the login page?")])
    assert results[0] == results[1] and results[0][0]
    here = threading.get_ident()
    assert beside.threads and all(t != here for t in beside.threads)
    assert before.threads and all(t == here for t in before.threads)


def test_a_turn_only_next_to_the_answer_never_ranks_above_it(mem: Memory) -> None:
    # the answer shares no word with an English question (it is in Chinese); the turn
    # before it is found only as its neighbour, and stays below it
    turns = [{"role": "user", "content": "I'm on holiday from May 20 to May 31; Bob reviews the PRs"},
             {"role": "assistant", "content": "Got it. I'll request reviews from Bob between May 20 "
                                             "and May 31."},
             {"role": "user", "content": "我们的数据库是 PostgreSQL 16，连接池用 PgBouncer，"
                                         "每天凌晨三点自动备份。"}]
    r = mem.add(turns, user_id="alice", session_id="s1")
    mem.flush()
    hits = mem.search("what is our database?", user_id="alice", k=3)
    order = ids(hits)
    assert order[0] == r.episode_ids[2]
    neighbour = next(h for h in hits if h.memory.id == r.episode_ids[1])
    assert "neighbor" in neighbour.channels and neighbour.score <= hits[0].score
