"""How well a leader learns team skills and applies them (``remem bench team``).

The data is JSON lines, one team each: the lessons a user tells the leader once, each
labelled with its roles (as the lesson names them), which role waits for which, and the
checks each role runs; then later requirements, each labelled with the lesson that should
split it (its index) or ``null`` when none should::

    {"id": "en-001", "lang": "en",
     "lessons": [{"text": "For full-stack requirements use a backend developer, ...",
                  "roles": ["backend developer", "frontend developer", "tester"],
                  "after": [["tester", "backend developer"]],
                  "checks": {"tester": ["port tests", "API tests"]}}],
     "requests": [{"text": "New full-stack requirement: an order history page", "skill": 0},
                  {"text": "Fix the typo in the README", "skill": null}]}

Each team gets a fresh store; each lesson is said to the leader through ``Memory.add``
and the memory agent, and each requirement is asked through ``Memory.plan``. A lesson is
*learned* when what the leader kept of it (the memories of its turn, read together as
``Memory.plan`` reads them) reads as a skill; its roles are right when each
labelled role is matched by one read role (one name contains the other, spaces and case
aside), its order when the labelled waits are exactly the read ones, its checks when each
labelled check's words are in one read check of that role. A requirement is *split right*
when the first skill returned is its lesson's; a requirement labelled ``null`` that gets a
skill is a false split. The threshold sweep reads each skill's score, so one run shows
what every ``agent.team_applies_at`` would have given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import Memory
from ..config import Config
from ..organize.team import TeamSkill, read_rule, said_together
from ..text import content_words
from .labelled import read_labelled

__all__ = ["load", "run"]

_TEAM = {"user_id": "lead-user", "project": "team"}
SWEEP = (0.70, 0.75, 0.78, 0.80, 0.82, 0.83, 0.84, 0.85, 0.86, 0.88, 0.90)


def _check(case: dict[str, Any]) -> None:
    lessons = case["lessons"]
    for lesson in lessons:
        roles = lesson["roles"]
        named = set(roles)
        if not lesson["text"] or len(roles) < 2:
            raise ValueError("a lesson needs its text and at least two roles")
        if any(r not in named for pair in lesson.get("after", []) for r in pair) \
                or any(r not in named for r in lesson.get("checks", {})):
            raise ValueError("'after' and 'checks' may name only the lesson's roles")
    for request in case["requests"]:
        skill = request["skill"]
        if skill is not None and not 0 <= int(skill) < len(lessons):
            raise ValueError(f"skill {skill} is not a lesson's index")
        if not request["text"]:
            raise ValueError("a request needs its text")


def load(path: str | Path) -> list[dict[str, Any]]:
    """The labelled teams of a file; ValidationError naming the line of a bad one."""
    return read_labelled(path, _check)


def _key(name: str) -> str:
    return "".join(name.lower().split()).replace("-", "")


def _match_roles(labelled: list[str], read: list[str]) -> dict[str, str]:
    """Labelled role -> the read role (agent id or name) it is, one to one."""
    out: dict[str, str] = {}
    free = list(read)
    for name in labelled:
        want = _key(name)
        for got in free:
            have = _key(got)
            if have and (have in want or want in have):
                out[name] = got
                free.remove(got)
                break
    return out


_GENERIC = frozenset({"check", "checks", "test", "tests", "检查", "测试", "验证"})


def _said(check: str, read: Iterable[str]) -> bool:
    """Whether a labelled check is among the read ones: half its words at least (words
    like "check" or "测试" aside) in one of them, or its whole text inside one."""
    want = content_words(check) - _GENERIC or {_key(check)}
    return any(len(want & content_words(got)) * 2 >= len(want) or _key(check) in _key(got)
               for got in read)


def grade_lesson(lesson: dict[str, Any], skill: TeamSkill | None) -> dict[str, bool]:
    """Whether ``skill`` (read from the stored lesson) has the labelled roles, order and
    checks."""
    if skill is None:
        return {"learned": False, "roles": False, "order": False, "checks": False}
    by_name = {r.role: r for r in skill.roles}
    matched = _match_roles(lesson["roles"], list(by_name))
    roles_ok = len(matched) == len(lesson["roles"]) == len(skill.roles)
    ids = {name: by_name[got].agent_id for name, got in matched.items()}
    want = {(ids.get(a, f"?{a}"), ids.get(b, f"?{b}")) for a, b in lesson.get("after", [])}
    got = {(r.agent_id, w) for r in skill.roles for w in r.after}
    checks = lesson.get("checks", {})
    checks_ok = all(name in matched and all(_said(c, by_name[matched[name]].checks) for c in cs)
                    for name, cs in checks.items())
    return {"learned": True, "roles": roles_ok, "order": roles_ok and want == got,
            "checks": checks_ok}


def _learn(m: Memory, lessons: list[dict[str, Any]]) -> tuple[dict[str, int], list[TeamSkill | None]]:
    """Tell the leader each lesson; the memory ids each became, and the skill each reads as."""
    owner: dict[str, int] = {}
    skills: list[TeamSkill | None] = []
    for n, lesson in enumerate(lessons):
        m.add(lesson["text"], agent_id="leader", **_TEAM)
        m.flush()
        new = [i for i in m.list(agent_id="leader", include_inactive=False, limit=1000, **_TEAM)
               if i.agent_id == "leader" and i.id not in owner]
        # read as Memory.plan reads them: what one turn became, as one rule
        read = [s for s in map(read_rule, said_together(new)) if s is not None]
        owner.update({i.id: n for i in new})
        skills.append(max(read, key=lambda s: len(s.roles)) if read else None)
    return owner, skills


def _rate(hits: Iterable[bool]) -> float | None:
    vals = list(hits)
    return round(sum(vals) / len(vals), 3) if vals else None


def _split_figures(rows: list[dict[str, Any]], at: float) -> dict[str, Any]:
    """Split figures at the threshold ``at``: each row holds the lesson index expected
    and the (lesson index, score) of every skill returned at threshold 0."""
    right = wrong = false = 0
    positives = [r for r in rows if r["skill"] is not None]
    negatives = [r for r in rows if r["skill"] is None]
    for r in rows:
        kept = [lesson for lesson, score in r["got"] if score >= at]
        first = kept[0] if kept else None
        if r["skill"] is None:
            false += first is not None
        elif first == r["skill"]:
            right += 1
        elif first is not None:
            wrong += 1
    split = right + wrong + false
    return {"threshold": at, "split_right": _rate([True] * right + [False] * (len(positives) - right)),
            "wrong_skill": wrong, "false_splits": false,
            "false_split_rate": _rate([True] * false + [False] * (len(negatives) - false)),
            "precision": round(right / split, 3) if split else None}


def run(data: str | Path, *, config: Config | None = None) -> dict[str, Any]:
    """Learn each team's lessons in a fresh store and plan its requirements: lesson
    figures (learned, roles, order, checks), split figures at the configured threshold and
    a sweep of thresholds, overall and per language."""
    cases = load(data)
    base = config or Config.from_env()
    cfg = base.model_copy(update={"agent": base.agent.model_copy(update={"team_applies_at": 0.0})})
    lesson_rows: list[dict[str, Any]] = []
    split_rows: list[dict[str, Any]] = []
    errors = []
    with tempfile.TemporaryDirectory(prefix="remem-bench-team-") as tmp:
        for n, case in enumerate(cases):
            with Memory(Path(tmp) / f"{n}.db", config=cfg) as m:
                owner, skills = _learn(m, case["lessons"])
                for lesson, skill in zip(case["lessons"], skills, strict=True):
                    lesson_rows.append({"lang": case["lang"], **grade_lesson(lesson, skill)})
                for request in case["requests"]:
                    plan = m.plan(request["text"], agent_id="leader", **_TEAM)
                    got = [(owner.get(s.memory_id, -1), s.score) for s in plan.skills]
                    split_rows.append({"lang": case["lang"], "skill": request["skill"],
                                       "got": got})
                    if (got[0][0] if got and got[0][1] >= base.agent.team_applies_at
                            else None) != request["skill"]:
                        errors.append({"id": case["id"], "request": request["text"],
                                       "expected": request["skill"], "got": got})
    out: dict[str, Any] = {"data": str(data), "teams": len(cases),
                           "threshold": base.agent.team_applies_at}
    for key, keep in (("all", None), ("en", "en"), ("zh", "zh")):
        lessons = [r for r in lesson_rows if keep in (None, r["lang"])]
        rows = [r for r in split_rows if keep in (None, r["lang"])]
        out[key] = {"lessons": len(lessons),
                    **{name: _rate(r[name] for r in lessons)
                       for name in ("learned", "roles", "order", "checks")},
                    "requests": len(rows),
                    **_split_figures(rows, base.agent.team_applies_at)}
    out["sweep"] = [_split_figures(split_rows, at) for at in SWEEP]
    out["not_right"] = errors
    return out

