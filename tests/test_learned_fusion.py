"""The second retriever: the learned fusion, its training, repeats collapsed, and the
conversation splits the benchmarks are measured on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from remem import Config, Memory, RetrievalConfig
from remem.bench.datasets import parse_selection
from remem.bench.train_fusion import Example, fit, recall_at
from remem.config import AgentConfig
from remem.retrieve.features import FEATURES
from remem.retrieve.fusion import LearnedFusion, load_fusion

pytestmark = pytest.mark.usefixtures("episodes_only")


def test_a_split_names_conversations_by_position() -> None:
    assert parse_selection("0-4", 10) == [0, 1, 2, 3, 4]
    assert parse_selection("5-9", 10) == [5, 6, 7, 8, 9]
    assert parse_selection("0-9:3,2", 10) == [0, 3, 6, 9, 2]


@pytest.mark.parametrize("spec", ["0-10", "4-2", "a-b", "1:0", ""])
def test_a_split_that_cannot_be_read_is_refused_clearly(spec: str) -> None:
    with pytest.raises(ValueError, match="0-4|position|only 10"):
        parse_selection(spec, 10)


def _examples(rng: np.random.Generator, n: int) -> list[Example]:
    """Pools where evidence has a high ``bm25`` and the other features are noise."""
    out = []
    for _ in range(n):
        x = rng.random((30, len(FEATURES)))
        y = np.zeros(30)
        pos = rng.choice(30, size=2, replace=False)
        y[pos] = 1.0
        x[pos, FEATURES.index("bm25")] += 1.0
        cites = [[f"D1:{i}"] for i in range(30)]
        out.append(Example(x, y, cites, tuple(cites[i][0] for i in pos)))
    return out


def test_training_learns_what_marks_evidence_and_is_deterministic() -> None:
    train = _examples(np.random.default_rng(1), 60)
    held = _examples(np.random.default_rng(2), 40)
    model = fit(train)
    again = fit(train)
    assert np.array_equal(model.coef, again.coef) and model.bias == again.bias
    assert int(np.argmax(model.coef)) == FEATURES.index("bm25")
    order = [np.argsort(-model.score(e.features), kind="stable") for e in held]
    unordered = [np.arange(30) for _ in held]
    assert recall_at(held, order, 2) > 0.9 > recall_at(held, unordered, 2)


def test_weights_round_trip_and_a_mismatched_file_is_refused(tmp_path: Path) -> None:
    model = fit(_examples(np.random.default_rng(3), 20), trained_on="synthetic")
    path = tmp_path / "w.json"
    path.write_text(json.dumps(model.to_json()))
    back = load_fusion(path, FEATURES)
    x = np.random.default_rng(4).random((5, len(FEATURES)))
    assert np.allclose(back.score(x), model.score(x), atol=1e-4)
    assert back.trained_on == "synthetic"
    data = model.to_json()
    data["features"] = data["features"][:-1]
    with pytest.raises(ValueError, match="retrain"):
        LearnedFusion.from_json(data, FEATURES)


def test_the_shipped_weights_match_the_features() -> None:
    model = load_fusion(None, FEATURES)
    assert model.features == FEATURES
    assert "LoCoMo" in model.trained_on


def _conversation(mem: Memory) -> None:
    mem.add([{"speaker": "Caroline", "content": "I went to a support group yesterday, it was powerful."},
             {"speaker": "Melanie", "content": "I love painting sunsets with my kids at the lake."},
             {"speaker": "Caroline", "content": "My favourite coffee is a dark roast from Kenya."}],
            user_id="u", session_id="s1")
    mem.add([{"speaker": "Melanie", "content": "I love painting sunsets with my kids at the lake!"},
             {"speaker": "Caroline", "content": "The adoption agency called me back about the interview."}],
            user_id="u", session_id="s2")
    mem.flush()


@pytest.mark.parametrize("fusion", ["learned", "rrf"])
def test_hits_explain_themselves_and_a_near_duplicate_is_shown_once(
        open_memory, fusion: str) -> None:  # noqa: ANN001 - a fixture factory
    mem = open_memory(config=Config(agent=AgentConfig(extractor="off"),
                                    retrieval=RetrievalConfig(fusion=fusion)))
    _conversation(mem)
    hits = mem.search("When does Melanie paint sunsets with her kids?", user_id="u", k=5)
    texts = [h.memory.text for h in hits]
    assert texts[0].startswith("I love painting sunsets")
    assert sum(t.startswith("I love painting sunsets") for t in texts) == 1
    assert all(h.channels and len(h.reasons) == len(h.channels) for h in hits)
    assert "fulltext" in hits[0].channels and "speaker" in hits[0].channels
    if fusion == "learned":
        assert all(0.0 < h.score < 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_without_collapsing_both_copies_are_found(open_memory) -> None:  # noqa: ANN001
    mem = open_memory(config=Config(agent=AgentConfig(extractor="off"),
                                    retrieval=RetrievalConfig(collapse=False)))
    _conversation(mem)
    hits = mem.search("When does Melanie paint sunsets with her kids?", user_id="u", k=5)
    assert sum(h.memory.text.startswith("I love painting sunsets") for h in hits) == 2


def test_a_query_naming_two_people_recalls_each_part(open_memory) -> None:  # noqa: ANN001
    mem = open_memory(config=Config(agent=AgentConfig(extractor="off")))
    _conversation(mem)
    hits = mem.search("What do Caroline and Melanie both enjoy?", user_id="u", k=5)
    assert any("aspects" in h.channels for h in hits)
    speakers = {h.memory.role for h in hits[:3]}
    assert {"Caroline", "Melanie"} <= speakers
