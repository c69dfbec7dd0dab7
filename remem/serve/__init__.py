"""The REST service of remem: the ``Memory`` API over HTTP, API keys, an event stream and
an OpenAI-compatible chat proxy that gives a model the memory of its users.

>>> from remem import Memory
>>> from remem.serve import create_app
>>> app = create_app(Memory("team.db"))   # an ASGI app; ``remem serve`` runs it with uvicorn

Importing this package needs the ``server`` extra (``pip install "remem[server]"``), except
:mod:`remem.serve.keys`, which only needs the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # keeps `remem.serve.keys` importable (by `remem keys`) without fastapi installed
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
