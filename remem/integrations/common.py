"""What the agent set-ups share: how an agent starts remem, what each change did, and
the instructions an agent is given about its memory."""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import Outcome

__all__ = ["AGENT_GUIDE", "Change", "hook_command", "is_remem_command", "mcp_server_entry",
           "remem_argv"]

AGENT_GUIDE = """\
This project has a long-term memory, remem, reachable through the `remem` MCP server.
- At the start of a task, call `memory_bootstrap` once and follow what it returns.
- Before editing files, call `memory_for_files` with their paths.
- Before running a shell command you have not run in this project, call
  `memory_check_command`; if it reports a pitfall, use the fix it gives.
- After an error, or when unsure how something is done here, call `memory_recall`
  with the question or the error text.
- When you learn something durable (a convention, a pitfall and its fix, a user
  preference, a decision), call `memory_remember` with one short, self-contained
  sentence and its kind. Never store secrets.
- If a memory turns out wrong or out of date, call `memory_feedback`.
Memories marked `stale?` cite code that changed since they were written: check first."""

_OURS = re.compile(r"(?:^|[\s/\\])remem(?:\.exe)?\s+hook\s|\s-m\s+remem\s+hook\s")


@dataclass(frozen=True)
class Change:
    """One file an install or uninstall touched, and what happened to it."""

    path: Path
    outcome: Outcome
    what: str

    def __str__(self) -> str:
        return f"{self.outcome:>9}  {self.path}  ({self.what})"


def remem_argv(*args: str, portable: bool = True) -> list[str]:
    """The command line that runs ``remem ARGS``.

    ``portable`` (for files a team commits, such as a project's ``.mcp.json``): the
    ``remem`` command on PATH, the same on every machine. Otherwise (files of this user
    on this machine): this very Python, which works without PATH set up.
    """
    return ["remem", *args] if portable else [sys.executable, "-m", "remem", *args]


def _pins(db: str | os.PathLike[str] | None, project: str | None) -> list[str]:
    pins = ["--db", str(Path(db).expanduser().resolve())] if db is not None else []
    return pins + (["--project", project] if project is not None else [])


def hook_command(event: str, *, agent: str = "claude-code",
                 db: str | os.PathLike[str] | None = None, project: str | None = None,
                 portable: bool = True) -> str:
    """The shell command an agent runs for one hook event."""
    extra = ["--agent", agent] if agent != "claude-code" else []
    return shlex.join(remem_argv("hook", event, *extra, *_pins(db, project), portable=portable))


def is_remem_command(command: object) -> bool:
    """True for a hook command remem installed (``... -m remem hook EVENT ...``)."""
    return isinstance(command, str) and _OURS.search(command + " ") is not None


def mcp_server_entry(db: str | os.PathLike[str] | None = None, *, project: str | None = None,
                     portable: bool = True) -> dict[str, object]:
    """The ``mcpServers.remem`` entry that starts the MCP server on stdio."""
    argv = remem_argv("mcp", *_pins(db, project), portable=portable)
    return {"command": argv[0], "args": argv[1:]}


def is_remem_server(entry: object) -> bool:
    """True for an ``mcpServers`` entry that runs ``remem mcp``."""
    if not isinstance(entry, dict):
        return False
    words = [str(entry.get("command", "")), *map(str, entry.get("args") or [])]
    line = " ".join(words)
    return "mcp" in words and re.search(r"(?:^|[\s/\\])remem(?:\.exe)?\s+mcp\b|-m\s+remem\s+mcp\b",
                                         line) is not None



def drop_mcp_server(data: dict[str, Any]) -> None:
    """Remove remem's entry from ``mcpServers`` (and the key, once empty)."""
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and is_remem_server(servers.get("remem")):
        del servers["remem"]
        if not servers:
            del data["mcpServers"]