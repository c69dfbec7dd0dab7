"""Train the retriever's learned fusion on LoCoMo conversations, and ship its weights.

    python -m remem.bench.train_fusion --data locomo10.json --store store \\
        --train-conversations 0-4 --out remem/retrieve/fusion_weights.json

Each chosen conversation is ingested into ``--store`` as ``remem bench locomo --store``
does (or the store there is reused: keep all ten conversations in it and any split can
be trained and measured on it); every question of categories 1-4 is asked; each
candidate of the pool the channels return is labelled by whether it cites an evidence
turn; an L2-regularised logistic regression is fitted by Newton's method (deterministic:
no sampling, no random start). The figures it prints are on the training conversations,
so they are fitted figures; measure on the others with ``remem bench``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._inputs import parse_scope
from ..config import Config, RetrievalConfig
from ..memory import Memory
from ..retrieve.features import FEATURES
from ..retrieve.fusion import LearnedFusion
from ..store.base import Filters
from .baselines import RememSystem
from .datasets import Dataset, load_dataset

__all__ = ["Example", "collect", "fit", "main"]

MAIN_CATEGORIES = ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop")


@dataclass
class Example:
    """One question's pool: features, labels, and the turns each candidate cites."""

    features: np.ndarray
    labels: np.ndarray
    cites: list[list[str]]
    evidence: tuple[str, ...]


def ingest(store: Path, data: Dataset) -> None:
    """Put the conversations into a remem store at ``store`` as the LoCoMo bench does."""
    system = RememSystem(store)
    try:
        for conv in data.conversations:
            for session in conv.sessions:
                system.add_session(conv.scope, session.id, session.time,
                                   [(t.speaker, t.text, {"turn_id": t.id}) for t in session.turns])
            system.flush()
    finally:
        system.close()


def collect(memory: Memory, data: Dataset, *, k: int = 20) -> list[Example]:
    """Every scored question of the main categories as a training example."""
    examples = []
    retriever = memory.retriever
    for conv in data.conversations:
        scope = parse_scope(user_id=conv.scope, nested=True)
        for q in conv.questions:
            if q.skip or q.category not in MAIN_CATEGORIES:
                continue
            found = retriever.candidates(q.text, scope=scope, filters=Filters(), k=k,
                                         now=q.asked_at)
            sources = memory.store.sources(found.rowids)
            cites = [[str(s.metadata.get("turn_id", "")) for s in sources[r]] for r in found.rowids]
            wanted = set(q.evidence_turns)
            labels = np.array([float(any(t in wanted for t in c)) for c in cites])
            examples.append(Example(found.features, labels, cites, q.evidence_turns))
    return examples


def fit(examples: list[Example], *, l2: float = 1.0, steps: int = 50,
        trained_on: str = "") -> LearnedFusion:
    """Logistic regression over every candidate of every example, each question weighing
    the same in total (a long pool does not outvote a short one)."""
    x = np.vstack([e.features for e in examples])
    y = np.concatenate([e.labels for e in examples])
    w = np.concatenate([np.full(len(e.labels), 1.0 / max(len(e.labels), 1)) for e in examples])
    w *= len(w) / w.sum()
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    theta = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0.0  # the bias is not shrunk
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ theta, -30, 30)))
        grad = z.T @ (w * (p - y)) + reg * theta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(reg) + 1e-9 * np.eye(len(theta))
        delta = np.linalg.solve(hess, grad)
        theta -= delta
        if np.max(np.abs(delta)) < 1e-8:
            break
    return LearnedFusion(FEATURES, mean, scale, theta[:-1], float(theta[-1]), trained_on)


def recall_at(examples: list[Example], order: list[np.ndarray], k: int) -> float:
    """Mean share of evidence turns cited by the first ``k`` candidates of each order."""
    total = 0.0
    for e, o in zip(examples, order, strict=True):
        seen = {t for i in o[:k] for t in e.cites[i]}
        total += sum(1 for t in e.evidence if t in seen) / len(e.evidence)
    return round(total / len(examples), 4) if examples else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m remem.bench.train_fusion",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="locomo10.json")
    parser.add_argument("--store", required=True, type=Path,
                        help="a folder with a remem store of these conversations (made if empty)")
    parser.add_argument("--train-conversations", default="0-4",
                        help="conversations to fit on, by position (default 0-4)")
    parser.add_argument("--out", type=Path, help="write the weights here (JSON)")
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty (default 1.0)")
    args = parser.parse_args(argv)
    try:
        data = load_dataset("locomo", args.data).selected(args.train_conversations)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(str(exc))
    args.store.mkdir(parents=True, exist_ok=True)
    if not (args.store / "remem.db").exists():
        ingest(args.store, data)
    config = Config(retrieval=RetrievalConfig(fusion="rrf"))
    memory = Memory(args.store / "remem.db", config=config)
    try:
        examples = collect(memory, data)
    finally:
        memory.close()
    name = f"LoCoMo conversations {args.train_conversations} ({args.data.name}), categories 1-4"
    model = fit(examples, l2=args.l2, trained_on=name)
    by_rrf = [np.arange(len(e.labels)) for e in examples]
    by_model = [np.argsort(-model.score(e.features), kind="stable") for e in examples]
    report: dict[str, Any] = {
        "trained_on": name, "questions": len(examples),
        "candidates": int(sum(len(e.labels) for e in examples)),
        "positives": int(sum(e.labels.sum() for e in examples)),
        "fitted_figures": "on the training conversations themselves",
        "pool_recall": recall_at(examples, by_rrf, 10_000),
        "rrf_recall@10": recall_at(examples, by_rrf, 10),
        "learned_recall@10": recall_at(examples, by_model, 10),
        "coef": {f: round(float(c), 3) for f, c in zip(FEATURES, model.coef, strict=True)},
    }
    if args.out is not None:
        args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n")
        report["written"] = str(args.out)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
