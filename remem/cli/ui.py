"""``remem ui``: the web console, served on this machine and opened in the browser."""

from __future__ import annotations

import socket
import threading
import time
import webbrowser
from typing import Annotated

import typer
from rich.text import Text

from .app import DbOpt, app, boundary, fail, open_memory
from .output import err_console

_LOOPBACK = "127.0.0.1"


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((_LOOPBACK, port))
        except OSError:
            return False
    return True


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8420,
    browser: Annotated[bool, typer.Option(
        "--browser/--no-browser", help="Open the console in the default browser.")] = True,
    db: DbOpt = None,
) -> None:
    """Open the web console: memories, the review inbox, sessions and what they were given,
    the timeline, the mind map, jobs. Served on 127.0.0.1 only, until Ctrl-C.

    Example: remem ui ; remem ui --port 8500 --no-browser
    """
    from .serve import _need_server_extra

    _need_server_extra()
    import uvicorn

    from ..config import ServerConfig
    from ..serve.app import create_app

    if port and not _port_free(port):
        fail(f"port {port} on {_LOOPBACK} is taken (another `remem ui` or `remem serve`?); "
             "choose another with --port, or --port 0 for any free one")
    with open_memory(db) as memory:
        with boundary():
            config = ServerConfig.model_validate({**memory.config.server.model_dump(),
                                                  "host": _LOOPBACK, "port": port})
        sock = socket.socket()
        sock.bind((_LOOPBACK, port))
        url = f"http://{_LOOPBACK}:{sock.getsockname()[1]}/ui"
        server = uvicorn.Server(uvicorn.Config(
            create_app(memory, config=config), log_level="warning", ws="none",
            timeout_graceful_shutdown=5, server_header=False))

        def announce() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.02)
            if server.started:
                err_console().print(Text(f"remem console: {url} (serving {memory.path}; Ctrl-C stops it)"))
                if browser:
                    webbrowser.open(url)

        threading.Thread(target=announce, daemon=True).start()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
