"""Where a failed update or forget request of a scenario was lost, stage by stage.

For a scenario whose update was not superseded (or whose old value still shows), the
stage is the first that lost it:

- ``a_old_not_memory``: the turn that said the old value left no derived memory;
- ``b_new_not_extracted``: the turn that said the new value left none (the worth head
  dropped it), or only merged into the old memory;
- ``c_not_candidate``: the old memory was not among those the new statement is compared
  with (:func:`remem.organize.relate.candidates`: nearest in meaning, the floor);
- ``d_decision_no``: it was compared, and the pair head or the decision kept both;
- ``e_superseded_still_shown``: it was superseded, but something holding the old value
  is still in the block (another memory of that turn, a second copy), or it has no history.

For a forget request that was not honoured: ``f_request_not_read`` (no sentence of the turn
read as a forget request), ``g_target_missed`` (a memory holding the thing is still active),
``h_still_found`` (the memories went, but a search still finds it: a turn, a reply).
For a look-alike that lost its memory: ``i_changed_by_lookalike`` (superseded or forgotten by
it) or ``j_never_shown`` (never a memory, or not in the block). Only counts are reported.
"""

from __future__ import annotations

from typing import Any

from ..extract.requests import forget_requests
from ..memory import Memory
from ..model import MemoryItem, Scope
from ..organize.relate import candidates, family

__all__ = ["STAGES", "stage"]

STAGES = ("a_old_not_memory", "b_new_not_extracted", "c_not_candidate", "d_decision_no",
          "e_superseded_still_shown", "f_request_not_read", "g_target_missed", "h_still_found",
          "i_changed_by_lookalike", "j_never_shown", "unknown")


def _everything(m: Memory, scenario: dict[str, Any]) -> list[MemoryItem]:
    """Every item of the scenario's scopes, episodes and inactive ones included, oldest first."""
    user = scenario.get("user_id", "u1")
    projects = {s.get("project", scenario.get("project")) for s in scenario.get("sessions", [])}
    found: dict[str, MemoryItem] = {}
    for project in projects | {None}:
        for item in m.store.export(Scope(user_id=user, project=project), include_episodes=True):
            found[item.id] = item
    rowids = m.store.rowids(list(found))
    return sorted(found.values(), key=lambda i: rowids.get(i.id, 0))


def _turns(items: list[MemoryItem], contains: Any, want: str) -> list[MemoryItem]:
    return [i for i in items if i.is_episode and (i.role or "user") == "user" and contains(i.text, want)]


def stage(m: Memory, scenario: dict[str, Any], checks: dict[str, Any], contains: Any) -> str | None:
    """The stage that lost a failed change of ``scenario`` (see the module), or None when
    its checks passed or it is no change."""
    p = scenario.get("probe", {})
    category = scenario.get("category")
    if category not in ("update", "forget"):
        return None
    items = _everything(m, scenario)
    derived = [i for i in items if not i.is_episode]
    if p.get("superseded"):
        if checks.get("superseded") and checks.get("stale", True):
            return None
        return _update_stage(m, items, derived, p, contains)
    if p.get("forgotten"):
        if checks.get("forgotten", True) and checks.get("stale", True):
            return None
        return _forget_stage(m, items, derived, p, contains)
    if checks.get("start", True):
        return None
    expect = [e.split("|")[0] for e in p.get("expect", [])]
    held = [d for d in derived if all(contains(d.text, e) for e in expect)]
    if any(d.status in ("superseded", "forgotten") for d in held):
        return "i_changed_by_lookalike"
    return "j_never_shown"


def _update_stage(m: Memory, items: list[MemoryItem], derived: list[MemoryItem],
                  p: dict[str, Any], contains: Any) -> str:
    olds = _turns(items, contains, p["superseded"])
    expect = [e.split("|")[0] for e in p.get("expect", [])]
    news = [t for t in items if t.is_episode and (t.role or "user") == "user"
            and expect and all(contains(t.text, e) for e in expect)]
    if not olds or not news:
        return "unknown"
    old_turn, new_turn = olds[0], news[-1]
    from_old = [d for d in derived if old_turn.id in d.sources]
    if not from_old:
        return "a_old_not_memory"
    if any(d.status == "superseded" for d in from_old):
        return "e_superseded_still_shown"
    from_new = [d for d in derived if new_turn.id in d.sources and old_turn.id not in d.sources]
    if not from_new:
        return "b_new_not_extracted"
    # what was known when the new statement came: memories of earlier turns only
    order = {i.id: n for n, i in enumerate(items)}
    known = [d for d in derived if d.sources and max(order.get(s, 0) for s in d.sources)
             < order[new_turn.id] and d.kind in family(from_new[0].kind)]
    for new in from_new:
        picked, _ = candidates(m.reader, new.text, known)
        if any(known[i].id in {d.id for d in from_old} for i in picked):
            return "d_decision_no"
    return "c_not_candidate"


def _forget_stage(m: Memory, items: list[MemoryItem], derived: list[MemoryItem],
                  p: dict[str, Any], contains: Any) -> str:
    term = p["forgotten"].split("|")[0]
    turns = [i for i in items if i.is_episode and (i.role or "user") == "user"]
    if not any(forget_requests(m.reader, t.text) for t in turns):
        return "f_request_not_read"
    if any(d.status == "active" and contains(d.text, term) for d in derived):
        return "g_target_missed"
    return "h_still_found"
