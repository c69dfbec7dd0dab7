"""The Typer application objects and the options the commands share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, TypedDict, cast

import pydantic
import typer
from rich.markup import escape

from ..config import Config
from ..errors import RememError
from ..memory import Memory
from .output import err_console

__all__ = [
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
    "open_memory",
    "owner",
    "scope",
]

CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="remem",
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

# --- shared options -------------------------------------------------------------------

DbOpt = Annotated[
    str | None,
    typer.Option("--db", metavar="PATH|URL",
                 help="Store: a file, sqlite:///file.db or postgresql://user@host/db (default: "
                      "$REMEM_STORE_URL, else $REMEM_HOME/remem.db, i.e. ~/.remem/remem.db)."),
]
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

def fail(message: str) -> NoReturn:
    """Print ``Error: message`` as one line on stderr and exit with code 1."""
    err_console().print(f"[bold red]Error:[/] {_escape(message)}", soft_wrap=True, highlight=False)
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
        fail(str(exc))
    except pydantic.ValidationError as exc:  # a bad REMEM_* setting reaches Config as this
        fail(_first_problem(exc))
    except BrokenPipeError:
        raise  # click ends quietly when the reader of stdout goes away
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")


@contextmanager
def open_memory(db: str | Path | None, config: Config | None = None) -> Iterator[Memory]:
    """A Memory on ``db`` (or the default file) inside the error boundary, closed after."""
    with boundary():
        memory = Memory(db, config=config)
        try:
            yield memory
        finally:
            memory.close()
