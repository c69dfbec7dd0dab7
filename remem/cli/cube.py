"""``remem cube ...`` (pack, verify, inspect, install, uninstall, list) and ``remem keys``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from ..config import Config, cube_registry_path, signing_key_path
from ..errors import RememError
from .app import (
    CONTEXT,
    AgentOpt,
    DbOpt,
    JsonOpt,
    OrgOpt,
    ProjectOpt,
    UserOpt,
    app,
    boundary,
    open_memory,
    owner,
)
from .output import print_json
from .serve import keys_app  # `remem keys`: the service's API keys, and the signing key

cube_app = typer.Typer(help="MemCubes: signed packages of memories to share and install.",
                       context_settings=CONTEXT, no_args_is_help=True)
app.add_typer(cube_app, name="cube")

FileArg = Annotated[str, typer.Argument(metavar="FILE|NAME", help="A cube file, or the name of a "
                                        "cube in the registry (its newest version).")]


@keys_app.command("signing")
def keys_signing(as_json: JsonOpt = False) -> None:
    """Create the signing key if there is none, and show where it is and its fingerprint.

    The private key stays in its file (mode 600, in $REMEM_HOME/keys unless
    REMEM_SIGNING_KEY names another); cubes carry only the public key.

    Example: remem keys signing
    """
    from ..cube import load_or_create

    with boundary():
        key = load_or_create(signing_key_path(Config.from_env()))
    info = {"path": str(key.path), "algorithm": "Ed25519", "fingerprint": key.fingerprint,
            "public_key": key.public_b64, "created": key.created}
    if as_json:
        print_json(info)
        return
    typer.echo(f"{'created' if key.created else 'signing key'} {key.path}")
    typer.echo(f"fingerprint {key.fingerprint}  (Ed25519, public key {key.public_b64})")


def _default_name(out: Path | None, project: str | None, user: str | None) -> str:
    raw = (out.stem if out is not None else None) or project or user or "memories"
    name = re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._") or "memories"
    return name[:64]


@cube_app.command("pack")
def pack_cmd(
    out: Annotated[Path | None, typer.Option("--out", "-o", dir_okay=False, help="The cube file "
                   "to write (default: NAME-VERSION.cube in the registry folder).")] = None,
    name: Annotated[str | None, typer.Option(help="The cube's name (default: from --out, the "
                    "project or the user).")] = None,
    version: Annotated[str, typer.Option(help="The cube's version.")] = "1.0.0",
    description: Annotated[str, typer.Option(help="What the cube holds.")] = "",
    license: Annotated[str, typer.Option("--license", help="The licence the memories are "
                       "shared under (an SPDX id).")] = "CC-BY-4.0",
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only memories of this kind; "
                    "repeatable.")] = None,
    episodes: Annotated[bool, typer.Option("--episodes", help="Pack every episode of the scope, "
                        "not only those the memories came from.")] = False,
    signer_name: Annotated[str | None, typer.Option(help="A name for the signer, shown with its "
                           "fingerprint.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Pack the scope's active memories, their versions, edges and sources into a signed cube.

    Example: remem cube pack --user alice --project web --out team.cube
    """
    cube_name = name or _default_name(out, project, user)
    with open_memory(db) as m:
        path, manifest = m.pack_cube(out, name=cube_name, version=version, description=description,
                                     license=license, kinds=kind, include_episodes=episodes,
                                     signer_name=signer_name, **owner(org, user, agent, project))
    if as_json:
        print_json({"path": str(path), **manifest.model_dump(mode="json")})
        return
    c = manifest.counts
    typer.echo(f"packed {manifest.name} {manifest.version}: {c['memories']} memories, "
               f"{c['episodes']} episodes, {c['edges']} edges, {c['versions']} versions -> {path}")
    typer.echo(f"signed by {manifest.signer.fingerprint}")


@cube_app.command("verify")
def verify_cmd(source: FileArg, as_json: JsonOpt = False) -> None:
    """Check a cube's signature and checksums; exit 1 when anything does not match.

    Example: remem cube verify team.cube
    """
    from ..cube import read_cube, resolve, verify

    with boundary():
        path = resolve(source, cube_registry_path(Config.from_env()))
        cube = read_cube(path)
        verify(cube)
    m = cube.manifest
    if as_json:
        print_json({"path": str(path), "verified": True, "name": m.name, "version": m.version,
                    "signer": m.signer.fingerprint})
        return
    typer.echo(f"ok: {m.name} {m.version}, signed by {m.signer.fingerprint}"
               + (f" ({m.signer.name})" if m.signer.name else "") + ", every checksum matches")


@cube_app.command("inspect")
def inspect_cmd(source: FileArg, as_json: JsonOpt = False) -> None:
    """Show a cube's manifest, the kinds it holds, and whether it verifies.

    Example: remem cube inspect team.cube
    """
    from ..cube import describe, read_cube, resolve, verify

    with boundary():
        cube = read_cube(resolve(source, cube_registry_path(Config.from_env())))
    try:
        verify(cube)
        info = describe(cube, verified=True)
    except RememError as exc:
        info = describe(cube, verified=False, problem=str(exc))
    if as_json:
        print_json(info)
        return
    m = cube.manifest
    typer.echo(f"{m.name} {m.version}  licence {m.license}  created {m.created_at} by {m.created_by}")
    if m.description:
        typer.echo(f"  {m.description}")
    typer.echo(f"  embedder {m.embedder_name} ({m.embedding_dim} dimensions)")
    typer.echo("  " + ", ".join(f"{v} {k}" for k, v in m.counts.items()))
    typer.echo("  kinds: " + ", ".join(f"{n} {k}" for k, n in sorted(info["kinds"].items())))  # type: ignore[attr-defined]
    typer.echo(f"  signer {m.signer.fingerprint}" + (f" ({m.signer.name})" if m.signer.name else ""))
    typer.echo("  verified: yes" if info["verified"] else f"  verified: NO: {info['problem']}")


@cube_app.command("install")
def install_cmd(
    source: FileArg,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Verify a cube and install its memories into the scope, marked with their origin.

    Nothing is written unless every check passes; all of it is written in one transaction.

    Example: remem cube install team.cube --user bob
    """
    with open_memory(db, create=True) as m:
        done = m.install_cube(source, **owner(org, user, agent, project))
        m.flush()
    if as_json:
        print_json({"name": done.name, "version": done.version, "signer": done.signer,
                    "install_id": done.install_id, "memories": done.memory_ids,
                    "episodes": done.episode_ids, "held": done.held})
        return
    typer.echo(f"installed {done.name} {done.version} (signed by {done.signer}): "
               f"{len(done.memory_ids)} memories, {len(done.episode_ids)} episodes"
               + (f"; {len(done.held)} held for review (`remem held`)" if done.held else ""))


@cube_app.command("uninstall")
def uninstall_cmd(
    name: Annotated[str, typer.Argument(help="The name of an installed cube.")],
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Remove exactly the memories a cube installed in the scope.

    Example: remem cube uninstall team --user bob
    """
    with open_memory(db) as m:
        removed = m.uninstall_cube(name, **owner(org, user, agent, project))
    if as_json:
        print_json({"name": name, "removed": removed})
        return
    typer.echo(f"uninstalled {name}: removed {len(removed)} memories and episodes")


@cube_app.command("list")
def list_cmd(
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """The cubes in the registry folder; with a scope option, also those installed there.

    Example: remem cube list ; remem cube list --user bob
    """
    from ..cube import entries

    folder = cube_registry_path(Config.from_env())
    with boundary():
        found = entries(folder)
    installed = {}
    if any(v is not None for v in (org, user, agent, project)):
        with open_memory(db) as m:
            installed = m.installed_cubes(**owner(org, user, agent, project))
    rows = [{"path": str(e.path), "name": e.manifest.name if e.manifest else None,
             "version": e.manifest.version if e.manifest else None,
             "signer": e.manifest.signer.fingerprint if e.manifest else None,
             "verified": e.verified, "problem": e.problem} for e in found]
    if as_json:
        print_json({"registry": str(folder), "cubes": rows, "installed": installed})
        return
    typer.echo(f"registry {folder}: {len(rows)} cube{'s' if len(rows) != 1 else ''}")
    for r in rows:
        state = "ok" if r["verified"] else f"NOT VERIFIED: {r['problem']}"
        typer.echo(f"  {r['name'] or '?'} {r['version'] or ''}  {r['signer'] or ''}  {state}  {r['path']}")
    if installed:
        typer.echo("installed here:")
        for cube_name, info in installed.items():
            typer.echo(f"  {cube_name} {info['version']}  signed by {info['signer']}  "
                       f"{info['memories']} memories, {info['episodes']} episodes")
