"""The ``remem`` command line: thin commands over :class:`remem.Memory`.

``app`` is the Typer application; ``main()`` runs it (the ``remem`` entry point).
"""

from __future__ import annotations

from . import (  # noqa: F401  (they register the commands)
    agents,
    bench,
    bench_activation,  # noqa: F401
    bench_extract,  # noqa: F401
    commands,
    demo,
    memory_agent,
    serve,
    transfer,
)
from .app import app

__all__ = ["app", "main"]


def main() -> None:
    """Run the ``remem`` command line."""
    app(prog_name="remem")
