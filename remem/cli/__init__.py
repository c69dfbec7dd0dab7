"""The ``remem`` command line: thin commands over :class:`remem.Memory`.

``app`` is the Typer application; ``main()`` runs it (the ``remem`` entry point).
``remem hook ...`` takes a short path that loads none of it: agent hooks run on every
tool call and must start in milliseconds (:mod:`remem.daemon.client`).
"""

from __future__ import annotations

import sys

# not ``typing``: ``remem hook`` comes through here on every tool call, and typing (with
# the re it loads) costs it milliseconds
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["app", "main"]


def _app() -> Any:
    from . import (  # noqa: F401  (they register the commands)
        agents,
        audit,
        bench,
        bench_activation,
        bench_extract,
        bench_orchestrate,
        bench_parametric,
        commands,
        cube,
        demo,
        do,
        doctor,
        log,
        memory_agent,
        migrate,
        pg,
        serve,
        share,
        tiers,
        transfer,
        ui,
    )
    from .app import app

    globals()["app"] = app  # the Typer app, not the submodule of the same name
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(f"module 'remem.cli' has no attribute {name!r}")


def main() -> None:
    """Run the ``remem`` command line (``remem hook ...`` ends the process when it is done)."""
    args = sys.argv[1:]
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        import os

        from ..daemon.client import main as hook_main

        code = hook_main(args[1:])
        sys.stdout.flush()
        sys.stderr.flush()
        # everything the hook wrote is flushed or fsynced: tearing down the interpreter
        # would only cost each hook a few more milliseconds
        os._exit(code)
    _app()(prog_name="remem")
