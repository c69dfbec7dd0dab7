"""Retrieval and answer metrics of the benchmark harness, against hand-computed values;
the dataset loaders on tiny files written here (malformed LoCoMo evidence ids,
LongMemEval's skipped questions)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pytest

from remem.bench.datasets import load_dataset
from remem.bench.metrics import (
    budget_cut,
    dcg,
    flatten,
    locomo_f1,
    ndcg_at_k,
    normalize_answer,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    sessions_of,
    token_f1,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_flatten_keeps_first_occurrence_and_drops_empty_ids() -> None:
    assert flatten([["a"], ["b", "a"], [""], ["c"]]) == ["a", "b", "c"]


def test_recall_at_k_is_the_share_of_evidence_in_the_top_k() -> None:
    assert recall_at_k(RANKED, ["b", "e"], 1) == 0.0
    assert recall_at_k(RANKED, ["b", "e"], 2) == 0.5
    assert recall_at_k(RANKED, ["b", "e"], 5) == 1.0
    assert recall_at_k(RANKED, ["b", "z"], 50) == 0.5
    with pytest.raises(ValueError):
        recall_at_k(RANKED, [], 5)


def test_recall_any_and_all() -> None:
    assert recall_any_at_k(RANKED, ["c", "z"], 3) == 1.0
    assert recall_any_at_k(RANKED, ["c", "z"], 2) == 0.0
    assert recall_all_at_k(RANKED, ["a", "c"], 3) == 1.0
    assert recall_all_at_k(RANKED, ["a", "c"], 2) == 0.0
    assert recall_all_at_k(RANKED, ["a", "z"], 5) == 0.0


def test_dcg_uses_longmemevals_gain_curve() -> None:
    # 1 + 0/log2(2) + 1/log2(3)
    assert dcg([1, 0, 1], 3) == pytest.approx(1 + 1 / math.log2(3))
    # the second rank weighs as much as the first (log2 2 = 1)
    assert dcg([0, 1], 2) == pytest.approx(1.0)
    assert dcg([], 5) == 0.0
    assert dcg([1, 1, 1], 1) == 1.0


def test_ndcg_hand_computed() -> None:
    # evidence at ranks 2 and 4, two relevant items: (1/log2 2 + 1/log2 4) / (1 + 1/log2 2)
    assert ndcg_at_k(RANKED, ["b", "d"], 5) == pytest.approx((1 + 0.5) / 2)
    assert ndcg_at_k(RANKED, ["a"], 1) == 1.0
    assert ndcg_at_k(RANKED, ["z"], 5) == 0.0
    # three relevant items in the corpus, only one can be found: the ideal still counts 3
    assert ndcg_at_k(RANKED, ["a"], 5, n_relevant=3) == pytest.approx(
        1 / (1 + 1 + 1 / math.log2(3)))
    assert ndcg_at_k(RANKED, [], 5) == 0.0


def test_sessions_rank_in_order_of_first_appearance() -> None:
    session_of = {"a": "s2", "b": "s1", "c": "s2", "d": "s3"}
    assert sessions_of(["a", "b", "c", "d", "x"], session_of) == ["s2", "s1", "s3"]


def test_budget_cut_stops_at_the_first_turn_that_does_not_fit() -> None:
    cost = {"a": 300, "b": 250, "c": 100, "d": 50}.__getitem__
    assert budget_cut(["a", "b", "c", "d"], cost, 500) == ["a"]
    assert budget_cut(["a", "b", "c", "d"], cost, 700) == ["a", "b", "c", "d"]
    assert budget_cut(["a"], cost, 100) == []


def test_token_f1_as_in_locomo() -> None:
    assert normalize_answer("The cat, and a Dog!") == "cat dog"
    assert token_f1("a black cat", "the cat") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("7 May 2023", "7 May, 2023") == 1.0
    # multi-hop: each gold part matched with its best predicted part
    assert locomo_f1("Paris, Rome", "Rome, Berlin", 1) == pytest.approx(0.5)
    # open-domain: gold up to the first ';'
    assert locomo_f1("hiking", "hiking; likely outdoors", 3) == 1.0
    assert locomo_f1("That is not mentioned.", "whatever", 5) == 1.0
    assert locomo_f1("Paris", "whatever", 5) == 0.0


# --- loaders --------------------------------------------------------------------------------

def locomo_sample() -> list[dict[str, object]]:
    """A two-session conversation in locomo10.json's format, with malformed evidence."""
    s1 = [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound named Biscuit."},
          {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
          {"speaker": "Ann", "dia_id": "D1:3", "text": "Work was busy this week."}]
    s2 = [{"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher moved to Lisbon."},
          {"speaker": "Ann", "dia_id": "D2:2", "text": "Biscuit loves the beach.",
           "blip_caption": "a dog on sand"}]
    return [{
        "sample_id": "conv-t",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Ben",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": s1,
                         "session_2_date_time": "10:00 am on 20 May, 2023", "session_2": s2},
        "qa": [
            {"question": "What is the name of Ann's greyhound?", "answer": "Biscuit",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ben's cello teacher move?", "answer": "Lisbon",
             "evidence": ["D:2:1"], "category": 4},  # malformed, repairable
            {"question": "What does Ben play and where did his teacher go?",
             "answer": "cello, Lisbon", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "What is unreadable?", "answer": "x", "evidence": ["D"], "category": 2},
            {"question": "What did Ann say past the end?", "answer": "x",
             "evidence": ["D1:9"], "category": 2},
            {"question": "What is Ben's dog called?", "adversarial_answer": "Biscuit",
             "evidence": ["D1:1"], "category": 5},
        ],
    }]


def longmemeval_sample() -> list[dict[str, object]]:
    """Three questions in LongMemEval's format: one scored, one abstention, one whose
    evidence is only in an assistant turn."""
    def entry(qid: str, qtype: str, has_user: bool, has_assistant: bool) -> dict[str, object]:
        return {
            "question_id": qid, "question_type": qtype,
            "question": "Which city did I move to?", "answer": "Porto",
            "question_date": "2023/06/01 (Thu) 09:00",
            "haystack_session_ids": ["answer_s1", "other_s2"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/10 (Wed) 08:00"],
            "haystack_sessions": [
                [{"role": "user", "content": "I just moved to Porto for work.",
                  "has_answer": has_user},
                 {"role": "assistant", "content": "Porto is lovely in spring.",
                  "has_answer": has_assistant}],
                [{"role": "user", "content": "Suggest a pasta recipe.", "has_answer": False},
                 {"role": "assistant", "content": "Try carbonara.", "has_answer": False}],
            ],
            "answer_session_ids": ["answer_s1"],
        }
    return [entry("q1", "single-session-user", True, False),
            entry("q2_abs", "single-session-user", True, False),
            entry("q3", "single-session-assistant", False, True)]


def test_locomo_loader_repairs_and_skips_evidence(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo_sample()))
    ds = load_dataset("locomo", path)
    conv = ds.conversations[0]
    assert [s.id for s in conv.sessions] == ["session_1", "session_2"]
    photo = "Biscuit loves the beach. [shares a photo: a dog on sand]"
    assert conv.sessions[1].turns[1].text == photo
    turns = conv.sessions[0].turns
    assert turns[1].time > turns[0].time  # each turn its own time, in order
    by_text = {q.text: q for q in conv.questions}
    assert by_text["Where did Ben's cello teacher move?"].evidence_turns == ("D2:1",)
    multi = by_text["What does Ben play and where did his teacher go?"]
    assert multi.evidence_turns == ("D1:2", "D2:1")
    assert multi.evidence_sessions == ("session_1", "session_2")
    assert multi.category == "1 multi-hop"
    assert by_text["What is Ben's dog called?"].answer == "Biscuit"
    assert len(conv.questions) == 4  # "D" and "D1:9" leave two questions without evidence
    assert ds.notes == {"questions_without_usable_evidence_skipped": 2,
                        "evidence_ids_skipped": 2, "evidence_ids_repaired": 3}
    assert all(q.asked_at > conv.sessions[-1].turns[-1].time for q in conv.questions)
    assert "5 adversarial" not in ds.main_categories


def test_longmemeval_loader_follows_the_official_protocol(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(longmemeval_sample()))
    ds = load_dataset("longmemeval", path)
    assert [c.scope for c in ds.conversations] == ["q1", "q2_abs", "q3"]
    conv = ds.conversations[0]
    # sessions in time order; user turns only; ids <session>_<position from 1>
    assert [s.id for s in conv.sessions] == ["other_s2", "answer_s1"]
    assert [t.id for s in conv.sessions for t in s.turns] == ["other_s2_1", "answer_s1_1"]
    q = conv.questions[0]
    assert q.evidence_turns == ("answer_s1_1",)
    assert (q.evidence_sessions, q.skip) == (("answer_s1",), None)
    assert q.asked_at == datetime(2023, 6, 1, 9, 0, tzinfo=timezone.utc)
    assert ds.conversations[1].questions[0].skip == "abstention"
    assert ds.conversations[2].questions[0].skip == "evidence only in assistant turns"
    assert ds.notes == {"skipped: abstention": 1, "skipped: evidence only in assistant turns": 1}
    assert ds.limited(1).conversations == ds.conversations[:1]


def test_longmemeval_question_dated_inside_its_haystack_is_asked_after_it(tmp_path: Path) -> None:
    data = longmemeval_sample()[:1]
    data[0]["question_date"] = "2023/05/20 (Sat) 01:00"
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data))
    ds = load_dataset("longmemeval", path)
    last = ds.conversations[0].sessions[-1].turns[-1].time
    assert ds.conversations[0].questions[0].asked_at > last
    assert ds.notes == {"question_date before the end of its haystack: asked after it": 1}


def test_unknown_dataset_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("nope", tmp_path / "x.json")
