"""``remem install claude-code``: the MCP server entry and the hooks in Claude Code's settings.

Where Claude Code reads them (project / user level):

- MCP servers: ``<project>/.mcp.json`` / ``~/.claude.json``, key ``mcpServers``;
- hooks: ``<project>/.claude/settings.json`` / ``~/.claude/settings.json``, key
  ``hooks``: ``{EVENT: [{"matcher": TOOLS, "hooks": [{"type": "command", "command": CMD,
  "timeout": SECONDS}]}]}`` (``matcher`` only for tool events).

remem's hook entries are its own matcher groups, recognised by their command
(``... -m remem hook EVENT``); uninstall removes those and the ``mcpServers.remem``
entry, and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from .common import Change, drop_mcp_server, hook_command, is_remem_command, is_remem_server, mcp_server_entry
from .files import edit_json, undo_json
from .hook_events import CLAUDE_EVENTS

__all__ = ["HOOK_TIMEOUT_S", "Level", "install", "paths", "uninstall"]

#: Seconds Claude Code waits for a remem hook; remem gives up well before (fail open).
HOOK_TIMEOUT_S = 5
Level = Literal["project", "user"]


def paths(level: Level, root: Path) -> tuple[Path, Path]:
    """``(MCP config file, settings file)`` for a project-level or user-level install."""
    if level == "project":
        return root / ".mcp.json", root / ".claude" / "settings.json"
    home = Path.home()
    return home / ".claude.json", home / ".claude" / "settings.json"


def _add_server(entry: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ConfigError("mcpServers is not a JSON object; fix it first")
        current = servers.get("remem")
        if current is not None and not is_remem_server(current):
            raise ConfigError("an MCP server named 'remem' that does not run `remem mcp` is "
                              "already configured; rename or remove it first")
        servers["remem"] = {"type": "stdio", **entry}
    return change


def _drop_hooks(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept.append(group)
                continue
            rest = [h for h in inner if not (isinstance(h, dict) and is_remem_command(h.get("command")))]
            if len(rest) == len(inner):
                kept.append(group)
            elif rest:
                kept.append({**group, "hooks": rest})
        if len(kept) != len(groups):
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not hooks:
        del data["hooks"]


def _add_hooks(db: str | os.PathLike[str] | None, project: str | None,
               portable: bool) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        hooks = data.get("hooks")
        if hooks is not None and not isinstance(hooks, dict):
            raise ConfigError("hooks is not a JSON object; fix it first")
        if isinstance(hooks, dict) and any(not isinstance(v, list) for v in hooks.values()):
            raise ConfigError("an entry of hooks is not a list; fix it first")
        _drop_hooks(data)  # a reinstall replaces remem's entries in place of adding twice
        hooks = data.setdefault("hooks", {})
        for event, matcher in CLAUDE_EVENTS.items():
            group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
            group["hooks"] = [{"type": "command", "command": hook_command(event, db=db, project=project,
                                                            portable=portable),
                               "timeout": HOOK_TIMEOUT_S}]
            hooks.setdefault(event, []).append(group)
    return change


def install(level: Level, root: Path, *, db: str | os.PathLike[str] | None = None,
            project: str | None = None) -> list[Change]:
    """Add the remem MCP server and hooks to Claude Code's settings at ``level``.

    A project's files are committed and shared, so they run the ``remem`` command on
    PATH; the user's own files run this Python. ``project`` pins the project name.
    """
    mcp_file, settings = paths(level, root)
    portable = level == "project"
    server = mcp_server_entry(db, project=project, portable=portable)
    return [
        Change(mcp_file, edit_json(mcp_file, _add_server(server)),
               "MCP server 'remem'"),
        Change(settings, edit_json(settings, _add_hooks(db, project, portable)),
               f"hooks: {', '.join(CLAUDE_EVENTS)}"),
    ]


def uninstall(level: Level, root: Path) -> list[Change]:
    """Remove exactly what :func:`install` added at ``level``."""
    mcp_file, settings = paths(level, root)
    return [
        Change(mcp_file, undo_json(mcp_file, drop_mcp_server), "MCP server 'remem'"),
        Change(settings, undo_json(settings, _drop_hooks), "remem hooks"),
    ]
