"""``remem hook EVENT``: the agent hooks, answered in the format each agent expects.

What hooks store is stored without anyone choosing it, so the credentials it seems to
hold are masked first (:mod:`remem.integrations.redact`). A hook must never block or
break the agent: :func:`run_hook` fails open. Any error,
garbage on stdin, or a store that cannot be opened gives an empty answer (exit code 0),
and the work runs against a hard deadline, past which the answer is empty too.

**Claude Code** (documented hook protocol, as relied on here): the hook command gets one
JSON object on stdin with ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` and, per event: ``source`` (SessionStart), ``prompt``
(UserPromptSubmit), ``tool_name``, ``tool_input`` (``{"command": ...}`` for Bash,
``{"file_path": ...}`` for Edit/Write), ``tool_use_id`` (PreToolUse, PostToolUse,
PostToolUseFailure), ``tool_response`` (PostToolUse; Bash: ``stdout``, ``stderr``,
``interrupted``), ``error`` and ``is_interrupt`` (PostToolUseFailure; the error text
holds the exit code, e.g. ``"Exit code 127 ..."``), ``trigger`` (PreCompact), ``reason``
(SessionEnd), ``last_assistant_message`` (Stop, newer versions). With exit code 0,
stdout may be JSON: ``{"hookSpecificOutput": {"hookEventName": E, "additionalContext":
TEXT}}`` adds TEXT to the model's context for SessionStart, UserPromptSubmit and
PreToolUse, and ``systemMessage`` is shown to the user. A PreToolUse answer here never
carries ``permissionDecision``: memory warns, it neither allows (which would skip the
user's permission prompt) nor denies.

**Cursor** (``.cursor/hooks.json``, version 1): every event gets ``conversation_id``,
``generation_id``, ``hook_event_name`` and ``workspace_roots``; ``afterShellExecution``
adds ``command``, ``output`` and ``duration`` (no exit code), ``afterFileEdit`` adds
``file_path`` and ``edits``, ``stop`` adds ``status``. Cursor reads a JSON object on
stdout from every hook; these are observe-only, so the answer is ``{}``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..config import Config
from ..memory import Memory
from .agent import AgentMemory
from .anchors import relative
from .hook_events import (
    CLAUDE_EVENTS,
    CURSOR_EVENTS,
    DEADLINE_S,
    FINAL_EVENTS,
    READ_EVENTS,
    deadline_from_env,
)
from .redact import redact
from .scope import resolve_scope

__all__ = [
    "CLAUDE_EVENTS",
    "CURSOR_EVENTS",
    "DEADLINE_S",
    "HookInput",
    "answer",
    "deadline_from_env",
    "record",
    "reply",
    "run_hook",
]

Agent = Literal["claude-code", "cursor"]

_OUTPUT_TAIL = 2000
_EXIT = re.compile(r"(?:exit(?:ed with)?(?: non-zero)? (?:status )?code|status code|exit status)\D{0,3}(\d+)",
                   re.IGNORECASE)
_EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


class HookInput(BaseModel):
    """The JSON a hook gets on stdin; fields the agent adds later are kept, not refused."""

    model_config = ConfigDict(extra="allow")

    hook_event_name: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    source: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_response: Any = None
    error: str | None = None
    is_interrupt: bool | None = None
    last_assistant_message: str | None = None
    # Cursor
    conversation_id: str | None = None
    workspace_roots: list[str] | None = None
    command: str | None = None
    output: str | None = None
    file_path: str | None = None

    @property
    def session(self) -> str | None:
        return self.session_id or self.conversation_id

    @property
    def where(self) -> str:
        """The folder the agent works in."""
        if self.cwd:
            return self.cwd
        if self.workspace_roots:
            return self.workspace_roots[0]
        return os.getcwd()


def _tail(text: str, limit: int = _OUTPUT_TAIL) -> str:
    """The end of a command's output, secrets masked."""
    return redact(text if len(text) <= limit else "…" + text[-limit:])


def _context(event: str, text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _bash_output(response: Any) -> tuple[str, int]:
    """The output tail and exit code of a finished Bash call (PostToolUse)."""
    if isinstance(response, str):
        return _tail(response), 0
    if not isinstance(response, dict):
        return "", 0
    parts = [response.get(key) for key in ("stdout", "stderr", "output")]
    text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    code = next((response[k] for k in ("exit_code", "exitCode", "returnCode", "return_code")
                 if isinstance(response.get(k), int)), 0)
    return _tail(text), code


def _edited_path(agent: AgentMemory, payload: HookInput) -> str | None:
    raw = (payload.tool_input or {}).get("file_path") or (payload.tool_input or {}).get(
        "notebook_path") or payload.file_path
    if not isinstance(raw, str) or not raw:
        return None
    return relative(raw, agent.scope.root) if agent.scope.root else raw


def _reply_claude(event: str, payload: HookInput, agent: AgentMemory) -> dict[str, Any] | None:
    session = payload.session
    if event == "SessionStart":
        return _context(event, agent.bootstrap(budget_tokens=800, session_id=session, if_empty=None,
                                               door=f"hook:{event}"))
    if event == "UserPromptSubmit":
        prompt = (payload.prompt or "").strip()
        return _context(event, agent.prompt_context(prompt, session_id=session,
                                                    door=f"hook:{event}")) if prompt else None
    command = (payload.tool_input or {}).get("command")
    if event != "PreToolUse" or payload.tool_name != "Bash" or not isinstance(command, str) \
            or not command.strip():
        return None
    check = agent.check_command(command)
    if check.empty:
        return None
    if check.conventions:
        lead, first = f"remem: `{check.program}` goes against a convention", check.conventions[0]
    else:
        lead, first = f"remem: known pitfall for `{check.program}`", (check.pitfalls or check.failures)[0]
    return {"systemMessage": f"{lead}: {' '.join(first.text.split())[:200]}",
            **(_context(event, agent.render_check(check, door=f"hook:{event}",
                                                  session_id=session)) or {})}


def _record_claude(event: str, payload: HookInput, agent: AgentMemory) -> bool:
    session = payload.session
    if event == "UserPromptSubmit":
        prompt = (payload.prompt or "").strip()
        if prompt:
            agent.say("user", redact(prompt), session_id=session)
        return bool(prompt)
    if event in ("PreCompact", "Stop", "SessionEnd"):
        last = payload.last_assistant_message
        if event == "Stop" and isinstance(last, str) and last.strip():
            agent.say("assistant", redact(last), session_id=session)
            return True
        return False
    if event not in ("PostToolUse", "PostToolUseFailure"):
        return False
    failed, tool = event == "PostToolUseFailure", payload.tool_name or ""
    if failed and payload.is_interrupt:
        return False  # the user stopped it; nothing went wrong
    command = (payload.tool_input or {}).get("command")
    if tool == "Bash" and isinstance(command, str) and command.strip():
        if failed:
            error = payload.error or ""
            match = _EXIT.search(error)
            code = int(match.group(1)) if match else 1
            if match and match.start() == 0:  # "Exit code 127\n<output>": keep the output
                error = error[match.end():].lstrip()
            output = _tail(error)
        else:
            output, code = _bash_output(payload.tool_response)
        agent.capture([{"type": "tool_call", "tool": "Bash", "command": redact(command),
                        "exit_code": code, "output": output or None}], session_id=session)
    elif tool in _EDIT_TOOLS and (path := _edited_path(agent, payload)):
        if failed:
            agent.capture([{"type": "error", "message": f"{tool} of {path} failed",
                            "detail": _tail(payload.error or "") or None}], session_id=session)
        else:
            agent.capture([{"type": "file_edit", "path": path, "change": tool}], session_id=session)
    else:
        return False
    return True


def _record_cursor(event: str, payload: HookInput, agent: AgentMemory) -> bool:
    session = payload.session
    if event == "afterShellExecution" and payload.command and payload.command.strip():
        code = payload.model_extra.get("exit_code") if payload.model_extra else None
        agent.capture([{"type": "tool_call", "tool": "Shell", "command": redact(payload.command),
                        "exit_code": code if isinstance(code, int) else None,
                        "output": _tail(payload.output or "") or None}], session_id=session)
        return True
    if event == "afterFileEdit" and (path := _edited_path(agent, payload)):
        agent.capture([{"type": "file_edit", "path": path, "change": "edit"}], session_id=session)
        return True
    return False


def reply(event: str, payload: HookInput, agent: AgentMemory, *,
          agent_name: Agent = "claude-code") -> dict[str, Any] | None:
    """What a hook event is answered with (None: nothing); reads only."""
    if agent_name == "cursor":
        return {}
    return _reply_claude(event, payload, agent) if event in READ_EVENTS else None


def record(event: str, payload: HookInput, agent: AgentMemory, *,
           agent_name: Agent = "claude-code") -> bool:
    """Store what a hook event says happened (a prompt, a command and its output, an
    edit, the agent's last message); True if something was stored."""
    if agent_name == "cursor":
        return _record_cursor(event, payload, agent)
    return _record_claude(event, payload, agent) if event in CLAUDE_EVENTS else False


def answer(event: str, payload: HookInput, *, agent_name: Agent = "claude-code",
           db: str | os.PathLike[str] | None = None, user: str | None = None,
           project: str | None = None, left: Callable[[], float] = lambda: DEADLINE_S
           ) -> dict[str, Any] | None:
    """What to print for one hook event (None: nothing), answered in this process: the
    store opened, read, written and its queued work given what time is left. Raises on
    any failure."""
    known = CURSOR_EVENTS if agent_name == "cursor" else CLAUDE_EVENTS
    if event not in known:
        return {} if agent_name == "cursor" else None
    scope = resolve_scope(user=user, project=project, cwd=payload.where)
    memory = Memory(db, config=Config.from_env())
    try:
        agent = AgentMemory(memory, scope, door="hook")
        out = reply(event, payload, agent, agent_name=agent_name)
        stored = record(event, payload, agent, agent_name=agent_name)
        if (stored and event not in READ_EVENTS) or event in FINAL_EVENTS:
            agent.settle(max(0.0, left() - 0.3), everything=event in FINAL_EVENTS)
        return out
    finally:
        memory.close()


def run_hook(event: str, stdin: Any, *, agent_name: Agent = "claude-code",
             db: str | os.PathLike[str] | None = None, user: str | None = None,
             project: str | None = None, deadline_s: float = DEADLINE_S) -> tuple[str, bool]:
    """Read the hook's JSON from ``stdin`` (a binary stream) and work out the answer within
    ``deadline_s`` seconds.

    Returns ``(stdout text, finished)``; the text is empty when there is nothing to say,
    on any error and past the deadline. ``finished`` is False when the work was cut off
    (its thread is still running; the caller should end the process without waiting).
    """
    import time

    start = time.monotonic()
    fallback = "{}" if agent_name == "cursor" else ""
    result: list[str] = []

    def left() -> float:
        return deadline_s - (time.monotonic() - start)

    def work() -> None:
        try:
            raw = stdin.read()
            data = json.loads(raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw)
            if not isinstance(data, dict):
                raise ValueError(f"expected a JSON object, got {type(data).__name__}")
            payload = HookInput.model_validate(data)
            out = answer(event, payload, agent_name=agent_name, db=db, user=user,
                         project=project, left=left)
            result.append(json.dumps(out, ensure_ascii=False) if out is not None else "")
        except Exception as exc:  # fail open: the agent goes on as if there were no hook
            print(f"remem hook {event}: {type(exc).__name__}: {exc}", file=sys.stderr)

    thread = threading.Thread(target=work, name="remem-hook", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline_s))
    if thread.is_alive():
        print(f"remem hook {event}: gave up after {deadline_s:.1f}s", file=sys.stderr)
        return fallback, False
    return (result[0] if result and result[0] else fallback), True
