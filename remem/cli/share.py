"""``remem share grant|revoke|list``: who else may read or write a scope."""

from __future__ import annotations

from typing import Annotated

import typer

from ..model import Share
from .app import CONTEXT, DbOpt, JsonOpt, OrgOpt, ProjectOpt, UserOpt, app, fail, open_memory
from .output import print_json

share_app = typer.Typer(help="Sharing: grant another user, agent or team read or write access "
                        "to a user's (or team's) memories or one project.",
                        context_settings=CONTEXT, no_args_is_help=True)
app.add_typer(share_app, name="share")


def _line(s: Share) -> str:
    what = (f"user {s.user_id}" if s.user_id else "the org") + (f", project {s.project}" if s.project else "")
    return f"{s.id}  {what} -> {s.grantee_kind} {s.grantee}: {s.access}"


@share_app.command("grant")
def grant(
    grantee: Annotated[str, typer.Argument(help="Who gets access: a user id (or with --agent / "
                       "--team, an agent or a team id).")],
    access: Annotated[str, typer.Option(help="read, or write (read and write).")] = "read",
    to_agent: Annotated[bool, typer.Option("--agent", help="GRANTEE is an agent id.")] = False,
    to_team: Annotated[bool, typer.Option("--team", help="GRANTEE is a team: every user with a "
                       "grant on the team's own scope.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Let GRANTEE read (or write) the memories of --user (all, or of --project only).

    Granting again changes the access. Example: remem share grant bob --user alice --project web
    """
    if to_agent and to_team:
        fail("--agent and --team exclude each other")
    kind = "agent" if to_agent else "team" if to_team else "user"
    with open_memory(db, create=True) as m:
        share = m.share(grantee=grantee, grantee_kind=kind, access=access, org_id=org,
                        user_id=user, project=project)
    if as_json:
        print_json(share.model_dump(mode="json"))
        return
    typer.echo(f"granted {_line(share)}")


@share_app.command("revoke")
def revoke(
    share_id: Annotated[str, typer.Argument(help="The grant's id (see `remem share list`).")],
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, as_json: JsonOpt = False,
) -> None:
    """Revoke a grant (with --user: only one of that user's own).

    Example: remem share revoke sh_01a2... --user alice
    """
    with open_memory(db) as m:
        share = m.unshare(share_id, org_id=org, user_id=user)
    if as_json:
        print_json(share.model_dump(mode="json"))
        return
    typer.echo(f"revoked {_line(share)}")


@share_app.command("list")
def list_(
    grantee: Annotated[str | None, typer.Option("--grantee", help="Only what this user can see "
                       "through grants (their own and their teams').")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, as_json: JsonOpt = False,
) -> None:
    """Who can see what: the grants --user gave, those given to --grantee, or all of the org.

    Example: remem share list --user alice ; remem share list --grantee bob
    """
    with open_memory(db) as m:
        found = m.shares(org_id=org, user_id=user, grantee=grantee)
    if as_json:
        print_json([s.model_dump(mode="json") for s in found])
        return
    if not found:
        typer.echo("no grants")
    for share in found:
        typer.echo(_line(share))
