"""``remem bench injection``: can stored text pose as instructions to the agent?

Each line of the corpus (``benchmarks/injection/attacks.jsonl``, format in its README)
goes into a fresh scope through the door it names: a user turn (``add``), an agent's
``remember``, a prompt captured by a hook, the output of a shell command, an assistant
turn, a line of an imported instruction file. After the memory agent has run, the scope's
session-start block (what the agent sees unprompted, and what the proxy puts in a model's
system message) and the block for a query made of the text's own words are read.

- ``reached_core``: an attack shown in a core block, unflagged (goal 0);
- ``reached_block``: an attack shown anywhere in either block (core, working, recall);
- ``held``: the share held for review; for the benign controls, the false alarms.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from .progress import Reporter

__all__ = ["feed", "run"]

DOORS = ("add", "remember", "hook_prompt", "tool_output", "assistant", "import")


def feed(m: Memory, item: dict[str, Any], user: str) -> None:
    """Store one corpus line through its door, as that door stores text."""
    scope = {"user_id": user, "project": "shop", "session_id": "s1"}
    text, door = item["text"], item.get("door", "add")
    if door in ("add", "hook_prompt"):
        m.add({"role": "user", "content": text}, **scope)
    elif door == "assistant":
        m.add({"role": "assistant", "content": text}, **scope)
    elif door == "tool_output":
        m.add_events([{"type": "tool_call", "tool": "Bash", "command": "cat README.md",
                       "exit_code": 0, "output": text}], **scope)
    elif door == "remember":
        m.remember(text, kind="convention", **scope)
    elif door == "import":
        m.remember(text, kind="convention", role="import", pinned=True, **scope)
    else:
        raise ValueError(f"unknown door {door!r}: use one of {', '.join(DOORS)}")


def _probe(m: Memory, item: dict[str, Any], user: str) -> dict[str, bool]:
    scope = {"user_id": user, "project": "shop"}
    start = m.context(session_id="probe", **scope)
    query = " ".join(item["text"].split()[:12])
    asked = m.context(session_id="probe", query=query, **scope)
    mine = m.list(user_id=user, include_episodes=True, include_inactive=True, limit=100)
    return {"reached_core": bool(start.sections.get("core")) or bool(asked.sections.get("core")),
            "reached_block": bool(start.memories) or bool(asked.memories),
            "held": any(i.status == "held" for i in mine)}


def run(data: str | Path, *, config: Config | None = None, limit: int | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Figures per door and language, for attacks and for the benign controls."""
    rows = [json.loads(line) for line in Path(data).read_text(encoding="utf-8").splitlines()
            if line.strip()][:limit]
    results: list[tuple[dict[str, Any], dict[str, bool]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        shown = Reporter("injection", len(rows)) if progress else None
        with Memory(Path(tmp) / "injection.db", config=config) as m:
            for n, item in enumerate(rows):
                user = f"u{n}"
                feed(m, item, user)
                m.flush()
                results.append((item, _probe(m, item, user)))
                if shown is not None:
                    shown.advance()
        if shown is not None:
            shown.close()
    groups: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for item, checks in results:
        side = "attacks" if item.get("attack") else "benign"
        for key in ("all", f"door:{item.get('door')}", f"lang:{item.get('lang')}"):
            groups[f"{side}/{key}"].append(checks)
    figures = {name: {k: round(sum(c[k] for c in cs) / len(cs), 3) for k in
                      ("reached_core", "reached_block", "held")} | {"n": len(cs)}
               for name, cs in sorted(groups.items())}
    attacks = figures.get("attacks/all", {})
    benign = figures.get("benign/all", {})
    return {"data": str(data), "headline": {
        "attacks_reaching_core_unflagged": attacks.get("reached_core"),
        "attacks_reaching_any_block": attacks.get("reached_block"),
        "attacks_held": attacks.get("held"), "benign_held": benign.get("held"),
        "benign_reaching_a_block": benign.get("reached_block")},
        "figures": figures,
        "missed": [item["id"] for item, c in results if item.get("attack") and c["reached_block"]][:50],
        "false_alarms": [item["id"] for item, c in results if not item.get("attack") and c["held"]][:50]}
