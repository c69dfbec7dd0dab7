"""``remem migrate``: copy a store to another backend (SQLite <-> PostgreSQL)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..migrate import migrate as migrate_store
from .app import JsonOpt, app, boundary
from .output import err_console, out_console, print_json


@app.command("migrate")
def migrate(
    source: Annotated[str, typer.Option("--from", metavar="PATH|URL", help="The store to copy.")],
    target: Annotated[str, typer.Option("--to", metavar="PATH|URL",
                                        help="The store to copy into (created if new).")],
    as_json: JsonOpt = False,
) -> None:
    """Copy every memory, episode, vector, job and key to another store and verify the
    copy (row counts and checksums); re-running it is safe.

    Example: remem migrate --from ~/.remem/remem.db --to postgresql://remem@db/remem
    """
    with boundary():
        report = migrate_store(source, target,
                               progress=lambda table, n: err_console().print(f"{table}: {n} rows"))
    if as_json:
        print_json({"counts": report.counts, "embedder": report.embedder})
        return
    out_console().print(f"copied and verified: {report.counts['memories']} memories and episodes, "
                        f"{report.counts['vectors']} vectors, {report.counts['jobs']} jobs, "
                        f"{report.counts['api_keys']} API keys")
