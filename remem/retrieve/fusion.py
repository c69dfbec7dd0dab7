"""Ranking functions: rank fusion by hand-set weights, and the learned fusion model."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["WEIGHTS_FILE", "LearnedFusion", "load_fusion", "rrf", "rrf_add"]

#: The learned fusion shipped in this package.
WEIGHTS_FILE = "fusion_weights.json"


def rrf(
    rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: float
) -> tuple[dict[int, float], dict[int, dict[str, int]]]:
    """Weighted reciprocal rank fusion.

    ``rankings`` maps a channel name to ids, best first. Returns each id's fused score
    (sum over channels of ``weight / (k + rank)``) and its 1-based rank in each channel.
    """
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for channel, ids in rankings.items():
        rrf_add(scores, ranks, channel, ids, weights.get(channel, 1.0), k)
    return scores, ranks


def rrf_add(scores: dict[int, float], ranks: dict[int, dict[str, int]], channel: str,
            ids: Sequence[int], weight: float, k: float) -> None:
    """Add one more channel to what :func:`rrf` returned, in place: the same sums as
    :func:`rrf` over all the channels, which adds them in the same order."""
    for rank, item in enumerate(ids, start=1):
        scores[item] = scores.get(item, 0.0) + weight / (k + rank)
        got = ranks.get(item)
        if got is None:
            ranks[item] = {channel: rank}
        else:
            got[channel] = rank


@dataclass(frozen=True)
class LearnedFusion:
    """A linear learning-to-rank model over :data:`~remem.retrieve.features.FEATURES`:
    features are centred and scaled as on the training data, then
    ``sigmoid(bias + coef . x)`` is the probability that a candidate cites evidence.

    Trained by ``python -m remem.bench.train_fusion``; shipped as ``fusion_weights.json``.
    """

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    trained_on: str = ""

    def score(self, x: np.ndarray) -> np.ndarray:
        """Each row's probability of being evidence (0..1)."""
        if x.shape[0] == 0:
            return np.zeros(0)
        z = ((x - self.mean) / self.scale) @ self.coef + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))

    def to_json(self) -> dict[str, Any]:
        """The model as the weights file holds it."""
        return {"features": list(self.features), "mean": [round(float(v), 6) for v in self.mean],
                "scale": [round(float(v), 6) for v in self.scale],
                "coef": [round(float(v), 6) for v in self.coef], "bias": round(self.bias, 6),
                "trained_on": self.trained_on}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], expected: Sequence[str]) -> LearnedFusion:
        """The model of a weights file; a ValueError if its features are not ``expected``."""
        names = tuple(data["features"])
        if names != tuple(expected):
            raise ValueError("the fusion weights were trained on other features "
                             f"({len(names)} against {len(expected)}); retrain them")
        arr = {k: np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")}
        if any(a.shape != (len(names),) for a in arr.values()):
            raise ValueError("the fusion weights file is malformed")
        return cls(names, arr["mean"], np.where(arr["scale"] > 0, arr["scale"], 1.0), arr["coef"],
                   float(data["bias"]), str(data.get("trained_on", "")))


def load_fusion(path: str | Path | None, expected: Sequence[str]) -> LearnedFusion:
    """The learned fusion in ``path``, or the one shipped with remem when None."""
    if path is None:
        text = resources.files(__package__).joinpath(WEIGHTS_FILE).read_text()
    else:
        text = Path(path).read_text()
    return LearnedFusion.from_json(json.loads(text), expected)
