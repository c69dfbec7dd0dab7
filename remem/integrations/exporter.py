"""``remem export agents-md``: the confirmed conventions and pitfalls as a block of AGENTS.md.

The block sits between ``<!-- remem:begin -->`` and ``<!-- remem:end -->``; writing it
again replaces only that block, so the rest of the file stays as people wrote it.
"""

from __future__ import annotations

from pathlib import Path

from ..model import MemoryItem
from .agent import AgentMemory
from .anchors import relative
from .files import upsert_block, write_atomic

__all__ = ["BEGIN", "END", "KINDS", "render", "select", "write"]

BEGIN = "<!-- remem:begin -->"
END = "<!-- remem:end -->"
#: What is exported, in this order, with its heading.
KINDS = {"convention": "Conventions", "pitfall": "Pitfalls"}
_TRUSTED = ("confirmed", "canonical")


def select(agent: AgentMemory, *, include_candidates: bool = False,
           target: Path | None = None) -> list[MemoryItem]:
    """The active conventions and pitfalls of the agent's scope that are confirmed,
    canonical or pinned (every one with ``include_candidates``), oldest first; not those
    imported from ``target`` itself, which already says them."""
    page = agent.memory.list(kinds=list(KINDS), limit=1000, **agent.scope.many())
    chosen = [m for m in page if include_candidates or m.pinned or m.maturity in _TRUSTED]
    if target is not None:
        own = relative(target, agent.scope.root) if agent.scope.root else str(target)
        chosen = [m for m in chosen if all(a["path"] != own for a in agent.anchors(m))]
    return sorted(chosen, key=lambda m: (list(KINDS).index(m.kind), m.created_at, m.id))


def render(items: list[MemoryItem], project: str | None) -> str:
    """The block's body: one section per kind, one line per memory."""
    title = f"## Conventions and pitfalls of {project}" if project else "## Conventions and pitfalls"
    out = [title, "",
           "Kept by `remem export agents-md` from the memories remem trusts (confirmed, or "
           "imported from instruction files); change those (`remem list`, `remem forget`), "
           "not this block."]
    if not items:
        out += ["", "_No confirmed conventions or pitfalls yet._"]
    for kind, heading in KINDS.items():
        lines = [f"- {' '.join(m.text.split())}" for m in items if m.kind == kind]
        if lines:
            out += ["", f"### {heading}", "", *lines]
    return "\n".join(out)


def write(path: Path, body: str) -> bool:
    """Put ``body`` in the marked block of ``path`` (created if missing); True if it changed."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    after = upsert_block(before, BEGIN, END, body)
    if after == before and path.exists():
        return False
    write_atomic(path, after.encode("utf-8"))
    return True
