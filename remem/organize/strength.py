"""How strong a memory still is, and forgetting by decay.

Strength falls by half every ``half_life`` days (per kind) since the memory was last
used or confirmed, and rises with use and maturity. Under the configured threshold a
memory is archived: hidden from search, still found with ``include_archived``, never
deleted. Pinned memories never decay.
"""

from __future__ import annotations

import math
import time

from ..config import AgentConfig
from ..model import MemoryItem
from ..store.base import Store

__all__ = ["MATURITY_WEIGHT", "decay", "strength"]

MATURITY_WEIGHT = {"candidate": 1.0, "confirmed": 2.0, "canonical": 4.0}


def strength(item: MemoryItem, use_count: int, used_at: float | None, now: float,
             half_lives: dict[str, float]) -> float:
    """A memory's strength at ``now``: 1.0 when new, halving each half-life unused.

    Age counts from when remem stored, changed or last used the memory, not from when
    it was said: a replayed history is not old on arrival."""
    last = max(used_at or 0.0, item.updated_at.timestamp(), item.created_at.timestamp())
    age_days = max(now - last, 0.0) / 86400
    half_life = half_lives.get(item.kind, 90.0)
    recency = 0.5 ** (age_days / half_life)
    return recency * MATURITY_WEIGHT.get(item.maturity, 1.0) * (1 + 0.3 * math.log1p(use_count))


def decay(store: Store, config: AgentConfig, now: float | None = None,
          org_id: str | None = None) -> list[str]:
    """Archive every active, unpinned derived memory (of one org, or all) whose strength
    fell under the threshold; returns the archived ids."""
    now = time.time() if now is None else now
    archived = []
    for scope in list(store.all_scopes(org_id)):
        items = [m for m in store.derived(scope, limit=100_000) if not m.pinned]
        uses = store.use_stats([m.id for m in items])
        for m in items:
            n, used_at = uses.get(m.id, (0, None))
            s = strength(m, n, used_at, now, config.half_life_days)
            if s < config.archive_below:
                store.set_fields(m.id, None, action="archived", status="archived",
                                 reason=f"strength {s:.2f} fell under {config.archive_below:.2f}")
                archived.append(m.id)
    return archived
