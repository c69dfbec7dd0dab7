"""``remem install codex``: the MCP server in Codex's config and a memory guide in AGENTS.md.

- ``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``) gets a marked block with
  ``[mcp_servers.remem]`` (``command`` and ``args``); the rest of the file is left as it
  is. The file is read with ``tomllib`` (Python 3.11+) to refuse a second
  ``[mcp_servers.remem]`` and to check the result parses;
- ``AGENTS.md`` (the project's, or ``$CODEX_HOME/AGENTS.md`` with ``--user``) gets a
  marked block telling the agent how to use the memory tools.

Uninstall removes both blocks and nothing else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from .common import AGENT_GUIDE, Change, mcp_server_entry
from .files import edit_text, remove_block

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the checks are skipped
    tomllib = None  # type: ignore[assignment]

__all__ = ["CONFIG_BEGIN", "CONFIG_END", "GUIDE_BEGIN", "GUIDE_END", "codex_home", "install",
           "uninstall"]

CONFIG_BEGIN = "# >>> remem >>>"
CONFIG_END = "# <<< remem <<<"
GUIDE_BEGIN = "<!-- remem:guide:begin -->"
GUIDE_END = "<!-- remem:guide:end -->"
Level = Literal["project", "user"]


def codex_home() -> Path:
    """``$CODEX_HOME``, default ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def _toml_block(entry: dict[str, Any]) -> str:
    # JSON strings are valid TOML basic strings
    args = ", ".join(json.dumps(a) for a in entry["args"])
    return ("# written by `remem install codex`; `remem uninstall codex` removes this block\n"
            f"[mcp_servers.remem]\ncommand = {json.dumps(entry['command'])}\nargs = [{args}]")


def _parse(path: Path, text: str) -> dict[str, Any] | None:
    if tomllib is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it first, nothing was changed") from None


def _guide_file(level: Level, root: Path) -> Path:
    return root / "AGENTS.md" if level == "project" else codex_home() / "AGENTS.md"


def install(level: Level, root: Path, *, db: str | os.PathLike[str] | None = None,
            project: str | None = None) -> list[Change]:
    """Add the MCP server to Codex's config (the user's own file: it runs this Python)
    and the guide to AGENTS.md."""
    config = codex_home() / "config.toml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""

    outside = remove_block(text, CONFIG_BEGIN, CONFIG_END)
    parsed = _parse(config, text if outside is None else outside)
    if parsed is not None and "remem" in (parsed.get("mcp_servers") or {}):
        raise ConfigError(f"{config} already has [mcp_servers.remem], not written by remem; "
                          "remove it first")
    entry = mcp_server_entry(db, project=project, portable=False)
    outcome = edit_text(config, CONFIG_BEGIN, CONFIG_END, _toml_block(entry))
    try:
        _parse(config, config.read_text(encoding="utf-8"))
    except ConfigError:
        edit_text(config, CONFIG_BEGIN, CONFIG_END, None)
        raise
    guide = _guide_file(level, root)
    return [
        Change(config, outcome, "[mcp_servers.remem]"),
        Change(guide, edit_text(guide, GUIDE_BEGIN, GUIDE_END, f"## Project memory (remem)\n\n{AGENT_GUIDE}"),
               "memory guide"),
    ]


def uninstall(level: Level, root: Path) -> list[Change]:
    """Remove the blocks :func:`install` added."""
    config = codex_home() / "config.toml"
    guide = _guide_file(level, root)
    return [
        Change(config, edit_text(config, CONFIG_BEGIN, CONFIG_END, None), "[mcp_servers.remem]"),
        Change(guide, edit_text(guide, GUIDE_BEGIN, GUIDE_END, None), "memory guide"),
    ]
