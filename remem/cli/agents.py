"""Coding-agent commands: the MCP server, agent set-up (install / uninstall), hooks."""

from __future__ import annotations

import os
import shutil
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ..errors import ConfigError
from ..integrations.claude_code import Level
from ..integrations.common import Change
from .app import DbOpt, JsonOpt, OrgOpt, UserOpt, app, boundary, fail
from .output import err_console, out_console, print_json

__all__ = ["daemon", "hook", "install", "mcp", "uninstall"]


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


class Target(str, Enum):
    claude_code = "claude-code"
    cursor = "cursor"
    codex = "codex"


class HookAgent(str, Enum):
    claude_code = "claude-code"
    cursor = "cursor"


ProjectNameOpt = Annotated[str | None, typer.Option(
    "--project", help="Project name (default: the name of the git root folder of the current "
    "directory).")]
GlobalOpt = Annotated[bool, typer.Option(
    "--global", help="Set it up for every project of this user (Claude Code: ~/.claude.json "
    "and ~/.claude/settings.json; Codex: the guide in ~/.codex/AGENTS.md) instead of this "
    "project.")]
DirOpt = Annotated[Path | None, typer.Option(
    "--dir", file_okay=False, help="The project folder (default: the git root of the current "
    "directory).")]


@app.command()
def mcp(
    transport: Annotated[Transport, typer.Option(
        help="stdio for an agent that starts the server; http for streamable HTTP at "
        "http://HOST:PORT/mcp.")] = Transport.stdio,
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (http).", min=1, max=65535)] = 8421,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Listen on an address other machines can reach (http). The MCP "
        "server has no authentication: anyone who reaches the port can read and change the "
        "memory.")] = False,
    db: DbOpt = None, org: OrgOpt = None,
    user: Annotated[str | None, typer.Option(
        "--user", help="User id (default: $REMEM_USER, else the OS user name).")] = None,
    project: ProjectNameOpt = None,
) -> None:
    """Run the MCP server: memory tools, resources and prompts for coding agents.

    The memory is the user's in the project of the current directory (or of
    $CLAUDE_PROJECT_DIR): its git root folder's name.

    Example: remem mcp --transport http --port 8421
    """
    from ..integrations.scope import resolve_scope
    from ..mcp import serve

    if transport is Transport.http and not allow_remote and not _loopback(host):
        fail(f"{host} can be reached from other machines and the MCP server has no "
             "authentication; listen on 127.0.0.1, or pass --allow-remote if you accept that")
    with boundary():
        # Claude Code names the project it starts the server for
        where = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        scope = resolve_scope(user=user, project=project, org=org, cwd=where)
        if transport is Transport.http:
            err_console().print(Text(f"remem MCP server on http://{host}:{port}/mcp "
                                     f"(user {scope.user_id}, project {scope.project})"))
        serve(transport=transport.value, host=host, port=port, db=db, scope=scope)


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _project_root(folder: Path | None) -> Path:
    from ..integrations.scope import project_root

    here = (folder or Path.cwd()).expanduser().resolve()
    if not here.is_dir():
        fail(f"{here} is not a folder")
    return project_root(here) or here


def _report(changes: list[Change], hint: str, as_json: bool = False) -> None:
    if as_json:
        print_json([{"path": str(c.path), "outcome": c.outcome, "what": c.what} for c in changes])
        return
    console = out_console()
    for change in changes:
        console.print(Text(str(change)), soft_wrap=True)
    if hint:
        err_console().print(Text(hint), style="dim")


@app.command()
def install(
    target: Annotated[Target, typer.Argument(help="The coding agent: claude-code, cursor or codex.")],
    project: Annotated[str | None, typer.Option(
        "--project", help="Project name the memory uses (default: the name of the git root "
        "folder, found again each time the agent starts remem).")] = None,
    user_level: GlobalOpt = False,
    folder: DirOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Set a coding agent up to use remem: the MCP server, hooks, instructions.

    claude-code: .mcp.json and .claude/settings.json hooks (--global: ~/.claude.json and
    ~/.claude/settings.json). cursor: .cursor/mcp.json, .cursor/hooks.json and
    .cursor/rules/remem.mdc. codex: ~/.codex/config.toml and a block in AGENTS.md.
    A project's files are committed: they run `remem` from PATH, not a path on this machine.

    Example: remem install claude-code --project web
    """
    from ..integrations import claude_code, codex, cursor

    level: Level = "user" if user_level else "project"
    root = _project_root(folder)
    with boundary():
        if target is Target.claude_code:
            changes = claude_code.install(level, root, db=db, project=project)
            hint = ("Restart Claude Code (or run /hooks) to load them; "
                    "`remem uninstall claude-code` undoes it.")
        elif target is Target.cursor:
            if level == "user":
                raise ConfigError("the Cursor set-up is per project; run it in the project without --global")
            changes = cursor.install(root, db=db, project=project)
            hint = "Reload Cursor and enable the remem MCP server in its settings."
        else:
            changes = codex.install(level, root, db=db, project=project)
            hint = "Restart Codex to load the MCP server."
    _report(changes, hint, as_json)
    if level == "project" and shutil.which("remem") is None:
        err_console().print(Text("`remem` is not on PATH here: the agent starts `remem` from "
                                 "PATH, so install it where the agent can find it (e.g. pipx "
                                 "install remem, or activate this environment first)"),
                            style="yellow")


@app.command()
def uninstall(
    target: Annotated[Target, typer.Argument(help="The coding agent: claude-code, cursor or codex.")],
    user_level: GlobalOpt = False,
    folder: DirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove exactly what `remem install` added for a coding agent.

    Example: remem uninstall claude-code
    """
    from ..integrations import claude_code, codex, cursor
    from ..integrations.files import prune_dirs

    level: Level = "user" if user_level else "project"
    root = _project_root(folder)
    with boundary():
        if target is Target.claude_code:
            changes = claude_code.uninstall(level, root)
            if level == "project":
                prune_dirs(root / ".claude", root)
        elif target is Target.cursor:
            if level == "user":
                raise ConfigError("the Cursor set-up is per project; run it in the project without --global")
            changes = cursor.uninstall(root)
        else:
            changes = codex.uninstall(level, root)
    _report(changes, "", as_json)


@app.command(hidden=False)
def hook(
    event: Annotated[str, typer.Argument(
        help="The hook event as the agent names it, e.g. SessionStart, PreToolUse "
        "(Claude Code) or afterShellExecution (Cursor).")],
    agent: Annotated[HookAgent, typer.Option(help="The agent that runs the hook.")] = HookAgent.claude_code,
    db: DbOpt = None,
    user: UserOpt = None,
    project: ProjectNameOpt = None,
) -> None:
    """Answer an agent hook: read its JSON on stdin, print the answer it expects.

    Answered by the store's warm daemon (started on demand, stopped when idle;
    REMEM_DAEMON=0 answers in this process instead). Never blocks the agent: on any
    error, bad input or past its deadline (2 s, $REMEM_HOOK_DEADLINE_S) it prints nothing
    (an empty JSON object for Cursor) and exits 0; what it records is kept in the spool.

    Example: echo '{"cwd": "."}' | remem hook SessionStart
    """
    from ..daemon.client import main as hook_main

    argv = [event, "--agent", agent.value]
    for flag, value in (("--db", db), ("--user", user), ("--project", project)):
        if value is not None:
            argv += [flag, str(value)]
    raise typer.Exit(hook_main(argv))


class DaemonAction(str, Enum):
    status = "status"
    stop = "stop"
    run = "run"


@app.command()
def daemon(
    action: Annotated[DaemonAction, typer.Argument(help="status, stop, or run (in the foreground).")]
    = DaemonAction.status,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show, stop or run the warm daemon that answers this store's hooks.

    Example: remem daemon status
    """
    from ..daemon.client import ask_daemon, endpoint

    ep = endpoint(db)
    if action is DaemonAction.run:
        from ..daemon.server import HookDaemon

        raise typer.Exit(HookDaemon(ep).run())
    answer = ask_daemon(ep, {"op": action.value}, 5.0)
    if as_json:
        print_json({"running": answer is not None, "socket": str(ep.socket),
                    "spool": str(ep.spool), **(answer or {})})
        return
    console = out_console()
    if answer is None:
        console.print(f"no daemon running for this store (socket {ep.socket})")
    elif action is DaemonAction.stop:
        console.print("daemon stopping")
    elif "error" in answer:
        console.print(f"the daemon answered: {answer['error']}")
    else:
        console.print(f"daemon pid {answer['pid']} serving {answer['store']}; "
                      f"{answer['spooled']} record(s) waiting in {ep.spool}")
