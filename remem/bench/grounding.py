"""``remem bench grounding``: precision and recall of the grounding step's refusals.

Each line of the corpus (``benchmarks/grounding/candidates.jsonl``, format in its README)
is one candidate memory with the turns it was proposed from and a label: ``supported``,
``unsupported`` or ``wrong_subject``. The candidate goes through
:func:`remem.extract.ground` with its turns as the batch; a refusal is a positive.

- ``precision``: the share of refusals whose line is labelled ``unsupported`` or
  ``wrong_subject``; ``recall``: the share of those lines that were refused;
- ``refused_share`` per label: for ``supported`` lines, the false refusals;
- the same per language and per split (``dev`` may be tuned on, ``heldout`` must not be).
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from ..embed import Embedder
from ..extract.base import Candidate, EpisodeIn, ground
from .labelled import read_labelled

__all__ = ["LABELS", "load", "run"]

LABELS = ("supported", "unsupported", "wrong_subject")


def _check(row: dict[str, Any]) -> None:
    if row["label"] not in LABELS:
        raise ValueError(f"label {row['label']!r} is not one of {', '.join(LABELS)}")
    row["_episodes"] = [
        EpisodeIn(id=t["id"], text=t["text"], role=t.get("speaker"),
                  event_time=datetime.fromisoformat(t["time"]) if t.get("time") else None,
                  session_id=row["id"]) for t in row["turns"]]
    row["_candidate"] = Candidate(rule="corpus", **row["candidate"])


def load(data: str | Path) -> list[dict[str, Any]]:
    """The corpus lines, checked: a malformed line is a clear error naming it."""
    return read_labelled(data, _check)


def _figures(rows: list[tuple[dict[str, Any], bool]]) -> dict[str, Any]:
    bad = [refused for row, refused in rows if row["label"] != "supported"]
    good = [refused for row, refused in rows if row["label"] == "supported"]
    tp, fp = sum(bad), sum(good)
    out: dict[str, Any] = {
        "n": len(rows),
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / len(bad), 4) if bad else None,
        "kept_supported": round(1 - fp / len(good), 4) if good else None,
    }
    for label in LABELS:
        got = [refused for row, refused in rows if row["label"] == label]
        if got:
            out[f"refused_share/{label}"] = round(sum(got) / len(got), 4)
    return out


def run(data: str | Path, *, embedder: Embedder | None = None, attribution: bool = True,
        split: str | None = None) -> dict[str, Any]:
    """Ground every line's candidate against its turns; figures overall, per label, language
    and split, and the lines decided wrongly with the reason given."""
    rows = [r for r in load(data) if split is None or r["split"] == split]
    started = time.perf_counter()
    decided: list[tuple[dict[str, Any], bool]] = []
    wrong: list[dict[str, Any]] = []
    for row in rows:
        result = ground([row["_candidate"]], row["_episodes"], embedder=embedder,
                        attribution=attribution)
        refused = bool(result.rejected)
        decided.append((row, refused))
        if refused != (row["label"] != "supported"):
            wrong.append({"id": row["id"], "label": row["label"], "text": row["candidate"]["text"],
                          "reason": result.rejected[0].reason if refused else None})
    seconds = time.perf_counter() - started
    groups: dict[str, list[tuple[dict[str, Any], bool]]] = defaultdict(list)
    for row, refused in decided:
        for key in (f"lang:{row['lang']}", f"split:{row['split']}",
                    f"split:{row['split']}/lang:{row['lang']}"):
            groups[key].append((row, refused))
    return {"data": str(data), "embedder": embedder.name if embedder is not None else None,
            "attribution": attribution, **_figures(decided),
            "by": {k: _figures(v) for k, v in sorted(groups.items())},
            "seconds": round(seconds, 2), "errors": wrong}
