"""Score one system's run: retrieval metrics per question, averaged overall and per
category, plus its cost and speed. Every system gets the same keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..text import estimate_tokens
from .datasets import Dataset
from .harness import Answered, SystemRun
from .metrics import (
    budget_cut,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    sessions_of,
)
from .stats import percentile

__all__ = ["BUDGETS", "KS", "METRICS", "question_metrics", "summarise"]

KS = (1, 5, 10, 20, 50)
BUDGETS = (500, 1000, 2000)
_PER_K = ("recall", "recall_any", "recall_all", "ndcg",
          "session_recall", "session_recall_any", "session_recall_all", "session_ndcg")
METRICS = [f"{m}@{k}" for m in _PER_K for k in KS] + [f"recall@{b}tokens" for b in BUDGETS]


def question_metrics(answered: Answered, session_of: dict[str, str],
                     tokens: dict[str, int]) -> dict[str, float]:
    """Every metric of ``METRICS`` for one question."""
    q, ranked = answered.question, answered.ranked
    sessions = sessions_of(ranked, session_of)
    out: dict[str, float] = {}
    for level, ranking, evidence in (("", ranked, q.evidence_turns),
                                     ("session_", sessions, q.evidence_sessions)):
        for k in KS:
            out[f"{level}recall@{k}"] = recall_at_k(ranking, evidence, k)
            out[f"{level}recall_any@{k}"] = recall_any_at_k(ranking, evidence, k)
            out[f"{level}recall_all@{k}"] = recall_all_at_k(ranking, evidence, k)
            out[f"{level}ndcg@{k}"] = ndcg_at_k(ranking, evidence, k)
    for budget in BUDGETS:
        kept = budget_cut(ranked, tokens.__getitem__, budget)
        out[f"recall@{budget}tokens"] = recall_at_k(kept, q.evidence_turns, len(kept))
    return {name: out[name] for name in METRICS}


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "mean": round(sum(values) / len(values), 2) if values else 0.0}


def summarise(run: SystemRun, dataset: Dataset) -> dict[str, Any]:
    """The results entry of one system: headline metrics over the main categories,
    ``by_category``, and cost and speed."""
    maps: dict[str, tuple[dict[str, str], dict[str, int]]] = {}
    for conv in dataset.conversations:  # per scope: LoCoMo reuses "D1:1" in every conversation
        turns = conv.turns().values()
        maps[conv.scope] = ({t.id: t.session_id for t in turns},
                            {t.id: estimate_tokens(t.text) for t in turns})
    rows = [(a.question.category, question_metrics(a, *maps[a.scope])) for a in run.answered]
    main = [r for c, r in rows if c in dataset.main_categories]
    out: dict[str, Any] = _mean(main)
    out["questions"] = len(main)
    out["by_category"] = {
        c: {**_mean([r for cc, r in rows if cc == c]),
            "questions": sum(1 for cc, _ in rows if cc == c)}
        for c in dataset.categories if any(cc == c for cc, _ in rows)
    }
    search = [a.search_ms for a in run.answered]
    out.update({
        "search_ms": _spread(search),
        "ingest_ms_per_turn": _spread(run.add_ms_per_turn),
        "flush_ms_per_session": _spread(run.flush_ms),
        "ingest_turns_per_s": round(run.turns / run.ingest_s, 1) if run.ingest_s else None,
        "context_tokens": _spread([float(a.context_tokens) for a in run.answered]),
        "store_bytes": run.store_bytes,
        "peak_rss_mb": run.peak_rss_mb,
        "rss_growth_mb": run.rss_growth_mb,
        "turns": run.turns,
        "search_ms_samples": [round(x, 2) for x in search],
    })
    if run.notes:
        out["notes"] = run.notes
    return out
