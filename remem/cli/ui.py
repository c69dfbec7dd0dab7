"""``remem ui``: the web console, served on this machine and opened in the browser."""

from __future__ import annotations

import json
import threading
import time
import webbrowser
from typing import Annotated

import typer
from rich.text import Text

from .app import DbOpt, JsonOpt, app, boundary, open_memory
from .output import err_console

_LOOPBACK = "127.0.0.1"


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 8420,
    browser: Annotated[bool, typer.Option(
        "--browser/--no-browser", help="Open the console in the default browser.")] = True,
    db: DbOpt = None,
    as_json: JsonOpt = False,
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
    from ..serve.run import listen

    with open_memory(db, create=True) as memory:
        with boundary():
            config = ServerConfig.model_validate({**memory.config.server.model_dump(),
                                                  "host": _LOOPBACK, "port": port})
            sock = listen(_LOOPBACK, port)
        url = f"http://{_LOOPBACK}:{sock.getsockname()[1]}/ui"
        server = uvicorn.Server(uvicorn.Config(
            create_app(memory, config=config), log_level="warning", ws="none",
            timeout_graceful_shutdown=5, server_header=False))

        def announce() -> None:  # once the server answers, not before
            while not server.started and not server.should_exit:
                time.sleep(0.02)
            if not server.started:
                return
            if as_json:
                typer.echo(json.dumps({"console": url, "store": str(memory.path)}))
            else:
                err_console().print(Text(f"remem console: {url} (serving {memory.path}; "
                                         "Ctrl-C stops it)"))
            if browser:
                webbrowser.open(url)

        threading.Thread(target=announce, daemon=True).start()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
