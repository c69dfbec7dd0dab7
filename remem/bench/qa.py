"""Answer quality of one system's run: a model answers from the retrieved context, a
judge grades each answer ``judge_runs`` times, token F1 is computed as LoCoMo does."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from .datasets import Dataset, Question
from .harness import SystemRun
from .llm import ChatClient, LLMSettings, answer_messages, judge_messages, parse_verdict
from .metrics import STEMMER_NAME, locomo_f1, token_f1
from .stats import percentile

__all__ = ["evaluate_answers", "gold_for_judge", "score_f1"]

_NOT_THERE = "not mentioned in the conversation (the question's premise is false)"


def _locomo_category(q: Question) -> int | None:
    head = q.category.split(" ", 1)[0]
    return int(head) if head.isdigit() else None


def gold_for_judge(dataset: str, q: Question) -> str:
    """The gold answer the judge compares with; LoCoMo's adversarial questions (5) have
    none, since the right reply is that the conversation does not say."""
    if dataset == "locomo" and _locomo_category(q) == 5:
        return _NOT_THERE
    return q.answer


def score_f1(dataset: str, q: Question, prediction: str) -> float:
    """Token F1 of a prediction: LoCoMo's per-category rules there, plain F1 elsewhere."""
    category = _locomo_category(q) if dataset == "locomo" else None
    if category is not None:
        return locomo_f1(prediction, q.answer, category)
    return token_f1(prediction, q.answer)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = sum(values) / len(values)
    return round(math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)), 4)


def evaluate_answers(run: SystemRun, dataset: Dataset, client: ChatClient,
                     settings: LLMSettings) -> dict[str, Any]:
    """Answer, judge and score every question of ``run``; accuracy per judge run, its
    mean and standard deviation, F1, per category, and the time and tokens spent."""
    turns = {conv.scope: conv.turns() for conv in dataset.conversations}
    rows: list[tuple[str, list[bool], float]] = []
    unparsed = 0
    answer_ms: list[float] = []
    for a in run.answered:
        q, scoped = a.question, turns[a.scope]
        memories = [(scoped[t].time, scoped[t].speaker, scoped[t].text) for t in a.context]
        t0 = time.perf_counter()
        prediction = client.complete(answer_messages(q.text, q.asked_at, memories))
        answer_ms.append((time.perf_counter() - t0) * 1000)
        verdicts = []
        for _ in range(settings.judge_runs):
            reply = client.complete(
                judge_messages(q.text, gold_for_judge(dataset.name, q), prediction, settings.judge),
                temperature=settings.judge_temperature, max_tokens=5)
            verdict = parse_verdict(reply)
            unparsed += verdict is None
            verdicts.append(bool(verdict))
        rows.append((q.category, verdicts, score_f1(dataset.name, q, prediction)))

    def block(selected: list[tuple[str, list[bool], float]]) -> dict[str, Any]:
        runs = [_mean([float(v[i]) for _, v, _ in selected]) for i in range(settings.judge_runs)]
        return {"judge_accuracy": {"mean": _mean(runs), "std": _std(runs), "runs": runs},
                "f1": _mean([f for _, _, f in selected]), "questions": len(selected)}

    out = block([r for r in rows if r[0] in dataset.main_categories])
    out["by_category"] = {c: block([r for r in rows if r[0] == c])
                          for c in dataset.categories if any(r[0] == c for r in rows)}
    out.update({
        "unparsed_verdicts": unparsed,
        "answer_ms": {"p50": round(percentile(answer_ms, 50), 1),
                      "p95": round(percentile(answer_ms, 95), 1)},
        "prompt_tokens": client.prompt_tokens,
        "completion_tokens": client.completion_tokens,
        "f1_stemmer": STEMMER_NAME,
    })
    return out
