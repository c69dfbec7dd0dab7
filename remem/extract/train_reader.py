"""Train the pair reader: ``python -m remem.extract.train_reader`` (needs torch).

The pair reader reads a known memory and a new statement together, as one input to the
bundled encoder (see :mod:`remem.embed.transformer`), and says what the new one does to
the old: supersede, same, compatible, unrelated, forget, keep. Its weights are low-rank
deltas of the encoder's attention projections and a linear layer over the pooled states,
trained here from ``training/pairs_*.jsonl`` (and ``training/v2/pairs_*.jsonl``) and
written to ``training/reader.npz``; at run time the reader needs only numpy.

Training is deterministic: the same data, seed and thread count give the same weights.
Before the final fit it holds out every fifth pair (by a hash of its texts, as
:mod:`remem.extract.train` does) and prints the accuracy of a fit on the rest.

Options: ``--out PATH``, ``--report PATH``, ``--epochs N``, ``--rank N``, ``--no-final``.
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..embed.transformer import Encoder
from .heads import PAIR_LABELS

__all__ = ["load_pairs", "main", "train"]

HERE = Path(__file__).parent / "training"
#: the projections that get a low-rank delta
TARGETS = ("q", "k", "v", "ao", "fi", "fo")


def load_pairs() -> list[dict[str, Any]]:
    """Every labelled pair of the training folders."""
    rows: list[dict[str, Any]] = []
    for path in sorted([*HERE.glob("pairs_*.jsonl"), *HERE.glob("v2/pairs_*.jsonl")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("label") in PAIR_LABELS:
                    rows.append({**row, "folder": path.parent.name})
    return rows


def held(pair: dict[str, Any]) -> bool:
    """Whether a pair is in the held-out fifth."""
    return zlib.crc32((pair["old"] + pair["new"]).encode()) % 5 == 0


def _model(encoder: Encoder, rank: int, start: int) -> Any:
    """The encoder in torch, frozen, with trainable deltas in layers ``start`` and up and
    a linear layer over three poolings (all tokens, the known text's, the new one's)."""
    import torch
    from torch import nn

    w = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in encoder.w.items()}
    H, NH, eps = encoder.hidden, encoder.heads, encoder.eps

    class PairModel(nn.Module):
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
            self.head = nn.Linear(3 * H, len(PAIR_LABELS))
            with torch.no_grad():
                self.head.weight.copy_(torch.randn(len(PAIR_LABELS), 3 * H, generator=gen) * 0.02)
                self.head.bias.zero_()
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

        def forward(self, x: Any, mask: Any, segment: Any) -> Any:
            x = self.layers(x, mask, self.start, encoder.layers)
            parts = []
            for m in (mask, mask & (segment == 0), mask & (segment == 1)):
                mf = m.float()[..., None]
                parts.append((x * mf).sum(1) / mf.sum(1).clamp(min=1))
            return self.head(self.drop(torch.cat(parts, dim=1)))

    return PairModel()


class _Cached:
    """Each pair's tokens and its states after the frozen layers, computed once."""

    def __init__(self, encoder: Encoder, model: Any, pairs: Sequence[dict[str, Any]]) -> None:
        import torch

        self.states: list[Any] = []
        self.segments: list[np.ndarray] = []
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i]["old"]) + len(pairs[i]["new"]))
        found: dict[int, tuple[Any, np.ndarray]] = {}
        with torch.no_grad():
            for i in range(0, len(order), 64):
                idx = order[i:i + 64]
                batch = encoder.encode([pairs[j]["old"] for j in idx], [pairs[j]["new"] for j in idx])
                mask = torch.from_numpy(batch.mask)
                x = model.lower(torch.from_numpy(encoder.word_embeddings(batch.ids)), mask)
                for row, j in enumerate(idx):
                    n = int(batch.mask[row].sum())
                    found[j] = (x[row, :n].clone(), batch.segment[row, :n].astype(np.int64))
        for j in range(len(pairs)):
            self.states.append(found[j][0])
            self.segments.append(found[j][1])

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


def fit(encoder: Encoder, pairs: Sequence[dict[str, Any]], *, epochs: int = 6, rank: int = 8,
        start: int = 6, batch_size: int = 32, lr: float = 2e-3, log: bool = True) -> Any:
    """A pair model fitted to ``pairs``."""
    import torch

    torch.manual_seed(0)
    model = _model(encoder, rank, start)
    begin = time.time()
    cached = _Cached(encoder, model, pairs)
    if log:
        print(f"frozen layers: {time.time() - begin:.0f} s", flush=True)
    y_all = np.array([PAIR_LABELS.index(p["label"]) for p in pairs])
    counts = np.bincount(y_all, minlength=len(PAIR_LABELS)).astype(np.float32)
    weight = torch.tensor(np.where(counts > 0, len(y_all) / (len(PAIR_LABELS) * np.maximum(counts, 1)),
                                   0.0), dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(pairs) + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    rng = np.random.default_rng(0)
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(len(pairs))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = [int(j) for j in order[i:i + batch_size]]
            logits = model(*cached.batch(idx))
            loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y_all[idx]), weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        if log:
            print(f"epoch {epoch + 1}: loss {total / len(pairs):.4f} ({time.time() - begin:.0f} s)",
                  flush=True)
    model.eval()
    return model


def predict(encoder: Encoder, model: Any, pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    """Label probabilities of each pair under a fitted torch model."""
    import torch

    if not pairs:
        return np.zeros((0, len(PAIR_LABELS)))
    cached = _Cached(encoder, model, pairs)
    out = []
    with torch.no_grad():
        for i in range(0, len(pairs), 64):
            idx = list(range(i, min(len(pairs), i + 64)))
            out.append(torch.softmax(model(*cached.batch(idx)), dim=1).numpy())
    return np.concatenate(out)


def export(model: Any) -> dict[str, np.ndarray]:
    """The fitted weights as plain arrays (float16) for ``reader.npz``."""
    arrays = {f"a.{k.replace('_', '.')}": v.detach().numpy() for k, v in model.a.items()}
    arrays.update({f"b.{k.replace('_', '.')}": v.detach().numpy() for k, v in model.b.items()})
    arrays["head_w"] = model.head.weight.detach().numpy().T
    arrays["head_b"] = model.head.bias.detach().numpy()
    return {k: v.astype(np.float16) for k, v in arrays.items()}


def _report(probs: np.ndarray, pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    y = np.array([PAIR_LABELS.index(p["label"]) for p in pairs])
    pred = probs.argmax(1)
    out: dict[str, Any] = {"accuracy": round(float((pred == y).mean()), 3)}
    for lang in sorted({p.get("lang", "en") for p in pairs}):
        m = np.array([p.get("lang", "en") == lang for p in pairs])
        out[lang] = round(float((pred[m] == y[m]).mean()), 3)
    sup = PAIR_LABELS.index("supersede")
    tp = int(((pred == sup) & (y == sup)).sum())
    out["supersede_precision"] = round(tp / max(1, int((pred == sup).sum())), 3)
    out["supersede_recall"] = round(tp / max(1, int((y == sup).sum())), 3)
    return out


def train(*, epochs: int = 6, rank: int = 8, start: int = 6, lr: float = 2e-3,
          final: bool = True) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The reader's weights (fitted on every pair) and the held-out fifth's figures, for
    all pairs and for each training folder apart."""
    import torch

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    encoder = Encoder.load()
    pairs = load_pairs()
    train_part = [p for p in pairs if not held(p)]
    test_part = [p for p in pairs if held(p)]
    settings = {"epochs": epochs, "rank": rank, "start": start, "lr": lr}
    model = fit(encoder, train_part, **settings)
    probs = predict(encoder, model, test_part)
    report: dict[str, Any] = {"pairs": len(pairs), **settings,
                              "heldout": _report(probs, test_part)}
    for folder in sorted({p["folder"] for p in test_part}):
        mine = [n for n, p in enumerate(test_part) if p["folder"] == folder]
        report[f"heldout_{folder}"] = _report(probs[mine], [test_part[n] for n in mine])
    print(json.dumps(report), flush=True)
    if final:
        model = fit(encoder, pairs, **settings)
    return export(model), report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m remem.extract.train_reader", description=__doc__)
    parser.add_argument("--out", default=str(HERE / "reader.npz"))
    parser.add_argument("--report", default=None)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--start", type=int, default=6, help="the first layer with deltas")
    parser.add_argument("--no-final", action="store_true", help="evaluate only, write nothing")
    args = parser.parse_args(argv)
    arrays, report = train(epochs=args.epochs, rank=args.rank, start=args.start, lr=args.lr,
                           final=not args.no_final)
    if not args.no_final:
        np.savez_compressed(args.out, **arrays)
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
