"""``remem serve`` (the REST service and chat proxy) and ``remem keys`` (its API keys)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from .app import CONTEXT, DEFAULT_ORG, DbOpt, JsonOpt, app, boundary, fail, open_memory
from .output import WIDE, err_console, out_console, print_json, records, when

keys_app = typer.Typer(
    help="Keys: the REST service's API keys (create, list, revoke) and the key that signs cubes "
    "(signing).",
    context_settings=CONTEXT,
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")

_SERVER_PACKAGES = ("fastapi", "uvicorn", "httpx")


def _need_server_extra() -> None:
    missing = [name for name in _SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        fail(f"the REST service needs {', '.join(missing)}: pip install \"remem[server]\"")


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(
        help="Address to listen on (default 127.0.0.1). Any other than a loopback address "
        "needs an API key first (remem keys create).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (default 8420).")] = None,
    upstream: Annotated[str | None, typer.Option(
        metavar="URL", help="OpenAI-compatible endpoint the chat proxy forwards to, e.g. "
        "http://localhost:11434/v1 (its key: REMEM_SERVER_UPSTREAM_API_KEY).")] = None,
    local_model: Annotated[Path | None, typer.Option(
        "--local-model", exists=True, file_okay=False, metavar="DIR",
        help="Answer the chat proxy with this local model folder, in this process, reusing "
        "the KV cache of the core memory block (needs remem\\[parametric]).")] = None,
    adapter: Annotated[Path | None, typer.Option(
        exists=True, file_okay=False, metavar="DIR",
        help="A LoRA adapter folder (see remem tiers list) to load on --local-model.")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Serve the memory over HTTP: the REST API under /v1 (docs at /docs), an event
    stream, an OpenAI-compatible chat proxy at /v1/chat/completions, and the web
    console at /ui.

    Example: remem serve --port 8420 --upstream http://localhost:11434/v1
    """
    if local_model is not None and upstream is not None:
        fail("give --upstream or --local-model, not both")
    if adapter is not None and local_model is None:
        fail("--adapter needs --local-model")
    _need_server_extra()
    from .. import Config
    from ..config import ServerConfig
    from ..serve.run import check_bind
    from ..serve.run import serve as run

    with boundary():
        config = Config.from_env()
        given = {"host": host, "port": port, "upstream_base_url": upstream}
        server = ServerConfig.model_validate(
            {**config.server.model_dump(), **{k: v for k, v in given.items() if v is not None}})
    with open_memory(db, create=True) as memory:
        keys = memory.keys
        check_bind(server.host, keys)
        transport = None
        if local_model is not None:
            with boundary():
                transport = _local_transport(local_model, adapter, memory.adapters_dir / ".kv-cache")
        mode = (f"{keys.active()} active API key(s): requests need `Authorization: Bearer KEY`"
                if keys.any() else "single-user mode, no API keys (add one with `remem keys create`)")
        console = err_console()

        def ready() -> None:  # the port is open: a client may connect from now on
            if as_json:  # one line on stdout a script can wait for
                typer.echo(json.dumps({"serving": _url(server.host, server.port),
                                       "store": str(memory.path), "api_keys": keys.active(),
                                       "upstream": server.upstream_base_url}))
                return
            console.print(Text(f"remem: serving {memory.path} at {_url(server.host, server.port)} "
                               f"- {mode}"))
            console.print(Text(f"API docs: {_url(server.host, server.port)}/docs"), style="dim")
            console.print(Text(f"web console: {_url(server.host, server.port)}/ui"), style="dim")
            if server.upstream_base_url:
                console.print(Text(f"chat proxy: /v1/chat/completions -> {server.upstream_base_url}"),
                              style="dim")
            if local_model is not None:
                console.print(Text(f"chat proxy: /v1/chat/completions -> {local_model} (in this process"
                                   + (f", adapter {adapter})" if adapter else ")")), style="dim")

        run(memory, server, ready=ready, upstream=transport)


def _local_transport(model: Path, adapter: Path | None, cache_dir: Path) -> Any:
    """The chat proxy's upstream as a local model (with an adapter) in this process."""
    from ..serve.local import LocalModelTransport
    from ..tiers.lora import LoraMemory

    lora = LoraMemory(model)
    if adapter is not None:
        lora.load(adapter)
    return LocalModelTransport(lora, cache_dir)


@keys_app.command("create")
def keys_create(
    org: Annotated[str, typer.Option("--org", help="The org the key is confined to.")],
    user: Annotated[str | None, typer.Option(
        "--user", help="Confine the key to this one user of the org.")] = None,
    scopes: Annotated[str, typer.Option(
        help="Comma-separated: read, write, admin (admin includes the other two).")] = "read,write",
    name: Annotated[str | None, typer.Option(help="A label to recognise the key by.")] = None,
    db: DbOpt = None, as_json: JsonOpt = False,
) -> None:
    """Create an API key and print it; it is shown only this once.

    The key goes alone to stdout (KEY=$(remem keys create --org acme) works), the rest to stderr.

    Example: remem keys create --org acme --user alice --scopes read,write --name laptop
    """
    with open_memory(db, create=True) as memory:
        created = memory.keys.create(org, user_id=user, scopes=scopes, name=name)
    info = created.info
    if as_json:
        print_json({"key": created.key, **info.model_dump(mode="json")})
        return
    typer.echo(created.key)
    who = f"org {info.org_id}" + (f", user {info.user_id}" if info.user_id else "")
    console = err_console()
    console.print(Text(f"created {info.id} for {who}, scopes {','.join(info.scopes)}"))
    console.print(Text("Store the key now: it is shown only this once. "
                       "Clients send `Authorization: Bearer KEY`."), style="yellow")
    if info.org_id != DEFAULT_ORG:
        console.print(Text(f"Memories stored without a key (single-user mode) are in org "
                           f"'{DEFAULT_ORG}', not '{info.org_id}': this key does not see them. "
                           f"`remem list --org {DEFAULT_ORG}` lists them; a key created with "
                           f"--org {DEFAULT_ORG} reaches them."), style="yellow", soft_wrap=True)


@keys_app.command("list")
def keys_list(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """List the API keys (never the keys themselves), revoked ones too.

    Example: remem keys list --json
    """
    with open_memory(db) as memory:
        keys = memory.keys.list()
    if as_json:
        print_json([key.model_dump(mode="json") for key in keys])
        return
    if not keys:
        err_console().print("no API keys; the service runs in single-user mode on 127.0.0.1 "
                            "(create one with `remem keys create --org ORG`)", style="yellow")
        return
    console = out_console()
    if console.width < WIDE:  # records: seven columns do not fit a narrow terminal
        rows = []
        for key in keys:
            head = Text(key.id, style="bold")
            head.append("  active" if key.revoked_at is None else "  revoked",
                        style="green" if key.revoked_at is None else "red")
            parts = [f"org {key.org_id}", *([f"user {key.user_id}"] if key.user_id else []),
                     f"scopes {', '.join(key.scopes)}", *([f"name {key.name}"] if key.name else []),
                     f"last used {when(key.last_used_at) or 'never'}"]
            rows.append((head, [Text(" · ".join(parts))]))
        records(rows, console)
        return
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("id", "org", "user", "scopes", "name", "last used", "state"):
        table.add_column(column, no_wrap=column in ("id", "state"))
    for key in keys:
        state = Text("active", style="green") if key.revoked_at is None else Text("revoked", style="red")
        table.add_row(Text(key.id), Text(key.org_id), Text(key.user_id or ""),
                      Text(", ".join(key.scopes)), Text(key.name or ""), when(key.last_used_at), state)
    console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="The key's id (see remem keys list).")],
    db: DbOpt = None, as_json: JsonOpt = False,
) -> None:
    """Revoke an API key for good: requests with it are refused from now on.

    Example: remem keys revoke k_01a22ccc172e0e5fcf46de
    """
    with open_memory(db) as memory:
        key = memory.keys.revoke(key_id)
    if as_json:
        print_json(key.model_dump(mode="json"))
    else:
        typer.echo(f"revoked {key.id}")
