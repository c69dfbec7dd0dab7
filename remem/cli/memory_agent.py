"""Commands of the memory agent and its jobs: remember, feedback, review, tree, skills,
context, decay, jobs, worker."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..config import Config
from ..model import JobInfo, TopicNode
from .app import (
    AgentOpt,
    DbOpt,
    JsonOpt,
    OrgOpt,
    ProjectOpt,
    SessionOpt,
    UserOpt,
    app,
    open_memory,
    owner,
    scope,
)
from .commands import IdArg
from .output import (
    WIDE,
    err_console,
    out_console,
    print_json,
    records,
    render_item,
    render_items,
    trim,
)

jobs_app = typer.Typer(help="Background jobs: list, retry, cancel.", no_args_is_help=False,
                       context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(jobs_app, name="jobs")


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="What to remember, in one sentence.")],
    kind: Annotated[str, typer.Option(help="preference, profile, project, convention, pitfall, "
                                      "procedure, decision, fact, event...")] = "fact",
    subject: Annotated[str | None, typer.Option(help="Who or what it is about.")] = None,
    pin: Annotated[bool, typer.Option(help="Never let it decay.")] = False,
    writer: Annotated[str | None, typer.Option(
        "--as", help="The user who writes, into a scope shared with them for writing (team "
        "memory); recorded on the memory.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Propose a memory; the memory agent merges it with what is known.

    Example: remem remember "Deploys go through make ship" --kind convention --project web ;
    remem remember "Staging is at db.stg" --user team-web --as bob
    """
    with open_memory(db, create=True) as m:
        item = m.remember(text, kind=kind, subject=subject, pinned=pin, writer=writer,
                          door="cli", **scope(org, user, agent, project, session))
    if as_json:
        print_json(item.model_dump(mode="json"))
    else:
        render_item(item, out_console())


@app.command()
def feedback(
    memory_id: IdArg,
    verdict: Annotated[str, typer.Argument(help="helpful, wrong or stale.")],
    note: Annotated[str | None, typer.Option(help="Why, kept in the memory's history.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Say how a memory did: helpful strengthens it, wrong forgets it, stale archives it.

    Example: remem feedback m_01a2... wrong --note "we moved to pnpm"
    """
    with open_memory(db) as m:
        item = m.feedback(memory_id, verdict, note, **scope(org, user, agent, project))
    if as_json:
        print_json(item.model_dump(mode="json"))
    else:
        render_item(item, out_console())


@app.command()
def review(
    memory_id: Annotated[str | None, typer.Argument(help="The held item to decide on.")] = None,
    approve: Annotated[bool | None, typer.Option(
        "--approve/--reject", help="Make it active, or forget it.")] = None,
    note: Annotated[str | None, typer.Option(help="Why, kept in its history.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """List what is held for review (text that reads as an instruction to the agent), or
    approve or reject one item.

    Example: remem review; remem review e_01a2... --reject
    """
    with open_memory(db) as m:
        if memory_id is None:
            items = m.held(**scope(org, user, agent, project))
            if as_json:
                print_json([i.model_dump(mode="json") for i in items])
            elif not items:
                out_console().print("Nothing is held for review.")
            else:
                render_items(items, out_console())
            return
        if approve is None:
            raise typer.BadParameter("say --approve or --reject", param_hint="--approve/--reject")
        item = m.review(memory_id, approve=approve, note=note, **scope(org, user, agent, project))
    if as_json:
        print_json(item.model_dump(mode="json"))
    else:
        render_item(item, out_console())


def _rich_tree(node: TopicNode, into: Tree) -> None:
    for child in node.children:
        branch = into.add(f"[bold]{child.label}[/bold] [dim]({child.size})[/dim]")
        for mem in child.memories:
            branch.add(f"[cyan]{mem.kind}[/cyan] {mem.text} [dim]{mem.id}[/dim]")
        _rich_tree(child, branch)


@app.command()
def tree(
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Print the mind map: topics, subtopics and the memories under them.

    Example: remem tree --user alice --project web
    """
    with open_memory(db) as m:
        root = m.tree(**scope(org, user, agent, project))
    if as_json:
        print_json(root.model_dump(mode="json"))
        return
    shown = Tree(f"[bold]memories[/bold] [dim]({root.size})[/dim]")
    _rich_tree(root, shown)
    out_console().print(shown)


@app.command()
def skills(
    status: Annotated[str | None, typer.Option(help="candidate or approved.")] = None,
    approve: Annotated[str | None, typer.Option(help="Approve this skill candidate (its id).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Write each approved skill to OUT/<name>/SKILL.md.", file_okay=False)] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """List skill candidates and approved skills; approve one; write SKILL.md files.

    Example: remem skills --approve m_01a2... --out .claude/skills
    """
    where = scope(org, user, agent, project)
    with open_memory(db) as m:
        if approve is not None:
            m.approve_skill(approve, **where)
        found = m.skills(status=status, **where)
    written = []
    if out is not None:
        for skill in found:
            md = skill.metadata.get("skill_md")
            if md:
                path = out / str(skill.metadata.get("name") or skill.id) / "SKILL.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(md, encoding="utf-8")
                written.append(str(path))
    if as_json:
        print_json({"skills": [s.model_dump(mode="json") for s in found], "written": written})
        return
    if not found:
        out_console().print("no skills yet: a procedure that works three times becomes a candidate")
    render_items(found, out_console())
    for path in written:
        out_console().print(f"wrote {path}")


@app.command()
def context(
    query: Annotated[str | None, typer.Argument(help="What the model is about to be asked.")] = None,
    budget: Annotated[int, typer.Option(help="Token budget of the block.")] = 1000,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Print the context block a model would get: core memories, working memory, recall.

    Example: remem context "how do we deploy?" --user alice --project web
    """
    with open_memory(db) as m:
        ctx = m.context(query=query, budget_tokens=budget, **scope(org, user, agent, project, session))
    if as_json:
        print_json(ctx.model_dump(mode="json"))
    else:
        typer.echo(ctx.text)


@app.command()
def decay(
    now: Annotated[str | None, typer.Option(help="Decay as of this time (ISO 8601).")] = None,
    db: DbOpt = None, as_json: JsonOpt = False,
) -> None:
    """Archive memories whose strength fell under the threshold (pinned ones never).

    Example: remem decay
    """
    with open_memory(db) as m:
        archived = m.decay(now=now)
    if as_json:
        print_json({"archived": archived})
    else:
        typer.echo(f"archived {len(archived)} memories")


@app.command()
def retention(
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only say what the rules would do; change nothing.")] = False,
    now: Annotated[str | None, typer.Option(
        help="Count ages from this time (ISO 8601) instead of now.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, as_json: JsonOpt = False,
) -> None:
    """Apply the retention policy now: compact old episodes (their text deleted for good,
    the memories derived from them kept), archive or purge old memories; pinned ones never.
    The rules come from REMEM_RETENTION (JSON); --org and --user confine the run.

    Example: REMEM_RETENTION='[{"items": "episodes", "older_than_days": 90, "action":
    "compact"}]' remem retention --dry-run
    """
    with open_memory(db) as m:
        rules = m.config.retention.rules
        done = m.apply_retention(now=now, dry_run=dry_run, **owner(org, user))
    if as_json:
        print_json({"rules": len(rules), **done.model_dump(mode="json")})
        return
    if not rules:
        err_console().print("no retention rules: set REMEM_RETENTION, e.g. "
                            '[{"items": "episodes", "older_than_days": 90, "action": "compact"}]',
                            style="yellow", highlight=False)
        return
    verbs = ("would compact", "would archive", "would purge") if dry_run else (
        "compacted", "archived", "purged")
    typer.echo(f"{verbs[0]} {len(done.compacted)} episodes"
               + ("" if dry_run else f" (the {len(done.noted)} memories made from them stay)"))
    typer.echo(f"{verbs[1]} {len(done.archived)} memories")
    typer.echo(f"{verbs[2]} {len(done.purged)} memories")


def _render_jobs(jobs: list[JobInfo]) -> None:
    console = out_console()
    if console.width < WIDE:  # records: a narrow table cuts ids, times and errors short
        rows = []
        for j in jobs:
            head = Text(j.id, style="bold")
            head.append(f"  {j.kind} · {j.state} · attempt {j.attempts}/{j.max_attempts} · "
                        f"{j.updated_at:%Y-%m-%d %H:%M:%S}")
            detail = j.last_error or ("" if j.result is None else str(j.result))
            rows.append((head, [Text(trim(detail, 400))] if detail else []))
        records(rows, console)
        return
    table = Table(show_lines=False)
    table.add_column("id", no_wrap=True)
    for col in ("kind", "state", "attempts", "updated", "error / result"):
        table.add_column(col)
    for j in jobs:
        detail = j.last_error or ("" if j.result is None else str(j.result))
        table.add_row(j.id, j.kind, j.state, f"{j.attempts}/{j.max_attempts}",
                      f"{j.updated_at:%Y-%m-%d %H:%M:%S}", detail[:80])
    console.print(table)


@jobs_app.callback(invoke_without_command=True)
def jobs(
    ctx: typer.Context,
    state: Annotated[str | None, typer.Option(help="queued, running, done, failed or cancelled.")] = None,
    kind: Annotated[str | None, typer.Option(help="embed, extract, prefetch, decay...")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many jobs to list.")] = 50,
    db: DbOpt = None, as_json: JsonOpt = False,
) -> None:
    """List background jobs, newest first (with `retry ID` / `cancel ID`).

    Example: remem jobs --state failed
    """
    if ctx.invoked_subcommand is not None:
        return
    with open_memory(db) as m:
        found = m.jobs(state=state, kind=kind, limit=limit)
    if as_json:
        print_json([j.model_dump(mode="json") for j in found])
    else:
        _render_jobs(found)


def _change_job(action: str, job_id: str, db: Path | None, as_json: bool) -> None:
    with open_memory(db) as m:
        job = m.retry_job(job_id) if action == "retry" else m.cancel_job(job_id)
    print_json(job.model_dump(mode="json")) if as_json else _render_jobs([job])


@jobs_app.command()
def retry(job_id: Annotated[str, typer.Argument(help="A failed or cancelled job's id.")],
          db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Queue a failed job again."""
    _change_job("retry", job_id, db, as_json)


@jobs_app.command()
def cancel(job_id: Annotated[str, typer.Argument(help="A queued or failed job's id.")],
           db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Cancel a queued job."""
    _change_job("cancel", job_id, db, as_json)


@app.command()
def worker(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Run background jobs in this process until interrupted (for servers: start one or
    more beside the processes that add; they share the store).

    Example: remem worker --db /srv/remem.db
    """
    with open_memory(db, Config.from_env(run_worker=False), create=True) as m:
        def stop(*_: object) -> None:
            # the job at hand finishes (an interrupt inside a database call would fail it);
            # a second Ctrl-C interrupts at once
            signal.signal(signal.SIGINT, signal.default_int_handler)
            m.stop_jobs()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if as_json:
            print_json({"worker": str(m.path)})
        else:
            out_console().print(f"remem worker on {m.path}; Ctrl-C stops it")
        try:
            m.run_jobs()
        except KeyboardInterrupt:
            pass
