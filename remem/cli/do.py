"""Requests in plain language, reminders and team plans: ``remem do``, ``remem reminders``,
``remem dismiss``, ``remem team-plan``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from .app import AgentOpt, DbOpt, JsonOpt, OrgOpt, ProjectOpt, UserOpt, app, open_memory, owner
from .commands import IdArg
from .output import out_console, print_json, render_items


def _fields(step: Any) -> str:
    shown = step.model_dump(exclude_none=True, exclude={"operator"})
    return ", ".join(f"{k}={v!r}" for k, v in shown.items())


@app.command("do")
def do(
    text: Annotated[str, typer.Argument(help="The request, in English or Chinese.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the plan; change nothing.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Plan a request as memory operations (remember, update, forget, search, summarise,
    link, remind, pin, share) and run them in one transaction.

    Example: remem do "Record yesterday's meeting with Li Lei and remind me the day after
    tomorrow to write the technical report" --user alice --dry-run
    """
    with open_memory(db, create=not dry_run) as m:
        result = m.do(text, dry_run=dry_run, door="cli", **owner(org, user, agent, project))
    if as_json:
        print_json(result.model_dump(mode="json", exclude_none=True))
        return
    table = Table(title=f"plan ({result.planner}{', dry run' if dry_run else ''})")
    for column in ("#", "operator", "fields", "did"):
        table.add_column(column)
    for n, step in enumerate(result.steps):
        did = result.results[n].did if n < len(result.results) else ""
        table.add_row(str(n), step.operator, escape(_fields(step)), escape(did))
    out_console().print(table)


@app.command("reminders")
def reminders(
    due: Annotated[bool, typer.Option("--due", help="Only those due now.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """The open reminders, soonest first.

    Example: remem reminders --user alice --due
    """
    with open_memory(db) as m:
        found = m.reminders(due=due, **owner(org, user, agent, project))
    if as_json:
        print_json([r.model_dump(mode="json") for r in found])
    else:
        render_items(found, out_console())


@app.command("dismiss")
def dismiss(
    memory_id: IdArg,
    done: Annotated[bool, typer.Option("--done", help="Mark it done instead of dismissed.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Dismiss a reminder (or, with --done, mark it done): it leaves the context block.

    Example: remem dismiss m_01a2... --user alice --done
    """
    with open_memory(db) as m:
        item = m.dismiss_reminder(memory_id, done=done, **owner(org, user, agent, project))
    if as_json:
        print_json(item.model_dump(mode="json"))
    else:
        out_console().print(f"{item.id}: {item.metadata['reminder']['state']}")


@app.command("team-plan")
def team_plan(
    request: Annotated[str, typer.Argument(help="The requirement to split among the team.")],
    leader: Annotated[str, typer.Option("--leader", help="The leader's agent id.")] = "leader",
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The team skills the leader learned that apply to a requirement, with the split
    into roles, their order, dependencies and checks.

    Example: remem team-plan "a login page with its API" --user alice --project shop
    """
    with open_memory(db) as m:
        result = m.plan(request, agent_id=leader, org_id=org, user_id=user, project=project)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    console = out_console()
    if not result.skills:
        console.print("no team skill applies")
    for skill in result.skills:
        console.print(f"[bold]{escape(skill.when)}[/bold] ({skill.memory_id} v{skill.version}, "
                      f"score {skill.score})")
        for role in sorted(skill.roles, key=lambda r: r.step):
            after = f" after {', '.join(role.after)}" if role.after else ""
            checks = f"; checks: {', '.join(role.checks)}" if role.checks else ""
            console.print(f"  {role.step}. {escape(role.agent_id)}{escape(after)}{escape(checks)}")
