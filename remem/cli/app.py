"""The Typer application objects and the options the commands share."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypedDict, cast

import pydantic
import typer
from rich.markup import escape
from typer.core import TyperGroup

try:  # Typer carries its own copy of click from 0.25 on
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover
    from click import get_current_context

from ..config import Config
from ..errors import RememError
from ..memory import Memory
from .output import err_console

__all__ = [
    "DEFAULT_ORG",
    "AgentOpt",
    "DbOpt",
    "JsonOpt",
    "OrgOpt",
    "Owner",
    "ProjectOpt",
    "SessionOpt",
    "ScopeArgs",
    "UserOpt",
    "app",
    "bench_app",
    "boundary",
    "fail",
    "json_requested",
    "open_memory",
    "owner",
    "scope",
]

CONTEXT = {"help_option_names": ["-h", "--help"]}


def _wants_json(args: Sequence[str]) -> bool:
    """Whether ``--json`` is among the options (not after a ``--``)."""
    args = list(args)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _json_error(kind: str, message: str, hint: str | None) -> None:
    """``{"error": {"type", "message", "hint"}}`` as one line on stderr."""
    error = {"type": kind, "message": " ".join(message.split()), "hint": hint}
    typer.echo(json.dumps({"error": error}, ensure_ascii=False), err=True)


class RememGroup(TyperGroup):
    """The ``remem`` group: under ``--json``, errors of the command line itself (a bad
    option, a missing argument) are JSON on stderr too, like the commands' own."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not _wants_json(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode,
                                windows_expand_args, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except typer.TyperException as exc:  # click's own errors: a bad option, a bad value
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "remem COMMAND"
            _json_error(type(exc).__name__, exc.format_message(),
                        f"see `{where} --help` for the options")
            code = exc.exit_code
        except typer.Abort:
            _json_error("Aborted", "aborted", None)
            code = 1
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="remem",
    cls=RememGroup,
    help="Memory for AI agents: one SQLite file, a bundled embedder, hybrid search.\n\n"
    "Example: remem add \"We deploy with make ship\" --user alice && "
    "remem search \"how do we deploy?\" --user alice",
    context_settings=CONTEXT,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

bench_app = typer.Typer(
    help="Benchmarks: answer quality on LoCoMo, speed at scale.",
    context_settings=CONTEXT,
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"remem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print remem's version and exit.")] = False,
) -> None:
    """Memory for AI agents: one SQLite file, a bundled embedder, hybrid search."""

# --- shared options -------------------------------------------------------------------

DbOpt = Annotated[
    str | None,
    typer.Option("--db", metavar="PATH|URL",
                 help="Store: a file, sqlite:///file.db or postgresql://user@host/db (default: "
                      "$REMEM_STORE_URL, else $REMEM_HOME/remem.db, i.e. ~/.remem/remem.db)."),
]
#: The org of everything stored without an org id: single-user mode, the library's default.
DEFAULT_ORG = "default"
OrgOpt = Annotated[str | None, typer.Option("--org", help="Organisation id (default: 'default').")]
UserOpt = Annotated[str | None, typer.Option("--user", help="User id the memories belong to.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id.")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Session id.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


class Owner(TypedDict, total=False):
    """Scope keywords of the calls on one memory (get, history, forget, purge)."""

    org_id: str
    user_id: str
    agent_id: str
    project: str


class ScopeArgs(Owner, total=False):
    """Scope keywords of the calls on many memories (add, search, list, export)."""

    session_id: str


def _given(**values: str | None) -> dict[str, str]:
    return {key: value for key, value in values.items() if value is not None}


def owner(org: str | None = None, user: str | None = None, agent: str | None = None,
          project: str | None = None) -> Owner:
    """Keyword arguments for a call on one memory, from the scope options that were given."""
    return cast(Owner, _given(org_id=org, user_id=user, agent_id=agent, project=project))


def scope(org: str | None = None, user: str | None = None, agent: str | None = None,
          project: str | None = None, session: str | None = None) -> ScopeArgs:
    """Keyword arguments for a call on many memories, from the scope options given."""
    return cast(ScopeArgs, _given(org_id=org, user_id=user, agent_id=agent, project=project,
                                  session_id=session))


# --- the error boundary ---------------------------------------------------------------

def json_requested() -> bool:
    """Whether the running command was given ``--json``."""
    ctx = get_current_context(silent=True)
    while ctx is not None:
        if ctx.params.get("as_json"):
            return True
        ctx = ctx.parent
    return False


def fail(message: str, *, hint: str | None = None, kind: str = "UsageError") -> NoReturn:
    """Print the error on stderr and exit with code 1: ``Error: message; hint`` on one
    line, or under ``--json`` ``{"error": {"type": kind, "message", "hint"}}``."""
    if json_requested():
        _json_error(kind, message, hint)
    else:
        text = f"{message}; {hint}" if hint else message
        err_console().print(f"[bold red]Error:[/] {_escape(text)}", soft_wrap=True,
                            highlight=False)
    raise typer.Exit(code=1)


def _escape(text: str) -> str:
    return escape(" ".join(text.split()))


def _first_problem(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    problem = error["msg"].removeprefix("Value error, ")
    return f"{exc.title}: {where}: {problem}" if where else f"{exc.title}: {problem}"


@contextmanager
def boundary() -> Iterator[None]:
    """Turn library errors and file errors into one ``Error:`` line and exit code 1."""
    try:
        yield
    except RememError as exc:
        fail(str(exc), hint=getattr(exc, "hint", None), kind=type(exc).__name__)
    except pydantic.ValidationError as exc:  # a bad REMEM_* setting reaches Config as this
        fail(_first_problem(exc), kind="ConfigError")
    except BrokenPipeError:
        raise  # click ends quietly when the reader of stdout goes away
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}", kind=type(exc).__name__)


@contextmanager
def open_memory(db: str | Path | None, config: Config | None = None, *,
                create: bool = False) -> Iterator[Memory]:
    """A Memory on ``db`` (or the default file) inside the error boundary, closed after.

    Only commands that write pass ``create=True``: a command that reads a store that
    does not exist fails instead of leaving an empty one (and its folders) behind.
    """
    with boundary():
        memory = Memory(db, config=config, create=create)
        before = memory.change_token()
        status = 1
        try:
            yield memory
            status = 0
        finally:
            try:
                if memory.change_token() != before:  # a command that wrote
                    _record_command(memory, status)
            finally:
                memory.close()


def _record_command(memory: Memory, status: int) -> None:
    """Put the command that changed the store in the audit log: its name, the id it was
    given, the scope options, and the account that ran it (never the texts it was given)."""
    import getpass

    ctx = get_current_context(silent=True)
    params = dict(ctx.params) if ctx is not None else {}
    action = ctx.command_path if ctx is not None else "remem"
    target = next((str(v) for k, v in params.items() if k.endswith("id") and isinstance(v, str)),
                  None)
    try:
        actor = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        actor = None
    try:
        memory.record_access(door="cli", action=action, target=target, status=status,
                             org_id=params.get("org") if isinstance(params.get("org"), str) else None,
                             user_id=params.get("user") if isinstance(params.get("user"), str) else None,
                             actor=actor)
    except Exception as exc:  # what the command did stands; say that it was not recorded
        err_console().print(f"warning: not recorded in the audit log: {exc}", highlight=False)
