"""Skills: procedures that worked often enough to be reused, rendered as SKILL.md.

A procedure memory counts its successful runs as duplicates merge into it; at
``skill_after`` successes it yields a skill candidate (kind ``skill``, derived from the
procedure). Approving a candidate renders its SKILL.md: name, when to use it, the steps
and the known pitfalls of the commands it runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import MemoryItem

__all__ = ["is_success", "render_skill_md", "skill_name", "steps_of", "task_of"]

_OUTCOME = re.compile(r"(?:Outcome|结果)[:：]\s*(?P<outcome>.+)$", re.IGNORECASE)
_SUCCESS = re.compile(
    r"\b(?:success|succeeded|successful|passed|done|ok|worked|fixed|green)\b|成功|通过|完成",
    re.IGNORECASE)
_FAILURE = re.compile(r"\b(?:fail|failed|failure|error|broken|aborted)\b|失败", re.IGNORECASE)
_TASK = re.compile(r"^(?:To|为了)\s*(?P<task>.+?)[:：]")
_STEP = re.compile(r"`([^`]+)`")


def is_success(procedure_text: str) -> bool:
    """True when a procedure's recorded outcome is a success."""
    m = _OUTCOME.search(procedure_text)
    outcome = m.group("outcome") if m else ""
    return bool(_SUCCESS.search(outcome)) and not _FAILURE.search(outcome)


def task_of(procedure_text: str) -> str:
    m = _TASK.match(procedure_text)
    return m.group("task").strip() if m else procedure_text.split(".")[0][:80]


def steps_of(procedure_text: str) -> list[str]:
    return _STEP.findall(procedure_text)


def skill_name(task: str) -> str:
    """A file-system-safe name for a skill: lower-case words joined by dashes."""
    slug = re.sub(r"[^\w]+", "-", task.lower()).strip("-")
    return slug[:64] or "skill"


def render_skill_md(skill: MemoryItem, pitfalls: Sequence[MemoryItem]) -> str:
    """SKILL.md for an approved skill: front matter, when to use, steps, pitfalls."""
    task = str(skill.metadata.get("task") or task_of(skill.text))
    steps = [str(s) for s in skill.metadata.get("steps", [])] or steps_of(skill.text)
    lines = [
        "---",
        f"name: {skill_name(task)}",
        f"description: How to {task}; worked {skill.metadata.get('successes', 0)} times.",
        "---",
        "",
        f"# {task[:1].upper() + task[1:]}",
        "",
        "## When to use",
        "",
        f"When the task is to {task}.",
        "",
        "## Steps",
        "",
        *[f"{i}. `{s}`" for i, s in enumerate(steps, 1)],
    ]
    if pitfalls:
        lines += ["", "## Pitfalls", "", *[f"- {p.text}" for p in pitfalls]]
    return "\n".join(lines) + "\n"
