"""``remem audit``: who changed or read what through the services, when, with which key."""

from __future__ import annotations

from typing import Annotated

import typer
from rich import box
from rich.table import Table

from ..model import AuditEntry
from .app import DbOpt, JsonOpt, OrgOpt, UserOpt, app, open_memory
from .output import err_console, out_console, print_json, when


def _render(entries: list[AuditEntry]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    for name in ("when", "door", "who", "key", "action", "target", "status"):
        table.add_column(name, no_wrap=name in ("when", "door", "key", "status"))
    for e in entries:
        table.add_row(when(e.at), e.door, e.actor or "", e.key_id or "", e.action, e.target or "",
                      "" if e.status is None else str(e.status))
    return table


@app.command("audit")
def audit_command(
    door: Annotated[str | None, typer.Option(
        help="Only this door: rest, mcp, cli, or retention (what the policy did).")] = None,
    actor: Annotated[str | None, typer.Option(help="Only what this user or account did.")] = None,
    key: Annotated[str | None, typer.Option(help="Only what this API key id did (k_...).")] = None,
    action: Annotated[str | None, typer.Option(
        help="Only actions starting so: POST, 'DELETE /v1/memories', memory_remember, "
        "'remem purge'.")] = None,
    target: Annotated[str | None, typer.Option(help="Only what named this memory, job or key id.")] = None,
    since: Annotated[str | None, typer.Option(help="Only since this time (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Only before this time (ISO 8601).")] = None,
    limit: Annotated[int, typer.Option(help="How many entries, newest first.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="The cursor printed after the previous page.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show the audit log: every request to the REST service, every MCP tool call and every
    CLI command that changed the store, with who, which key, what and when; of the org
    (default: the default org), or of one user's data with --user.

    Example: remem audit --door rest --action DELETE --since 2026-12-01
    """
    with open_memory(db) as m:
        page = m.audit(org_id=org, user_id=user, door=door, actor=actor, key_id=key, action=action,
                       target=target, since=since, until=until, limit=limit, cursor=cursor)
    if as_json:
        print_json({"entries": [e.model_dump(mode="json") for e in page],
                    "next_cursor": page.next_cursor})
        return
    if not page:
        err_console().print("nothing was recorded yet", style="yellow")
        return
    out_console().print(_render(list(page)))
    if page.next_cursor:
        err_console().print(f"more: --cursor {page.next_cursor}", style="dim")
