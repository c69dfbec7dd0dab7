"""Team skills: how a leader splits a requirement among roles, learned from the user.

The user tells the leader once how work of a sort is split ("full-stack requirements need
a backend developer, a frontend developer and a tester; the tester starts after the
backend is up and runs port and API tests"). The memory agent keeps that as a memory of
the leader (``agent_id`` "leader" in the team's scope), versioned like any memory: a later
correction supersedes it and its history keeps the old rule. This module reads such a
memory as a structured skill: when it applies, the roles (each an ``agent_id`` of the team,
with its own memory and the team's shared one), their order, dependencies and checks; and
says which skills apply to a new requirement.

Roles, dependencies ("after", "once", "之后") and checks ("runs ... tests", "跑...测试") are
read by rules over the closed class of role nouns and ordering words; a skill applies
when the requirement is near in meaning to what the skill is for (the bundled encoder,
English and Chinese alike) and names something the rule names (its sort of work or a
role).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..extract.heads import Reader
from ..model import MemoryItem, Scope
from ..store.base import Store
from ..text import clauses, content_words, has_cjk

__all__ = ["RoleStep", "TeamPlan", "TeamSkill", "read_skill", "refinement", "skill_of",
           "team_plan"]

#: the kinds a leader's splitting rule is kept as
SKILL_KINDS = ("procedure", "convention", "decision", "preference", "project", "fact", "skill")
#: how close in meaning a requirement must be to what a skill is for
APPLIES_AT = 0.83

_EN_ROLE = re.compile(
    r"\b(?:(back[- ]?end|front[- ]?end|full[- ]?stack|api|database|db|mobile|ios|android|web|"
    r"ui|ux|qa|devops|ops|security|data|ml|infra(?:structure)?|test)\s+)?"
    r"(developer|engineer|dev|tester|designer|reviewer|architect|writer|analyst|admin)s?\b", re.I)
_ZH_ROLE = re.compile(r"(后端|前端|全栈|测试|运维|产品|设计|架构|数据库|安全|移动端|客户端|服务端|算法|数据)"
                      r"(开发|工程师|人员|同学|经理|师)?")
#: a bare Chinese role word is a role after these (一个测试), not inside a noun (接口测试)
_ZH_BEFORE_ROLE = re.compile(r"(?:[个名位和、，,由让叫再等与跟及是给]|然后|最后|一个|\s)$")
_EN_AFTER = re.compile(r"\b(?:after|once|when|until)\b", re.I)
_EN_BEFORE = re.compile(r"\bbefore\b", re.I)
_ZH_AFTER = re.compile(r"(?:之后|以后|完成后|好了后|起来后|上线后|就绪后|后再|后才)")
_EN_CHECK = re.compile(r"\b(?:runs?|does|do|performs?|checks?|verif(?:y|ies)|executes?)\s+"
                       r"(?:the\s+)?(.+)$", re.I)
_ZH_CHECK = re.compile(r"(?:跑|做|执行|进行|负责)(.+?(?:测试|检查|验证))")
_EN_WHEN = re.compile(r"^(?:(?:correction|update|change of plan|note)\s*[:,-]?\s*)?"
                      r"(?:for|when|whenever|on|with)\s+(?:a\s+|an\s+|the\s+|any\s+|every\s+)?",
                      re.I)
_ZH_WHEN = re.compile(r"^(?:以后|今后|对于|遇到|碰到|凡是|如果是|像)?")


class RoleStep(BaseModel):
    """One role of a split: its agent id, the roles it waits for, the checks it runs."""

    model_config = ConfigDict(frozen=True)

    role: str
    agent_id: str
    after: list[str] = Field(default_factory=list, description="agent ids it starts after")
    checks: list[str] = Field(default_factory=list)
    step: int = Field(description="its place in the order, from 1; roles that share a "
                      "number may run side by side")


class TeamSkill(BaseModel):
    """A leader's rule for splitting work, read from the memory that holds it."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    version: int
    when: str = Field(description="what sort of requirement it is for")
    text: str
    roles: list[RoleStep]
    score: float = Field(0.0, description="how close the requirement is to what it is for")


class TeamPlan(BaseModel):
    """The skills that apply to a requirement, best first (empty: none applies)."""

    model_config = ConfigDict(frozen=True)

    request: str
    agent_id: str
    skills: list[TeamSkill] = Field(default_factory=list)


def _slug(name: str) -> str:
    return re.sub(r"[^\w]+", "-", name.lower()).strip("-")


def _mentions(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, full role name, the word a later mention may use) in order."""
    found = []
    for m in _EN_ROLE.finditer(text):
        qualifier = (m.group(1) or "").lower().replace(" ", "").replace("-", "")
        noun = m.group(2).lower()
        name = f"{qualifier} {noun}".strip() if qualifier else noun
        found.append((m.start(), m.end(), name, qualifier or noun))
    for m in _ZH_ROLE.finditer(text):
        if m.group(2) is None and not _ZH_BEFORE_ROLE.search(text[:m.start()]):
            continue
        found.append((m.start(), m.end(), m.group(0), m.group(1)))
    return sorted(found)


def _refs(text: str, roles: dict[str, str]) -> list[tuple[int, str]]:
    """Where each known role is mentioned in a clause, by its full name or short word
    ("the backend is up" names the backend developer)."""
    out = []
    for name, word in roles.items():
        for m in re.finditer(re.escape(word) + (r"\w*" if word.isascii() else ""), text, re.I):
            out.append((m.start(), name))
    seen: dict[int, str] = {}
    for at, name in sorted(out):
        if not any(abs(at - a) < 3 for a in seen):
            seen[at] = name
    return sorted(seen.items())


def _checks(phrase: str, lang: str) -> list[str]:
    """"port and API tests" -> ["port tests", "API tests"]; "端口和接口测试" likewise."""
    phrase = phrase.strip(" .。,，;；")
    if lang == "zh":
        m = re.match(r"(.+?)(测试|检查|验证)$", phrase)
        if not m:
            return [phrase]
        parts = [p for p in re.split(r"[和、及与]", m.group(1)) if p]
        return [p if p.endswith(m.group(2)) else p + m.group(2) for p in parts]
    phrase = re.split(r"\b(?:before|after|once|when)\b|,?\s+and\s+(?:the|a|an|then)\b", phrase,
                      flags=re.I)[0].strip(" ,")
    parts = [p.strip() for p in re.split(r",\s*|\s+and\s+", phrase) if p.strip()]
    last = parts[-1].split()[-1] if parts else ""
    if len(parts) > 1 and last.lower() in ("tests", "checks", "test", "check"):
        parts = [p if p.split()[-1].lower() == last.lower() else f"{p} {last}" for p in parts]
    return parts


def read_skill(item: MemoryItem) -> TeamSkill | None:
    """The team skill a memory states, or None when it names fewer than two roles."""
    return skill_of(item.text, memory_id=item.id, version=item.version)


def _shape(skill: TeamSkill) -> set[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return {(r.agent_id, tuple(sorted(r.after)), tuple(sorted(r.checks))) for r in skill.roles}


def refinement(old: str, new: str) -> str | None:
    """The text of the new version of a team rule ``old`` that ``new`` corrects, or None
    when ``new`` changes no split of it: a rule stated whole again with another split
    replaces it; a correction about some of its roles ("the tester also runs UI tests")
    is added to it."""
    before = skill_of(old)
    if before is None:
        return None
    whole = skill_of(new)
    if whole is not None and {r.agent_id for r in whole.roles} >= {r.agent_id for r in before.roles}:
        return new if _shape(whole) != _shape(before) else None
    joined = f"{old.rstrip()} {new.strip()}" if not has_cjk(old) else f"{old.rstrip('。')}。{new.strip()}"
    after = skill_of(joined)
    if after is None or _shape(after) == _shape(before):
        return None
    return joined


def skill_of(text: str, *, memory_id: str = "", version: int = 1) -> TeamSkill | None:
    """The team skill a text states (see :func:`read_skill`)."""
    text = " ".join(text.split())
    lang = "zh" if has_cjk(text) else "en"
    mentions = _mentions(text)
    roles: dict[str, str] = {}
    for _, _, name, word in mentions:
        roles.setdefault(name, word)
    if len(roles) < 2:
        return None
    after: dict[str, list[str]] = {name: [] for name in roles}
    checks: dict[str, list[str]] = {name: [] for name in roles}
    cursor = 0
    for clause in clauses(text) if lang == "en" else re.split(r"[，,；;。]", text):
        at = text.find(clause, cursor)
        cursor = at + len(clause) if at >= 0 else cursor
        # a list of checks may run on past a comma: to the end of its sentence
        stop = re.compile(r"[.;。；!?！？](?:\s|$)").search(text, cursor)
        sentence_rest = "" if re.search(r"[.;。；!?！？]\s*$", clause) else \
            text[cursor:stop.start() if stop else len(text)]
        refs = _refs(clause, roles)
        if not refs:
            continue
        pattern = _ZH_AFTER if lang == "zh" else _EN_AFTER
        marker = pattern.search(clause)
        if marker is not None:
            before = [n for at, n in refs if at < marker.start()]
            later = [n for at, n in refs if at >= marker.start()]
            if lang == "zh" and "在" in clause[:marker.start()] and len(before) > 1:
                waits, first = before[:1], before[1:]  # 测试在后端起来之后开始
            elif lang == "zh":
                waits, first = later, before  # 后端起来之后测试再开始
            else:
                waits, first = before, later
            for w in waits:
                after[w] += [f for f in first if f != w and f not in after[w]]
        elif lang == "en" and (b := _EN_BEFORE.search(clause)):
            first = [n for at, n in refs if at < b.start()]
            for w in (n for at, n in refs if at >= b.start()):
                after[w] += [f for f in first if f != w and f not in after[w]]
        check = (_ZH_CHECK if lang == "zh" else _EN_CHECK).search(
            clause + ("" if lang == "zh" else sentence_rest))
        if check is not None and check.start() < len(clause):
            owner = refs[0][1]
            checks[owner] += [c for c in _checks(check.group(1), lang) if c not in checks[owner]]
    first_at = mentions[0][0]
    when = text[:first_at]
    when = re.split(r"\b(?:needs?|requires?|takes?|gets?|uses?|split|goes|go)\b|需要|要|由|找|分给|拆成|拆给",
                    when)[0]
    when = (_ZH_WHEN if lang == "zh" else _EN_WHEN).sub("", when.strip(" ,，:：")).strip(" ,，:：的")
    steps = _order(list(roles), after)
    return TeamSkill(memory_id=memory_id, version=version, when=when or text, text=text,
                     roles=[RoleStep(role=name, agent_id=_slug(name) if name.isascii() else name,
                                     after=[_slug(a) if a.isascii() else a for a in after[name]],
                                     checks=checks[name], step=steps[name]) for name in roles])


def _order(names: Sequence[str], after: dict[str, list[str]]) -> dict[str, int]:
    """Each role's step: one more than the latest of the roles it waits for."""
    step: dict[str, int] = {}

    def place(name: str, seen: frozenset[str]) -> int:
        if name in step:
            return step[name]
        waits = [a for a in after.get(name, []) if a not in seen]
        step[name] = 1 + max((place(a, seen | {name}) for a in waits), default=0)
        return step[name]

    for name in names:
        place(name, frozenset())
    return step


def _named(skill: TeamSkill) -> set[str]:
    """The words of what a skill is for and of its roles."""
    return content_words(" ".join([skill.when, *(r.role for r in skill.roles)]))


def team_plan(store: Store, reader: Reader, scope: Scope, request: str, *,
              applies_at: float = APPLIES_AT) -> TeamPlan:
    """The leader's skills (in ``scope``, its agent id among them) that apply to
    ``request``, best first."""
    look = scope.model_copy(update={"nested": True, "session_id": None})
    found = [m for m in store.derived(look, SKILL_KINDS, limit=1000)
             if m.agent_id == scope.agent_id]
    skills = [s for s in (read_skill(m) for m in found) if s is not None]
    if not skills:
        return TeamPlan(request=request, agent_id=scope.agent_id or "")
    # what a skill is for, and the whole rule (its roles say what work it covers)
    scores = np.maximum(reader.similarity([s.when for s in skills], request),
                        reader.similarity([s.text for s in skills], request))
    # near in meaning is not enough (short texts in one language all look alike to the
    # encoder): the requirement must also name something the rule names
    asked = content_words(request)
    kept = [s.model_copy(update={"score": round(float(x), 3)})
            for s, x in zip(skills, scores, strict=True)
            if float(x) >= applies_at and asked & _named(s)]
    kept.sort(key=lambda s: -s.score)
    return TeamPlan(request=request, agent_id=scope.agent_id or "", skills=kept)
