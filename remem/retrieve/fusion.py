"""Pure ranking functions over ``(id, score)`` lists: no database, no model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["rrf"]


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
        weight = weights.get(channel, 1.0)
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            ranks.setdefault(item, {})[channel] = rank
    return scores, ranks
