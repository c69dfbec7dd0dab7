"""Which coding agents are set up to use remem in a project: what ``remem install``
wrote, read back from the agents' own files."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .claude_code import paths as claude_paths
from .codex import CONFIG_BEGIN, GUIDE_BEGIN, codex_home
from .common import is_remem_command, is_remem_server
from .cursor import RULE_MARK

__all__ = ["Setup", "agent_setups"]

State = Literal["installed", "partial", "absent"]


@dataclass(frozen=True)
class Setup:
    """One agent's set-up in a project: ``installed`` (every part), ``partial`` or ``absent``."""

    agent: str
    state: State
    found: tuple[str, ...]    # the parts present, e.g. ".mcp.json"
    missing: tuple[str, ...]  # the parts absent
    commands: tuple[str, ...]  # the commands the agent will run to start remem


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _server(path: Path) -> str | None:
    """The command of remem's MCP server entry in ``path``, None when it has none."""
    entry = (_json(path).get("mcpServers") or {}).get("remem")
    return str(entry.get("command")) if is_remem_server(entry) and isinstance(entry, dict) else None


def _hook_commands(value: Any) -> list[str]:
    """Every remem hook command anywhere in a hooks structure."""
    if isinstance(value, dict):
        found = [value["command"]] if is_remem_command(value.get("command")) else []
        return found + [c for v in value.values() for c in _hook_commands(v)]
    if isinstance(value, list):
        return [c for v in value for c in _hook_commands(v)]
    return []


def _program(command: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return words[0] if words else command


def _text_has(path: Path, mark: str) -> bool:
    try:
        return mark in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _setup(agent: str, parts: dict[str, bool], commands: list[str]) -> Setup:
    found = tuple(name for name, present in parts.items() if present)
    missing = tuple(name for name, present in parts.items() if not present)
    state: State = "installed" if not missing else ("partial" if found else "absent")
    return Setup(agent, state, found, missing, tuple(dict.fromkeys(commands)))


def agent_setups(root: Path) -> list[Setup]:
    """The set-ups of Claude Code, Cursor and Codex for the project at ``root``."""
    mcp_file, settings = claude_paths("project", root)
    server = _server(mcp_file)
    hooks = _hook_commands(_json(settings).get("hooks"))
    claude = _setup("claude-code", {".mcp.json": server is not None,
                                    ".claude/settings.json hooks": bool(hooks)},
                    [_program(c) for c in ([server] if server else []) + hooks])
    cursor_dir = root / ".cursor"
    cursor_server = _server(cursor_dir / "mcp.json")
    cursor_hooks = _hook_commands(_json(cursor_dir / "hooks.json").get("hooks"))
    cursor = _setup("cursor", {".cursor/mcp.json": cursor_server is not None,
                               ".cursor/hooks.json": bool(cursor_hooks),
                               ".cursor/rules/remem.mdc": _text_has(
                                   cursor_dir / "rules" / "remem.mdc", RULE_MARK)},
                    [_program(c) for c in ([cursor_server] if cursor_server else []) + cursor_hooks])
    codex = _setup("codex", {"~/.codex/config.toml": _text_has(codex_home() / "config.toml",
                                                               CONFIG_BEGIN),
                             "AGENTS.md guide": _text_has(root / "AGENTS.md", GUIDE_BEGIN)}, [])
    return [claude, cursor, codex]
