"""Exact-plan accuracy and per-operator precision and recall of a planner
(``remem bench orchestrate``).

The data is JSON lines, one labelled request each::

    {"id": "d01", "split": "dev", "lang": "en", "now": "2024-05-08T10:00:00+00:00",
     "request": "Record yesterday's meeting with Li Lei and remind me ...",
     "steps": [{"operator": "remember", "text": "meeting with Li Lei", "kind": "event",
                "date": "2024-05-07"},
               {"operator": "link", "entity": "Li Lei", "ref": 0},
               {"operator": "remind", "text": "write the technical report",
                "date": "2024-05-10"}]}

``heldout`` requests were written before the planner was first run on any of them and
never used to change it; ``dev`` ones were read while it was written.

A predicted step matches an expected one when the operator, the dates (``date``,
``until``), ``ref``, ``entity`` and ``audience`` that the label gives are the same
(names case-insensitively) and the label's ``text`` is said: at least 60% of its content
words are in the predicted text, and at least 30% of the predicted text's are in the
label (dates and numbers aside). A plan is exact when its steps match the label's one
for one, in order. ``kind`` is scored apart, on matched remember and update steps.
Operators are counted per request: a predicted operator is right as often as the label
has it.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from ..extract.plan import OPERATORS, Step
from ..extract.plan_factory import Planner
from ..text import content_words
from .labelled import read_labelled

__all__ = ["load", "run", "step_matches"]

_NUMERIC = re.compile(r"^\d+$")
_MONTHS = frozenset("january february march april may june july august september october "
                    "november december".split())


def _check(case: dict[str, Any]) -> None:
    for step in case["steps"]:
        Step.model_validate(step)
    datetime.fromisoformat(case["now"])
    if case.get("split") not in ("dev", "heldout") or not case.get("request"):
        raise ValueError("needs a split (dev or heldout) and a request")


def load(path: str | Path) -> list[dict[str, Any]]:
    """The labelled requests of a file; ValidationError naming the line of a bad one."""
    return read_labelled(path, _check)


def _words(text: str | None) -> set[str]:
    return {w for w in content_words(text or "") if not _NUMERIC.match(w) and w not in _MONTHS}


def step_matches(expected: dict[str, Any], got: Step) -> bool:
    """Whether a predicted step says what the labelled one does (see the module)."""
    if got.operator != expected["operator"]:
        return False
    for key in ("date", "until", "ref"):
        if key in expected and getattr(got, key) != expected[key]:
            return False
    for key in ("entity", "audience"):
        if key in expected and (getattr(got, key) or "").lower() != str(expected[key]).lower():
            return False
    if expected.get("text"):
        want, said = _words(expected["text"]), _words(got.text)
        if not want:
            return True
        if not said or len(want & said) < 0.6 * len(want) or len(want & said) < 0.3 * len(said):
            return False
    return True


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def _score(results: list[dict[str, Any]]) -> dict[str, Any]:
    exact = sum(r["exact"] for r in results)
    per: dict[str, dict[str, Any]] = {}
    tp: Counter[str] = Counter()
    pred: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    for r in results:
        p, g = Counter(r["predicted"]), Counter(r["expected"])
        pred.update(p)
        gold.update(g)
        tp.update({op: min(p[op], g[op]) for op in p})
    for op in OPERATORS:
        if pred[op] or gold[op]:
            per[op] = {"precision": _ratio(tp[op], pred[op]), "recall": _ratio(tp[op], gold[op]),
                       "expected": gold[op], "predicted": pred[op]}
    kinds = [k for r in results for k in r["kinds"]]
    return {
        "requests": len(results),
        "exact_plan": _ratio(exact, len(results)),
        "exact_plans": exact,
        "operator_precision": _ratio(sum(tp.values()), sum(pred.values())),
        "operator_recall": _ratio(sum(tp.values()), sum(gold.values())),
        "kind_accuracy": _ratio(sum(kinds), len(kinds)),
        "per_operator": per,
    }


def run(data: str | Path, *, planner: Planner | None = None) -> dict[str, Any]:
    """Score ``planner`` (the rules planner by default) on the labelled requests in
    ``data``: overall, per split and per language, with each request that was not exact."""
    cases = load(data)
    if planner is None:
        from ..extract.plan import RulesPlanner

        planner = RulesPlanner()
    results, seconds, wrong = [], [], []
    for case in cases:
        started = time.perf_counter()
        plan = planner.plan(case["request"], datetime.fromisoformat(case["now"]))
        seconds.append(time.perf_counter() - started)
        gold = case["steps"]
        matched = [n < len(plan.steps) and step_matches(g, plan.steps[n]) for n, g in
                   enumerate(gold)]
        exact = len(plan.steps) == len(gold) and all(matched)
        kinds = [plan.steps[n].kind == g["kind"] for n, g in enumerate(gold)
                 if matched[n] and "kind" in g]
        results.append({"split": case["split"], "lang": case["lang"], "exact": exact,
                        "predicted": [s.operator for s in plan.steps],
                        "expected": [g["operator"] for g in gold], "kinds": kinds})
        if not exact:
            wrong.append({"id": case["id"], "split": case["split"], "request": case["request"],
                          "expected": gold,
                          "got": [s.model_dump(exclude_none=True) for s in plan.steps]})
    out: dict[str, Any] = {"planner": planner.name, "data": str(data), **_score(results)}
    for split in ("heldout", "dev"):
        out[split] = _score([r for r in results if r["split"] == split])
    for lang in ("en", "zh"):
        out[lang] = _score([r for r in results if r["lang"] == lang])
    out["ms_per_request_median"] = round(statistics.median(seconds) * 1000, 2) if seconds else None
    out["not_exact"] = wrong
    return out
