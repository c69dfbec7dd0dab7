"""``remem install cursor``: the MCP server, capture hooks and an always-applied rule.

Files, all in the project:

- ``.cursor/mcp.json``: ``mcpServers.remem`` runs ``remem mcp`` on stdio;
- ``.cursor/hooks.json`` (version 1): ``afterShellExecution``, ``afterFileEdit`` and
  ``stop`` run ``remem hook EVENT --agent cursor``, which stores the commands and edits
  as agent events. These hooks only observe; warnings before a command come from the
  ``memory_check_command`` tool the rule asks for, since a ``beforeShellExecution``
  answer would have to take part in Cursor's permission decision;
- ``.cursor/rules/remem.mdc`` (``alwaysApply: true``): how to use the memory tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .common import (
    AGENT_GUIDE,
    Change,
    drop_mcp_server,
    hook_command,
    is_remem_command,
    is_remem_server,
    mcp_server_entry,
)
from .files import Outcome, edit_json, prune_dirs, undo_json, write_atomic
from .hooks import CURSOR_EVENTS

__all__ = ["RULE_MARK", "install", "uninstall"]

RULE_MARK = "<!-- remem:rule (written by `remem install cursor`; `remem uninstall cursor` removes it) -->"


def _files(root: Path) -> tuple[Path, Path, Path]:
    folder = root / ".cursor"
    return folder / "mcp.json", folder / "hooks.json", folder / "rules" / "remem.mdc"


def _rule() -> str:
    return ("---\ndescription: How to use this project's long-term memory (remem)\n"
            f"alwaysApply: true\n---\n{RULE_MARK}\n\n# Project memory\n\n{AGENT_GUIDE}\n")


def _add_server(entry: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ConfigError("mcpServers is not a JSON object; fix it first")
        if servers.get("remem") is not None and not is_remem_server(servers["remem"]):
            raise ConfigError("an MCP server named 'remem' that does not run `remem mcp` is "
                              "already configured; rename or remove it first")
        servers["remem"] = entry
    return change


def _drop_hooks(data: dict[str, Any]) -> None:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if not (isinstance(e, dict) and is_remem_command(e.get("command")))]
        if len(kept) != len(entries):
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not hooks:
        del data["hooks"]


def _add_hooks(db: str | os.PathLike[str] | None,
               project: str | None) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        hooks = data.get("hooks")
        if hooks is not None and (not isinstance(hooks, dict)
                                  or any(not isinstance(v, list) for v in hooks.values())):
            raise ConfigError("hooks is not an object of lists; fix it first")
        data.setdefault("version", 1)
        _drop_hooks(data)
        hooks = data.setdefault("hooks", {})
        for event in CURSOR_EVENTS:
            hooks.setdefault(event, []).append(
                {"command": hook_command(event, agent="cursor", db=db, project=project)})
    return change


def install(root: Path, *, db: str | os.PathLike[str] | None = None,
            project: str | None = None) -> list[Change]:
    """Add the MCP server, the capture hooks and the rule to the project at ``root``
    (files a team commits: they run the ``remem`` command on PATH)."""
    mcp_file, hooks_file, rule_file = _files(root)
    server = mcp_server_entry(db, project=project)
    changes = [
        Change(mcp_file, edit_json(mcp_file, _add_server(server)), "MCP server 'remem'"),
        Change(hooks_file, edit_json(hooks_file, _add_hooks(db, project)),
               f"hooks: {', '.join(CURSOR_EVENTS)}"),
    ]
    rule = _rule()
    if rule_file.exists() and RULE_MARK not in rule_file.read_text(encoding="utf-8", errors="replace"):
        raise ConfigError(f"{rule_file} exists and was not written by remem; move it first")
    before = rule_file.read_text(encoding="utf-8") if rule_file.exists() else None
    if before != rule:
        write_atomic(rule_file, rule.encode("utf-8"))
    outcome: Outcome = "unchanged" if before == rule else ("updated" if before is not None else "created")
    changes.append(Change(rule_file, outcome, "rule, alwaysApply"))
    return changes


def uninstall(root: Path) -> list[Change]:
    """Remove exactly what :func:`install` added to the project at ``root``."""
    mcp_file, hooks_file, rule_file = _files(root)
    changes = [
        Change(mcp_file, undo_json(mcp_file, drop_mcp_server), "MCP server 'remem'"),
        Change(hooks_file, undo_json(hooks_file, _drop_hooks,
                                     bare=lambda d: set(d) <= {"version"}),
               "remem hooks"),
    ]
    if rule_file.exists() and RULE_MARK in rule_file.read_text(encoding="utf-8", errors="replace"):
        rule_file.unlink()
        changes.append(Change(rule_file, "removed", "rule"))
    else:
        changes.append(Change(rule_file, "absent", "rule"))
    prune_dirs(rule_file.parent, root)
    return changes
