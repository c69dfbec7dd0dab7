"""The hook events remem answers, and how long a hook may take: shared by the hook code
and the thin client that runs before anything else is loaded (standard library only)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["CLAUDE_EVENTS", "CURSOR_EVENTS", "DEADLINE_S", "FINAL_EVENTS", "READ_EVENTS",
           "WRITE_EVENTS", "deadline_from_env"]

#: Seconds a hook may work before it gives up and answers nothing
#: (``$REMEM_HOOK_DEADLINE_S`` changes it, from 0.1 to 60).
DEADLINE_S = 2.0
#: Claude Code events remem handles, and the tools each one listens to (None: no matcher).
CLAUDE_EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Bash",
    "PostToolUse": "Bash|Edit|MultiEdit|Write",
    "PostToolUseFailure": "Bash|Edit|MultiEdit|Write",
    "PreCompact": None,
    "Stop": None,
    "SessionEnd": None,
}
#: Cursor events remem handles (observe-only).
CURSOR_EVENTS = ("afterShellExecution", "afterFileEdit", "stop")
#: Events whose answer the agent shows the model: they read the memory.
READ_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse"})
#: Events that end a stretch of work: what is queued is given time to finish.
FINAL_EVENTS = frozenset({"PreCompact", "Stop", "SessionEnd", "stop"})
#: Events that store something (a prompt, a command, an edit, a last message).
WRITE_EVENTS = frozenset({"UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop",
                          "afterShellExecution", "afterFileEdit"})


def deadline_from_env(environ: Mapping[str, str] | None = None) -> float:
    """``$REMEM_HOOK_DEADLINE_S`` when it is a number from 0.1 to 60, else :data:`DEADLINE_S`."""
    raw = (os.environ if environ is None else environ).get("REMEM_HOOK_DEADLINE_S", "")
    try:
        value = float(raw)
    except ValueError:
        return DEADLINE_S
    return value if 0.1 <= value <= 60 else DEADLINE_S
