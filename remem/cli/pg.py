"""``remem pg start | status | stop``: a local PostgreSQL server with pgvector in one
command (``pip install 'remem[pg-server]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import Config, pg_server_path
from .app import CONTEXT, JsonOpt, app, boundary
from .output import err_console, out_console, print_json
from .pg_server import LocalPostgres, ServerState

pg_app = typer.Typer(help="A local PostgreSQL server with pgvector, for --db / REMEM_STORE_URL.",
                     context_settings=CONTEXT, no_args_is_help=True)
app.add_typer(pg_app, name="pg")

DirOpt = Annotated[Path | None, typer.Option(
    "--dir", metavar="DIR", help="The server's folder (created if new); default: <REMEM_HOME>/pg.")]


def _server(folder: Path | None) -> LocalPostgres:
    return LocalPostgres(folder.expanduser() if folder else pg_server_path(Config.from_env()))


def _report(state: ServerState, as_json: bool) -> None:
    if as_json:
        print_json({"running": state.running, "url": state.url, "port": state.port,
                    "pid": state.pid, "dir": str(state.folder)})
    elif state.running:
        out_console().print(state.url, highlight=False, soft_wrap=True)
        err_console().print(f"running (pid {state.pid}) from {state.folder}; use the URL with "
                            "--db or REMEM_STORE_URL", highlight=False, soft_wrap=True)
    else:
        out_console().print(f"stopped ({state.folder})", highlight=False, soft_wrap=True)


@pg_app.command("start")
def start(
    folder: DirOpt = None,
    port: Annotated[int | None, typer.Option(
        "--port", min=1, max=65535,
        help="The loopback port (default: the folder's own, 5432 for a new folder).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the server (creating the cluster, a remem database and the vector extension
    when the folder is new) and print its store URL.

    Example: export REMEM_STORE_URL=$(remem pg start --port 5433)
    """
    with boundary():
        state = _server(folder).start(port=port)
    _report(state, as_json)


@pg_app.command("status")
def status(folder: DirOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the server runs, and its store URL.

    Example: remem pg status --json
    """
    with boundary():
        state = _server(folder).status()
    _report(state, as_json)


@pg_app.command("stop")
def stop(folder: DirOpt = None, as_json: JsonOpt = False) -> None:
    """Stop the server; its data stays in the folder for the next start.

    Example: remem pg stop
    """
    with boundary():
        server = _server(folder)
        stopped = server.stop()
    if as_json:
        print_json({"stopped": stopped, "dir": str(server.folder)})
    else:
        out_console().print("stopped" if stopped else f"not running ({server.folder})",
                            highlight=False, soft_wrap=True)
