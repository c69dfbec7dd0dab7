"""``remem tiers ...``: parametric memory, the LoRA adapters trained from memories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ..errors import NotFoundError
from .app import CONTEXT, AgentOpt, DbOpt, JsonOpt, OrgOpt, ProjectOpt, UserOpt, app, fail, open_memory, owner
from .output import out_console, print_json

tiers_app = typer.Typer(help="Memory tiers on a local model: LoRA adapters trained from memories.",
                        context_settings=CONTEXT, no_args_is_help=True)
app.add_typer(tiers_app, name="tiers")


def _options(raw: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in raw or []:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise typer.BadParameter(f"{item!r}: write NAME=NUMBER, e.g. rank=8", param_hint="--set")
    return {k: int(v) if v.is_integer() and k != "lr" else v for k, v in out.items()}


def _scope_label(scope: dict[str, Any]) -> str:
    parts = [f"{k.removesuffix('_id')}={v}" for k, v in scope.items() if v is not None and k != "org_id"]
    org = scope.get("org_id")
    return " ".join(([f"org={org}"] if org not in (None, "default") else []) + parts) or "(org)"


@tiers_app.command("train")
def train(
    model: Annotated[Path | None, typer.Option(
        "--model", exists=True, file_okay=False,
        help="The local model folder to train on (default: $REMEM_LORA_MODEL).")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="NAME=VALUE",
        help="A training setting (rank, alpha, epochs, phrasings, lr, batch_size, seed); "
             "repeatable.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list the memories that "
                                          "would go into the adapter.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Train (or retrain) the LoRA adapter of a scope from its memories.

    The memories that go in are the scope's canonical, often used, stable ones (see
    --dry-run); the adapter is stored beside the store (safetensors and a manifest).

    Needs pip install "remem\\[parametric]".

    Example: remem tiers train --user alice --project web --model ~/models/qwen2.5-0.5b
    """
    options = _options(set_)
    with open_memory(db) as m:
        scope = owner(org, user, agent, project)
        if dry_run:
            chosen = m.adapter_memories(**scope)
            if as_json:
                print_json([{"id": i.id, "version": i.version, "kind": i.kind, "text": i.text}
                            for i in chosen])
            else:
                typer.echo("\n".join(f"{i.id} v{i.version} [{i.kind}] {i.text}" for i in chosen)
                           or "no memory qualifies yet")
            return
        if model is None and m.config.parametric.base_model is None:
            fail("which model?", hint="give its local folder with --model DIR, or set REMEM_LORA_MODEL")
        info = m.train_adapter(model, options=options, **scope)
    if as_json:
        print_json(info.model_dump(mode="json"))
        return
    typer.echo(f"trained {info.path}: {len(info.memory_ids)} memories, rank {info.rank}, "
               f"{info.metrics.get('train_seconds', 0):.1f} s, "
               f"{info.metrics.get('adapter_bytes', 0) / 1e6:.2f} MB, "
               f"final loss {info.metrics.get('final_loss')}")


@tiers_app.command("list")
def list_(
    show_memories: Annotated[bool, typer.Option("--memories", help="List the memories each holds.")] = False,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, as_json: JsonOpt = False,
) -> None:
    """Show the adapters of the store, what they hold, and whether they are stale.

    Stale: a memory an adapter holds was superseded, edited, forgotten or purged since
    it was trained; retrain it with remem tiers train.

    Example: remem tiers list --user alice --memories
    """
    with open_memory(db) as m:
        states = m.adapters(**owner(org, user, agent, project))
        texts = {mid: _text(m, mid, s.info.scope) for s in states for mid in s.info.memory_ids
                 } if show_memories else {}
    if as_json:
        print_json([{**s.info.model_dump(mode="json"), "stale": s.stale} for s in states])
        return
    if not states:
        typer.echo("no adapters")
        return
    console = out_console()
    table = Table(box=box.SIMPLE_HEAD)
    for title in ("scope", "memories", "state", "trained", "base model", "size", "path"):
        table.add_column(title)
    for s in states:
        info = s.info
        state = "current" if not s.stale else "stale: " + ", ".join(
            f"{mid} {why}" for mid, why in sorted(s.stale.items()))
        table.add_row(escape(_scope_label(info.scope)), str(len(info.memory_ids)), escape(state),
                      info.created_at.strftime("%Y-%m-%d %H:%M"), escape(Path(info.base_model).name),
                      f"{info.metrics.get('adapter_bytes', 0) / 1e6:.2f} MB", escape(info.path))
    console.print(table)
    if show_memories:
        for s in states:
            console.print(f"{escape(_scope_label(s.info.scope))}:", highlight=False)
            for mid in s.info.memory_ids:
                mark = f" ({s.stale[mid]})" if mid in s.stale else ""
                console.print(f"  {mid} v{s.info.memory_versions.get(mid)}{mark} "
                              f"{escape(texts.get(mid, ''))}", highlight=False)


def _text(m: Any, memory_id: str, scope: dict[str, Any]) -> str:
    try:
        return str(m.get(memory_id, **{k: v for k, v in scope.items() if v is not None}).text)
    except NotFoundError:
        return "(purged)"


def adapter_note(states: list[Any], memory_id: str) -> str | None:
    """What to tell someone who forgot or purged a memory that adapters hold."""
    if not states:
        return None
    where = "; ".join(_scope_label(s.info.scope) for s in states)
    return (f"note: {memory_id} is held by {len(states)} adapter(s) ({where}), now stale; "
            f"retrain with `remem tiers train`")
