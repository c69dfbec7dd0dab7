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

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import RememError
from ..extract.heads import Reader
from ..model import MemoryItem, Scope
from ..store.base import Store
from ..text import content_words, has_cjk
from .team_skill import RoleStep, TeamSkill, read_skill, skill_of

__all__ = ["RoleStep", "SkillJudge", "TeamPlan", "TeamSkill", "read_rule", "read_skill",
           "refinement", "said_together", "skill_of", "team_plan"]

log = logging.getLogger(__name__)

#: the kinds a leader's splitting rule is kept as
SKILL_KINDS = ("procedure", "convention", "decision", "preference", "project", "fact", "skill")
#: how close in meaning a requirement must be to what a skill is for
APPLIES_AT = 0.84

class TeamPlan(BaseModel):
    """The skills that apply to a requirement, best first (empty: none applies)."""

    model_config = ConfigDict(frozen=True)

    request: str
    agent_id: str
    skills: list[TeamSkill] = Field(default_factory=list)
    judged_by: str = Field("encoder", description="what chose the skills: 'encoder' (near in "
                           "meaning and naming something the rule names) or 'llm'")


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


def said_together(found: Sequence[MemoryItem]) -> list[list[MemoryItem]]:
    """The leader's memories grouped by the turn they came from, in the order they were
    drawn from it: the memory agent may keep a rule said in several sentences as several
    memories (the roles in one, the order and checks in the next)."""
    groups: dict[str, list[MemoryItem]] = {}
    for m in sorted(found, key=lambda m: m.created_at):
        groups.setdefault(m.sources[0] if m.sources else m.id, []).append(m)
    return list(groups.values())


def read_rule(group: Sequence[MemoryItem]) -> TeamSkill | None:
    """The skill a group of memories states together, under the id and version of the
    memory that names the most roles (None when they name fewer than two)."""
    own = [(s, m) for m in group if (s := read_skill(m)) is not None]
    if not own:
        return None
    _, lead = max(own, key=lambda p: len(p[0].roles))
    if len(group) == 1:
        return own[0][0]
    sep = "。" if has_cjk(lead.text) else ". "
    text = sep.join(m.text.rstrip("。. ") for m in group)
    return skill_of(text, memory_id=lead.id, version=lead.version)


def _named(skill: TeamSkill) -> set[str]:
    """The words of what a skill is for and of its roles."""
    return content_words(" ".join([skill.when, *(r.role for r in skill.roles)]))


class SkillJudge(Protocol):
    """Says which rules apply to a requirement (:class:`~.team_llm.LLMSkillJudge`)."""

    def applies(self, request: str, skills: Sequence[TeamSkill]) -> list[int]: ...


def team_plan(store: Store, reader: Reader, scope: Scope, request: str, *,
              applies_at: float = APPLIES_AT, judge: SkillJudge | None = None) -> TeamPlan:
    """The leader's skills (in ``scope``, its agent id among them) that apply to
    ``request``, best first: chosen by ``judge`` when given (a chat model), else by the
    encoder's nearness (``applies_at``) and a word the rule names. A judge that fails
    leaves the choice to the encoder, and the plan says so (``judged_by``)."""
    look = scope.model_copy(update={"nested": True, "session_id": None})
    found = [m for m in store.derived(look, SKILL_KINDS, limit=1000)
             if m.agent_id == scope.agent_id]
    skills = [s for s in (read_rule(group) for group in said_together(found)) if s is not None]
    if not skills:
        return TeamPlan(request=request, agent_id=scope.agent_id or "")
    # what a skill is for, and the whole rule (its roles say what work it covers)
    scores = np.maximum(reader.similarity([s.when for s in skills], request),
                        reader.similarity([s.text for s in skills], request))
    if judge is not None:
        try:
            chosen = judge.applies(request, skills)
        except RememError as exc:
            log.warning("team plan: the model could not judge (%s); the encoder chooses", exc)
        else:
            return TeamPlan(request=request, agent_id=scope.agent_id or "", judged_by="llm",
                            skills=[skills[n].model_copy(update={"score": round(float(scores[n]), 3)})
                                    for n in chosen])
    # near in meaning is not enough (short texts in one language all look alike to the
    # encoder): the requirement must also name something the rule names
    asked = content_words(request)
    kept = [s.model_copy(update={"score": round(float(x), 3)})
            for s, x in zip(skills, scores, strict=True)
            if float(x) >= applies_at and asked & _named(s)]
    kept.sort(key=lambda s: -s.score)
    return TeamPlan(request=request, agent_id=scope.agent_id or "", skills=kept)
