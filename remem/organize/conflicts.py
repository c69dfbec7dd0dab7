"""When a new memory contradicts an existing one, so that it supersedes it.

Two rules, both explainable:

- **Alternatives.** Both name a choice from the same group (npm / pnpm / yarn, tabs /
  spaces, pytest / unittest...) and differ: "we use npm" then "we use pnpm now".
- **Corrections.** The new one is worded as a change or a correction ("switched to",
  "no longer", "that's wrong", "改用", "不再") and shares enough words with an existing
  memory of the same kind family and subject.

A communication-style preference (answer length, language, tone) replaces the previous
one of the same dimension, which the extractor names in its rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import MemoryItem
from .similarity import content_words, jaccard

__all__ = ["ALTERNATIVES", "find_conflict", "is_correction"]

#: Groups of mutually exclusive choices: using one means not using the others.
ALTERNATIVES: tuple[frozenset[str], ...] = tuple(frozenset(g.split()) for g in (
    "npm pnpm yarn bun",
    "pip poetry uv conda pipenv pdm hatch",
    "tabs spaces",
    "pytest unittest nose2",
    "jest vitest mocha jasmine",
    "webpack vite esbuild rollup parcel turbopack",
    "postgres postgresql mysql mariadb sqlite mongodb",
    "black yapf autopep8",
    "flake8 pylint",
    "mypy pyright pytype",
    "eslint biome",
    "prettier dprint",
    "react vue angular svelte solid",
    "django flask fastapi",
    "github gitlab bitbucket",
    "docker podman",
    "kubernetes nomad",
    "aws gcp azure",
    "make just task",
    "bash zsh fish",
    "vim emacs vscode neovim",
    "light dark",
    "chinese english",
    "中文 英文",
))
# postgres and postgresql are one choice
_SAME = {"postgresql": "postgres"}

_CORRECTION = re.compile(
    r"\b(?:switched|switching|moved|migrated|changed|no longer|not anymore|any ?more|instead|"
    r"now use|use \S+ now|wrong|not true|incorrect|actually|replaced|from now on|going forward)\b"
    r"|改用|换成|换用|不再|现在用|现在改|以后都用|以后用|不对|错了|其实", re.IGNORECASE)

#: Kinds that can contradict each other (a decision can replace a project fact).
FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({"project", "decision", "convention", "preference"}),
    frozenset({"profile", "fact"}),
    frozenset({"pitfall"}),
)


def _family(kind: str) -> frozenset[str]:
    return next((f for f in FAMILIES if kind in f), frozenset({kind}))


def _choices(text: str) -> dict[frozenset[str], set[str]]:
    tokens = {_SAME.get(w, w) for w in content_words(text)}
    return {g: tokens & g for g in ALTERNATIVES if tokens & g}


def is_correction(text: str) -> bool:
    """True when the text is worded as a change or a correction of something known."""
    return bool(_CORRECTION.search(text))


def find_conflict(kind: str, subject: str, text: str, evidence: str, rule: str | None,
                  existing: Sequence[MemoryItem]) -> MemoryItem | None:
    """The active memory the new one contradicts, or None.

    ``evidence`` is the text of the turns the new memory came from (a correction may be
    worded there, "that's wrong, ..."); ``rule`` is the extractor rule that produced it.
    """
    family = _family(kind)
    peers = [m for m in existing if m.kind in family and (m.subject or "") == subject]
    new_choices = _choices(text)
    for old in peers:  # newest first
        for group, chosen in new_choices.items():
            before = _choices(old.text).get(group)
            if before and not (before & chosen) and len(chosen) == 1:
                return old
    if rule and ".style." in rule:  # one answer length, one language, one tone
        dim = rule.split(".style.")[1]
        same_dim = [m for m in peers if str(m.metadata.get("rule", "")).endswith(f".style.{dim}")]
        if same_dim:
            return same_dim[0]
    if is_correction(text) or is_correction(evidence):
        mine = content_words(text)
        scored = [(jaccard(mine, content_words(m.text)), m) for m in peers]
        scored = [(s, m) for s, m in scored if s >= 0.3]
        if scored:
            return max(scored, key=lambda p: p[0])[1]
    return None
