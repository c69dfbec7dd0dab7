"""The memory agent's and the scheduler's benchmarks on tiny data written here: the
numbers they print must follow from what the store holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bench_metrics import locomo_sample

from remem.bench.agent import run as agent_run
from remem.bench.context import prefetch, scale


@pytest.fixture
def locomo_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo_sample()))
    return path


def test_the_agent_benchmark_adds_a_conversation_twice_without_new_memories(locomo_file: Path) -> None:
    result = agent_run(locomo_file, sample=5)

    assert result["memories_after_first_add"] > 0
    assert result["memories_after_second_add"] == result["memories_after_first_add"]
    assert result["episodes_after_second_add"] == result["episodes_after_first_add"] == result["turns"]
    assert result["subject_is_a_speaker_of_the_cited_turns"] == 1.0
    greyhound = [r for r in result["sample"] if "greyhound" in r["text"]]
    assert greyhound and greyhound[0]["subject"] == "Ann" and greyhound[0]["said_by"] == ["Ann"]


def test_the_prefetch_benchmark_scores_every_question_with_evidence(locomo_file: Path) -> None:
    result = prefetch(locomo_file)

    assert result["questions"] >= 1
    assert 0.0 <= result["evidence_hit_rate"] <= 1.0
    assert result["context_ms_with_working_memory"]["p50"] > 0


def test_the_context_benchmark_times_a_warm_block(tmp_path: Path) -> None:
    result = scale(n=300, calls=20)

    assert result["memories"] == 300 and result["working_memories"] > 0
    assert 0 < result["warm_ms"]["p50"] <= result["warm_ms"]["p95"]
    assert result["core_tokens"] > 0
