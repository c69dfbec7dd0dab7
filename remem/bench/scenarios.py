"""Multi-session scenarios through the public SDK: does the next session know what it should?

Each scenario of a JSONL file (format in ``benchmarks/scenarios/README.md``) is fed into a
fresh store, session by session (turns with ``Memory.add``, agent events with
``Memory.add_events``), the memory agent is waited for, and a later session is probed:

- ``start``: the session-start block (``context()`` with no query, or with the probe's
  query) carries a derived memory holding every ``expect`` string;
- ``stale``: no active derived memory of the block holds an ``absent`` string;
- ``superseded``: updates leave the old memory superseded, with history;
- ``forgotten``: a search for the forgotten thing finds nothing holding it, turns included;
- ``leak``: for scope traps, neither the block nor a search holds the other scope's terms;
- ``precision``: for probes with a query, the share of the lines the query added that
  are relevant.

Figures come per category and per language; the failures are listed for reading. The
headline's ``look_alikes_kept`` is the share of update and forget scenarios with nothing to
supersede or forget (worded like one, "tell Sam to forget the old API") whose memory is
still in the block.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from ..model import MemoryItem
from .explain import STAGES, stage
from .labelled import read_labelled

__all__ = ["contains", "load", "probe", "run"]


def load(path: str | Path) -> list[dict[str, Any]]:
    """The scenarios of a JSONL file; ValidationError naming the line of a bad one."""
    return read_labelled(path)


def contains(text: str, want: str) -> bool:
    """``want`` (``"a|b"`` for either) in ``text``: ASCII on word boundaries, any case."""
    for alt in want.split("|"):
        alt = alt.strip()
        if not alt:
            continue
        if alt.isascii():
            if re.search(rf"(?<![\w]){re.escape(alt)}(?![\w])", text, re.IGNORECASE):
                return True
        elif alt.lower() in text.lower():
            return True
    return False


def _scope(scenario: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    return {"user_id": part.get("user_id", scenario.get("user_id", "u1")),
            "project": part["project"] if "project" in part else scenario.get("project")}


def _feed(m: Memory, scenario: dict[str, Any]) -> None:
    for session in scenario["sessions"]:
        scope = _scope(scenario, session)
        sid = session.get("id", "s")
        batch: list[dict[str, Any]] = []
        for turn in session.get("turns", []):
            if "event" in turn:
                if batch:
                    m.add(batch, session_id=sid, timestamp=session.get("time"), **scope)
                    batch = []
                m.add_events([turn["event"]], session_id=sid, timestamp=session.get("time"), **scope)
            else:
                batch.append({"role": turn.get("role", "user"), "content": turn["content"]})
        if batch:
            m.add(batch, session_id=sid, timestamp=session.get("time"), **scope)
        m.flush()


def _derived(items: Iterable[MemoryItem]) -> list[MemoryItem]:
    return [i for i in items if not i.is_episode and i.status == "active"]


def probe(m: Memory, scenario: dict[str, Any]) -> dict[str, Any]:
    """Probe a fed store as the scenario says; returns the checks that apply (True = pass)."""
    p = scenario.get("probe", {})
    scope = _scope(scenario, p)
    query = p.get("query")
    ctx = m.context(session_id="probe", query=query, budget_tokens=p.get("budget_tokens", 800),
                    **scope)
    derived = _derived(ctx.memories)
    checks: dict[str, Any] = {}
    expect = p.get("expect", [])
    if expect:
        checks["start"] = any(all(contains(d.text, e) for e in expect) for d in derived)
    category = scenario.get("category", "")
    absent = p.get("absent", [])
    if category.startswith("leak"):
        texts = [ctx.text]
        for term in absent:
            texts += [h.memory.text for h in m.search(term.split("|")[0], k=20, **scope)]
        checks["leak"] = not any(contains(t, a) for t in texts for a in absent)
    elif absent:
        # the memory that replaced an old value may name it in passing ("the flake8
        # config is gone"): that one is not stale
        successors = _successors(m, scenario, absent)
        checks["stale"] = not any(contains(d.text, a) for d in derived if d.id not in successors
                                  for a in absent)
    if p.get("superseded"):
        user = _scope(scenario, {})["user_id"]
        old = [i for i in m.list(user_id=user, include_inactive=True, limit=200)
               if i.status == "superseded" and contains(i.text, p["superseded"])]
        checks["superseded"] = bool(old) and len(m.history(old[0].id)) > 1
    if p.get("forgotten"):
        term = p["forgotten"]
        hits = m.search(term.split("|")[0], k=20, **_scope(scenario, {}))
        checks["forgotten"] = not any(contains(h.memory.text, term) for h in hits) and not any(
            contains(d.text, term) for d in derived)
    if query and p.get("relevant"):
        added = [i for i in ctx.memories if i.id in set(ctx.sections.get("recall", []))
                 | set(ctx.sections.get("working", []))]
        rel = [i for i in added if any(contains(i.text, r) for r in p["relevant"])]
        checks["precision"] = len(rel) / len(added) if added else 1.0
    checks["_block"] = ctx.text
    return checks


def _successors(m: Memory, scenario: dict[str, Any], absent: list[str]) -> set[str]:
    """The memories that replaced a memory holding one of the ``absent`` values."""
    scope = _scope(scenario, {})
    replaced = [i for i in m.list(user_id=scope["user_id"], include_inactive=True, limit=200)
                if i.status == "superseded" and any(contains(i.text, a) for a in absent)]
    return {link.memory.id for i in replaced for link in m.links(i.id, **scope)
            if link.type == "supersedes" and link.direction == "in"}


def _rate(values: list[Any]) -> float | None:
    vals = [float(v) for v in values]
    return round(sum(vals) / len(vals), 3) if vals else None


def run(data: str | Path, *, config: Config | None = None, limit: int | None = None,
        progress: bool = False, show_blocks: bool = False, explain: bool = False) -> dict[str, Any]:
    """Run every scenario in ``data``; figures overall, per category and per language.
    With ``explain``, each failed update, forget request or look-alike is traced to the
    stage that lost it (:mod:`.explain`), and ``explain`` holds the counts per stage."""
    scenarios = load(data)[:limit]
    cfg = (config or Config.from_env())
    results = []
    with tempfile.TemporaryDirectory(prefix="remem-bench-scenarios-") as tmp:
        for n, sc in enumerate(scenarios, 1):
            with Memory(Path(tmp) / f"{n}.db", config=cfg) as m:
                _feed(m, sc)
                checks = probe(m, sc)
                if explain:
                    checks["_stage"] = stage(m, sc, checks, contains)
            results.append((sc, checks))
            if progress:
                print(f"[{n}/{len(scenarios)}] {sc.get('id')}: "
                      + " ".join(f"{k}={v}" for k, v in checks.items() if not k.startswith("_")),
                      file=sys.stderr, flush=True)
    names = ("start", "stale", "superseded", "forgotten", "leak", "precision")
    by: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    failures = []
    for sc, checks in results:
        for key in ("all", f"lang:{sc.get('lang', '?')}", f"category:{sc.get('category', '?')}"):
            for name in names:
                if name in checks:
                    by[key][name].append(checks[name])
        failed = [k for k in names if k in checks and checks[k] is False
                  or (k == "precision" and k in checks and checks[k] < 0.6)]
        if failed:
            row = {"id": sc.get("id"), "failed": failed, "expect": sc.get("probe", {}).get("expect")}
            if checks.get("_stage"):
                row["stage"] = checks["_stage"]
            if show_blocks:
                row["block"] = checks["_block"]
            failures.append(row)
    figures = {key: {name: _rate(vals) for name, vals in per.items()} | {
        "n": max(len(v) for v in per.values()) if per else 0} for key, per in sorted(by.items())}
    changes = [(s, c) for s, c in results if s.get("category") in ("update", "forget")]
    update_ok = [c.get("superseded", False) and c.get("stale", True) for s, c in changes
                 if s["category"] == "update" and s.get("probe", {}).get("superseded")]
    forget_ok = [c.get("forgotten", True) and c.get("stale", True) for s, c in changes
                 if s["category"] == "forget" and s.get("probe", {}).get("forgotten")]
    # look-alikes: worded like an update or a forget request, they must change nothing
    kept = [c.get("start", True) for s, c in changes
            if not (s.get("probe", {}).get("superseded") or s.get("probe", {}).get("forgotten"))]
    leaks = sum(1 for _, c in results if c.get("leak") is False)
    stages = Counter(c["_stage"] for _, c in results if c.get("_stage"))
    extra = {"explain": {k: stages[k] for k in STAGES if stages[k]}} if explain else {}
    return extra | {"data": str(data), "scenarios": len(results), "figures": figures,
            "headline": {"session_start": figures.get("all", {}).get("start"),
                         "updates_superseded": _rate(update_ok), "forgets_honoured": _rate(forget_ok),
                         "look_alikes_kept": _rate(kept),
                         "leaks": leaks, "query_precision": figures.get("all", {}).get("precision")},
            "failures": failures}
