"""Train a tuned reader: ``python -m remem.extract.train_reader pairs|statements`` (needs torch).

A tuned reader is the bundled encoder (see :mod:`remem.embed.transformer`) with trained
low-rank deltas in its upper layers and one linear layer per task. Two are trained:

- ``pairs`` (task ``pair``): a known memory and a new statement, read together as one
  input, and what the new one does to the old (:data:`~remem.extract.heads.PAIR_LABELS`);
- ``statements`` (tasks ``kind``, ``intent``, ``level``, ``threat``): one statement,
  read with its speaker's role; ``threat`` (does it try to instruct the agent against its
  user) learns from the screening lines, with every other statement as a negative, and
  its thresholds by trust level are chosen on the held-out fifth and saved with it.

They learn from ``training/pairs_*.jsonl``, ``training/statements_*.jsonl`` and
``training/threats*.jsonl`` and the same files under ``training/v2/``, and are written
to ``training/reader_pairs.npz`` and ``training/reader_statements.npz`` (plain float16
arrays); at run time they need only numpy. Training is deterministic: the same data,
seed and thread count give the same weights. First it holds out every fifth example (by
a hash of its text, as :mod:`remem.extract.train` does) and prints the figures of a fit
on the rest, per task, language and training folder.

Options: ``--out PATH``, ``--report PATH``, ``--epochs N``, ``--rank N``, ``--start N``
(the first layer with deltas), ``--lr X``, ``--no-final`` (write the fit without the
held-out fifth), ``--no-eval`` (skip it).
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..embed.transformer import Encoder
from .heads import INTENTS, KIND_LABELS, LEVELS, PAIR_LABELS, THREAT_LABELS, TunedReader
from .train import SPEAKER_TRUST, screen_thresholds

__all__ = ["MODELS", "Example", "TASKS", "load_examples", "main", "train"]

HERE = Path(__file__).parent / "training"
#: the projections that get a low-rank delta
TARGETS = ("q", "k", "v", "ao", "fi", "fo")
#: each task's labels
TASKS: dict[str, tuple[str, ...]] = {"pair": PAIR_LABELS, "kind": KIND_LABELS, "intent": INTENTS,
                                     "level": LEVELS, "threat": THREAT_LABELS}
#: the readers trained, and their tasks
MODELS: dict[str, tuple[str, ...]] = {"pairs": ("pair",),
                                      "statements": ("kind", "intent", "level", "threat")}


@dataclass(frozen=True)
class Example:
    """One input (two segments) with its labels by task (-1: not labelled)."""

    first: str
    second: str
    labels: dict[str, int]
    lang: str
    folder: str
    held: bool
    #: the file it came from (its name without ``.jsonl``)
    source: str = ""


def _rows(pattern: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(folder, file name, row) for each row of the training files matching ``pattern``."""
    out = []
    for path in sorted([*HERE.glob(pattern), *HERE.glob(f"v2/{pattern}")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append((path.parent.name, path.stem, json.loads(line)))
    return out


def _hash_held(text: str) -> bool:
    return zlib.crc32(text.encode()) % 5 == 0


def load_examples(tasks: Sequence[str] = tuple(TASKS)) -> list[Example]:
    """Every labelled pair and statement of the training folders, for ``tasks``."""
    out: list[Example] = []
    if "pair" in tasks:
        for folder, source, r in _rows("pairs_*.jsonl"):
            if r.get("label") in PAIR_LABELS:
                out.append(Example(r["old"], r["new"], {"pair": PAIR_LABELS.index(r["label"])},
                                   r.get("lang", "en"), folder, _hash_held(r["old"] + r["new"]), source))
    wanted = [t for t in ("kind", "intent", "level", "threat") if t in tasks]
    if not wanted:
        return out
    # the screening files first: their lines are labelled for threat alone, and every
    # other statement is a negative for it
    rows = _rows("threats*.jsonl") if "threat" in wanted else []
    rows += _rows("statements_*.jsonl")
    seen: set[tuple[str, str]] = set()
    for folder, source, r in rows:
        role = r.get("role", "user")
        if (role, r["text"]) in seen:
            continue
        seen.add((role, r["text"]))
        if "threat" in r:
            labels = {t: -1 for t in wanted} | {"threat": int(bool(r["threat"]))}
        else:
            labels = {t: TASKS[t].index(r[t]) if r.get(t) in TASKS[t] else -1 for t in wanted}
            if "threat" in wanted:
                labels["threat"] = 0
        if any(v >= 0 for v in labels.values()):
            out.append(Example(role, r["text"], labels, r.get("lang", "en"), folder,
                               _hash_held(r["text"]), source))
    return out


def _model(encoder: Encoder, rank: int, start: int, tasks: Sequence[str]) -> Any:
    """The encoder in torch, frozen, with trainable deltas in layers ``start`` and up and
    a linear layer per task over three poolings (all tokens, the first segment's, the
    second's)."""
    import torch
    from torch import nn

    w = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in encoder.w.items()}
    H, NH, eps = encoder.hidden, encoder.heads, encoder.eps

    class ReaderModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            gen = torch.Generator().manual_seed(0)
            self.start = start
            self.a = nn.ParameterDict()
            self.b = nn.ParameterDict()
            for layer in range(start, encoder.layers):
                for p in TARGETS:
                    rows, cols = w[f"l{layer}.{p}.w"].shape
                    self.a[f"l{layer}_{p}"] = nn.Parameter(torch.randn(rank, cols, generator=gen) * 0.01)
                    self.b[f"l{layer}_{p}"] = nn.Parameter(torch.zeros(rows, rank))
            self.heads = nn.ModuleDict()
            for task in tasks:
                head = nn.Linear(3 * H, len(TASKS[task]))
                with torch.no_grad():
                    head.weight.copy_(torch.randn(len(TASKS[task]), 3 * H, generator=gen) * 0.02)
                    head.bias.zero_()
                self.heads[task] = head
            self.drop = nn.Dropout(0.1)

        def proj(self, layer: int, name: str, x: Any) -> Any:
            out = x @ w[f"l{layer}.{name}.w"].T + w[f"l{layer}.{name}.b"]
            key = f"l{layer}_{name}"
            if key in self.a:
                out = out + (self.drop(x) @ self.a[key].T) @ self.b[key].T
            return out

        def layers(self, x: Any, mask: Any, first: int, last: int) -> Any:
            n, length, _ = x.shape
            hd = H // NH
            bias = (~mask).float()[:, None, None, :] * -1e9
            for layer in range(first, last):
                q, k, v = (self.proj(layer, p, x).view(n, length, NH, hd).transpose(1, 2) for p in "qkv")
                att = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5 + bias, dim=-1)
                ctx = (att @ v).transpose(1, 2).reshape(n, length, H)
                x = nn.functional.layer_norm(x + self.proj(layer, "ao", ctx), (H,),
                                             w[f"l{layer}.aln.w"], w[f"l{layer}.aln.b"], eps)
                mid = nn.functional.gelu(self.proj(layer, "fi", x))
                x = nn.functional.layer_norm(x + self.proj(layer, "fo", mid), (H,),
                                             w[f"l{layer}.oln.w"], w[f"l{layer}.oln.b"], eps)
            return x

        def lower(self, emb: Any, mask: Any) -> Any:
            """The frozen layers' states, computed once per input."""
            length = emb.shape[1]
            x = nn.functional.layer_norm(emb + w["pos"][:length] + w["type"], (H,), w["eln.w"],
                                         w["eln.b"], eps)
            return self.layers(x, mask, 0, self.start)

        def forward(self, x: Any, mask: Any, segment: Any) -> dict[str, Any]:
            x = self.layers(x, mask, self.start, encoder.layers)
            parts = []
            for m in (mask, mask & (segment == 0), mask & (segment == 1)):
                mf = m.float()[..., None]
                parts.append((x * mf).sum(1) / mf.sum(1).clamp(min=1))
            pooled = self.drop(torch.cat(parts, dim=1))
            return {task: head(pooled) for task, head in self.heads.items()}

    return ReaderModel()


class _Cached:
    """Each input's tokens and its states after the frozen layers, computed once."""

    def __init__(self, encoder: Encoder, model: Any, examples: Sequence[Example]) -> None:
        import torch

        order = sorted(range(len(examples)), key=lambda i: len(examples[i].first) + len(examples[i].second))
        self.states: list[Any] = [None] * len(examples)
        self.segments: list[np.ndarray] = [np.zeros(0)] * len(examples)
        with torch.no_grad():
            for i in range(0, len(order), 64):
                idx = order[i:i + 64]
                batch = encoder.encode([examples[j].first for j in idx], [examples[j].second for j in idx])
                x = model.lower(torch.from_numpy(encoder.word_embeddings(batch.ids)),
                                torch.from_numpy(batch.mask))
                for row, j in enumerate(idx):
                    n = int(batch.mask[row].sum())
                    self.states[j] = x[row, :n].clone()
                    self.segments[j] = batch.segment[row, :n].astype(np.int64)

    def batch(self, idx: Sequence[int]) -> tuple[Any, Any, Any]:
        import torch

        length = max(len(self.segments[j]) for j in idx)
        x = torch.zeros(len(idx), length, self.states[idx[0]].shape[1])
        mask = torch.zeros(len(idx), length, dtype=torch.bool)
        seg = torch.zeros(len(idx), length, dtype=torch.int64)
        for row, j in enumerate(idx):
            n = len(self.segments[j])
            x[row, :n], mask[row, :n] = self.states[j], True
            seg[row, :n] = torch.from_numpy(self.segments[j])
        return x, mask, seg


def _weights(examples: Sequence[Example], task: str) -> Any:
    """Class weights that balance a task's labels."""
    import torch

    y = np.array([e.labels.get(task, -1) for e in examples])
    y = y[y >= 0]
    counts = np.bincount(y, minlength=len(TASKS[task])).astype(np.float32)
    return torch.tensor(np.where(counts > 0, len(y) / (len(TASKS[task]) * np.maximum(counts, 1)), 0.0),
                        dtype=torch.float32)


def fit(encoder: Encoder, examples: Sequence[Example], tasks: Sequence[str], *, epochs: int = 8,
        rank: int = 8, start: int = 6, batch_size: int = 32, lr: float = 2e-3, log: bool = True) -> Any:
    """A reader model fitted to ``examples``."""
    import torch

    torch.manual_seed(0)
    model = _model(encoder, rank, start, tasks)
    begin = time.time()
    cached = _Cached(encoder, model, examples)
    if log:
        print(f"frozen layers: {time.time() - begin:.0f} s", flush=True)
    labels = {t: torch.tensor([e.labels.get(t, -1) for e in examples]) for t in tasks}
    weights = {t: _weights(examples, t) for t in tasks}
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(examples) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    rng = np.random.default_rng(0)
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(len(examples))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = [int(j) for j in order[i:i + batch_size]]
            logits = model(*cached.batch(idx))
            loss = torch.zeros(())
            for task in tasks:
                y = labels[task][idx]
                if (y >= 0).any():
                    loss = loss + torch.nn.functional.cross_entropy(
                        logits[task], y, weight=weights[task], ignore_index=-1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if log:
            print(f"epoch {epoch + 1}: loss {total / len(examples):.4f} ({time.time() - begin:.0f} s)",
                  flush=True)
    model.eval()
    return model


def predict(encoder: Encoder, model: Any, examples: Sequence[Example]) -> dict[str, np.ndarray]:
    """Label probabilities by task of each example under a fitted torch model."""
    import torch

    cached = _Cached(encoder, model, examples)
    out: dict[str, list[np.ndarray]] = {t: [] for t in model.heads}
    with torch.no_grad():
        for i in range(0, len(examples), 64):
            logits = model(*cached.batch(list(range(i, min(len(examples), i + 64)))))
            for task, z in logits.items():
                out[task].append(torch.softmax(z, dim=1).numpy())
    return {t: np.concatenate(v) for t, v in out.items()}


def export(model: Any) -> dict[str, np.ndarray]:
    """The fitted weights as plain float16 arrays: ``a.l6.q`` / ``b.l6.q`` (the delta
    ``B @ A`` of layer 6's query projection), ``<task>_w`` / ``<task>_b``."""
    arrays = {f"a.{k.replace('_', '.')}": v.detach().numpy() for k, v in model.a.items()}
    arrays.update({f"b.{k.replace('_', '.')}": v.detach().numpy() for k, v in model.b.items()})
    for task, head in model.heads.items():
        arrays[f"{task}_w"] = head.weight.detach().numpy().T
        arrays[f"{task}_b"] = head.bias.detach().numpy()
    return {k: v.astype(np.float16) for k, v in arrays.items()}


def _figures(probs: np.ndarray, y: np.ndarray, langs: Sequence[str], task: str) -> dict[str, float]:
    pred = probs.argmax(1)
    out = {"accuracy": round(float((pred == y).mean()), 3)}
    for lang in sorted(set(langs)):
        m = np.array([g == lang for g in langs])
        out[lang] = round(float((pred[m] == y[m]).mean()), 3)
    if task == "pair":
        sup = PAIR_LABELS.index("supersede")
        tp = int(((pred == sup) & (y == sup)).sum())
        out["supersede_precision"] = round(tp / max(1, int((pred == sup).sum())), 3)
        out["supersede_recall"] = round(tp / max(1, int((y == sup).sum())), 3)
    return out


def _report(probs: dict[str, np.ndarray], examples: Sequence[Example]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for task, p in probs.items():
        for folder in [None, *sorted({e.folder for e in examples})]:
            rows = [n for n, e in enumerate(examples) if e.labels.get(task, -1) >= 0
                    and (folder is None or e.folder == folder)]
            if rows:
                key = task if folder is None else f"{task}_{folder}"
                report[key] = _figures(p[rows], np.array([examples[n].labels[task] for n in rows]),
                                       [examples[n].lang for n in rows], task)
    return report


def _screening(probs: dict[str, np.ndarray], examples: Sequence[Example]
               ) -> tuple[np.ndarray, dict[str, Any]]:
    """The screening thresholds by trust level, chosen on the held-out ``examples`` (see
    :func:`remem.extract.train.screen_thresholds`), and what they give there."""
    rows = [n for n, e in enumerate(examples) if e.labels.get("threat", -1) >= 0]
    p = probs["threat"][rows, 1]
    truth = np.array([examples[n].labels["threat"] for n in rows])
    hard = np.array([examples[n].source.startswith("threats") for n in rows])
    trusts = [SPEAKER_TRUST.get(examples[n].first, "user") for n in rows]
    thresholds, report = screen_thresholds(p, truth, hard, trusts)
    return np.array(thresholds, dtype=np.float32), report


def train(*, tasks: Sequence[str] = MODELS["pairs"], epochs: int = 8, rank: int = 8, start: int = 6,
          lr: float = 2e-3, final: bool = True, evaluate: bool = True
          ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The reader's weights and the held-out fifth's figures. ``final``: the weights are
    fitted on everything (else they are the fit without the held-out fifth);
    ``evaluate``: run the held-out fit at all."""
    import torch

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    encoder = Encoder.load()
    examples = load_examples(tasks)
    settings = {"epochs": epochs, "rank": rank, "start": start, "lr": lr}
    report: dict[str, Any] = {"examples": len(examples), "tasks": list(tasks), **settings}
    model, thresholds = None, None
    if evaluate or not final:
        test = [e for e in examples if e.held]
        model = fit(encoder, [e for e in examples if not e.held], tasks, **settings)
        probs = predict(encoder, model, test)
        report["heldout"] = _report(probs, test)
        if "threat" in tasks:
            thresholds, report["heldout"]["screening"] = _screening(probs, test)
        print(json.dumps(report), flush=True)
    if final:
        model = fit(encoder, examples, tasks, **settings)
    arrays = export(model)
    if "threat" in tasks and thresholds is not None:
        arrays["threat_thresholds"] = thresholds
    return arrays, report


def rescreen(path: Path) -> dict[str, Any]:
    """Choose again the screening thresholds of the statements reader in ``path`` on its
    held-out fifth (after a change of the false-alarm shares of
    :func:`remem.extract.train.screen_thresholds`), with the numpy reader that ships, and
    write them into the file; no training. Valid for a ``--no-final`` fit only, which
    never saw the fifth. Returns what the thresholds give there."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    reader = TunedReader(arrays)
    test = [e for e in load_examples(("threat",)) if e.held and e.labels.get("threat", -1) >= 0]
    p = reader.probs([e.first for e in test], [e.second for e in test], ["threat"])["threat"]
    thresholds, report = _screening({"threat": p}, test)
    arrays["threat_thresholds"] = thresholds
    np.savez_compressed(path, **arrays)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m remem.extract.train_reader", description=__doc__)
    parser.add_argument("model", choices=sorted(MODELS), help="which reader to train")
    parser.add_argument("--out", default=None, help="default: training/reader_<model>.npz")
    parser.add_argument("--report", default=None)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--start", type=int, default=6, help="the first layer with deltas")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--no-final", action="store_true",
                        help="write the fit without the held-out fifth instead of fitting on everything")
    parser.add_argument("--no-eval", action="store_true", help="fit on everything, skip the held-out fit")
    parser.add_argument("--thresholds-only", action="store_true",
                        help="statements: choose the screening thresholds of the shipped reader "
                             "again on its held-out fifth, without training")
    args = parser.parse_args(argv)
    if args.thresholds_only:
        if args.model != "statements":
            parser.error("--thresholds-only is for the statements reader")
        print(json.dumps(rescreen(Path(args.out) if args.out else HERE / "reader_statements.npz")))
        return
    arrays, report = train(tasks=MODELS[args.model], epochs=args.epochs, rank=args.rank,
                           start=args.start, lr=args.lr, final=not args.no_final,
                           evaluate=not args.no_eval)
    np.savez_compressed(args.out or HERE / f"reader_{args.model}.npz", **arrays)
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
