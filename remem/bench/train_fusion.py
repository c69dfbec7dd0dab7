"""Train the retriever's learned fusion on LoCoMo conversations, and ship its weights.

    python -m remem.bench.train_fusion --data locomo10.json --store store \\
        --train-conversations 0-3 --out remem/retrieve/fusion_weights.json

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
from .datasets import Dataset, load_dataset, parse_selection

__all__ = ["Example", "collect", "fit", "fit_listwise", "load_examples", "main", "save_examples"]

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


def fit_listwise(examples: list[Example], *, l2: float = 1e-3, steps: int = 600,
                 rate: float = 0.02, trained_on: str = "") -> LearnedFusion:
    """A listwise fit: per question, the softmax over its pool should put its mass on
    the evidence (the mean log-probability of each evidence candidate is maximised).
    Full-batch gradient descent from zero with a fixed step: deterministic."""
    kept = [e for e in examples if e.labels.any()]
    x = np.vstack([e.features for e in kept])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    groups = [((e.features - mean) / scale, e.labels / e.labels.sum()) for e in kept]
    theta = np.zeros(x.shape[1])
    for _ in range(steps):
        grad = l2 * theta
        for z, target in groups:
            s = z @ theta
            p = np.exp(s - s.max())
            p /= p.sum()
            grad += z.T @ (p - target) / len(groups)
        theta -= rate * grad
    return LearnedFusion(FEATURES, mean, scale, theta, 0.0, trained_on)


def recall_at(examples: list[Example], order: list[np.ndarray], k: int) -> float:
    """Mean share of evidence turns cited by the first ``k`` candidates of each order."""
    total = 0.0
    for e, o in zip(examples, order, strict=True):
        seen = {t for i in o[:k] for t in e.cites[i]}
        total += sum(1 for t in e.evidence if t in seen) / len(e.evidence)
    return round(total / len(examples), 4) if examples else 0.0


def save_examples(path: Path, examples: list[Example], owners: list[str]) -> None:
    """Keep collected pools, to fit again without asking every question again."""
    arrays: dict[str, Any] = {"owners": np.array(owners)}
    for i, e in enumerate(examples):
        arrays[f"x{i}"] = e.features
        arrays[f"y{i}"] = e.labels
        arrays[f"c{i}"] = np.array(json.dumps(e.cites))
        arrays[f"e{i}"] = np.array(list(e.evidence))
    np.savez_compressed(path, **arrays)


def load_examples(path: Path) -> tuple[list[Example], list[str]]:
    """The pools :func:`save_examples` kept."""
    with np.load(path) as f:
        owners = [str(o) for o in f["owners"]]
        examples = [Example(f[f"x{i}"], f[f"y{i}"], json.loads(str(f[f"c{i}"])),
                            tuple(str(t) for t in f[f"e{i}"])) for i in range(len(owners))]
    return examples, owners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m remem.bench.train_fusion",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="locomo10.json")
    parser.add_argument("--store", required=True, type=Path,
                        help="a folder with a remem store of these conversations (made if empty)")
    parser.add_argument("--train-conversations", default="0-3",
                        help="conversations to fit on, by position (default 0-3, as shipped)")
    parser.add_argument("--out", type=Path, help="write the weights here (JSON)")
    parser.add_argument("--l2", type=float, default=None, help="L2 penalty")
    parser.add_argument("--objective", choices=("listwise", "pointwise"), default="listwise",
                        help="softmax over each pool (default) or logistic per candidate")
    parser.add_argument("--validate-conversations", default=None,
                        help="of the training conversations, these are held out of the fit "
                        "and scored (to choose settings without the report split)")
    parser.add_argument("--examples", type=Path, default=None,
                        help="cache the collected pools in this .npz file (reused if there)")
    args = parser.parse_args(argv)
    try:
        data = load_dataset("locomo", args.data).selected(args.train_conversations)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(str(exc))
    args.store.mkdir(parents=True, exist_ok=True)
    if not (args.store / "remem.db").exists():
        ingest(args.store, data)
    if args.examples is not None and args.examples.exists():
        examples, owners = load_examples(args.examples)
    else:
        config = Config(run_worker=False, retrieval=RetrievalConfig(fusion="rrf"))
        memory = Memory(args.store / "remem.db", config=config)
        try:
            examples, owners = [], []
            for conv in data.conversations:
                got = collect(memory, Dataset(data.name, [conv], data.categories,
                                              data.main_categories, data.protocol))
                examples += got
                owners += [conv.scope] * len(got)
        finally:
            memory.close()
        if args.examples is not None:
            save_examples(args.examples, examples, owners)
    name = f"LoCoMo conversations {args.train_conversations} ({args.data.name}), categories 1-4"
    train = examples
    held: list[Example] = []
    if args.validate_conversations:
        scopes = [c.scope for c in data.conversations]
        out_scopes = {scopes[i] for i in parse_selection(args.validate_conversations, len(scopes))}
        train = [e for e, o in zip(examples, owners, strict=True) if o not in out_scopes]
        held = [e for e, o in zip(examples, owners, strict=True) if o in out_scopes]
    if args.objective == "listwise":
        model = fit_listwise(train, l2=1e-3 if args.l2 is None else args.l2, trained_on=name)
    else:
        model = fit(train, l2=1.0 if args.l2 is None else args.l2, trained_on=name)
    if held:
        report_held = {
            "validation_questions": len(held),
            "validation_rrf_recall@10": recall_at(held, [np.arange(len(e.labels)) for e in held], 10),
            "validation_learned_recall@10": recall_at(
                held, [np.argsort(-model.score(e.features), kind="stable") for e in held], 10)}
        print(json.dumps(report_held))
        examples = train
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
