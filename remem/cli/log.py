"""``remem log``: the injection log (what each door gave a model) and its heed rates."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..model import HeedRate, Injection
from .app import AgentOpt, DbOpt, JsonOpt, OrgOpt, ProjectOpt, SessionOpt, UserOpt, app, open_memory, scope
from .output import err_console, out_console, print_json, trim, when


def _render(injections: list[Injection]) -> Table:
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("when", no_wrap=True)
    table.add_column("door", no_wrap=True)
    table.add_column("session", no_wrap=True)
    table.add_column("query", ratio=1)
    table.add_column("given", ratio=1)
    table.add_column("tokens", justify="right")
    for one in injections:
        given = Text()
        for item in one.items:
            if given:
                given.append("\n")
            given.append(f"{item.rank}. [{item.kind}] {item.memory_id}")
            if item.used:
                given.append(" used", style="green")
        table.add_row(when(one.at), one.door, one.session_id or "", Text(trim(one.query or "", 80)),
                      given, str(one.tokens))
    return table


def _rate(used: int, injected: int) -> str:
    return f"{used / injected:.0%} ({used}/{injected})" if injected else "-"


def _render_stats(rates: list[HeedRate]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="heed rate: share of injected memories later used")
    table.add_column("door", no_wrap=True)
    table.add_column("kind")
    table.add_column("heed rate", justify="right")
    per_door: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rates:
        table.add_row(r.door, r.kind, _rate(r.used, r.injected))
        for total in (per_door[r.door], per_kind[r.kind]):
            total[0] += r.used
            total[1] += r.injected
    for door, (used, injected) in sorted(per_door.items()):
        table.add_row(Text(door, style="bold"), Text("(all kinds)", style="bold"), _rate(used, injected))
    for kind, (used, injected) in sorted(per_kind.items()):
        table.add_row(Text("(all doors)", style="bold"), Text(kind, style="bold"), _rate(used, injected))
    used = sum(r.used for r in rates)
    table.add_row(Text("(all)", style="bold"), "", _rate(used, sum(r.injected for r in rates)))
    return table


@app.command("log")
def log_command(
    stats: Annotated[bool, typer.Option(
        "--stats", help="Print the heed rates (per door and kind) instead of the entries.")] = False,
    door: Annotated[str | None, typer.Option(
        help="Only this door: hook:SessionStart, mcp:memory_recall, proxy, context...")] = None,
    since: Annotated[str | None, typer.Option(
        help="With --stats: only injections since this time (ISO 8601).")] = None,
    limit: Annotated[int, typer.Option(help="How many entries, newest first.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="The cursor printed after the previous page.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show what remem gave models (hooks, MCP, the proxy, context): when, to which session,
    for which query, which memories in which order, and whether each was used afterwards.

    Example: remem log --session 3f2a... ; remem log --stats --user alice
    """
    where = scope(org, user, agent, project, session)
    with open_memory(db) as m:
        if stats:
            rates = m.heed(since=since, **where)
            if door is not None:
                rates = [r for r in rates if r.door == door]
            if as_json:
                print_json([r.model_dump() for r in rates])
            elif not rates:
                err_console().print("nothing was injected yet", style="yellow")
            else:
                out_console().print(_render_stats(rates))
            return
        page = m.injections(door=door, limit=limit, cursor=cursor, **where)
    if as_json:
        print_json({"injections": [i.model_dump(mode="json") for i in page],
                    "next_cursor": page.next_cursor})
        return
    if not page:
        err_console().print("nothing was injected yet", style="yellow")
        return
    out_console().print(_render(list(page)))
    if page.next_cursor:
        err_console().print(f"more: --cursor {page.next_cursor}", style="dim")
