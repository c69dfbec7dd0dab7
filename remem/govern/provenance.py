"""Provenance: the door a memory came in through, who said it, and how far it is trusted.

Every episode records its :class:`~remem.model.Provenance` when it is written:

- ``door``: ``sdk`` (the Python API, the default), ``rest``, ``mcp``, ``hook`` (a coding
  agent's hooks), ``cli``, ``import`` (importers), ``cube`` (MemCubes), ``proxy`` (the
  chat proxy) or ``agent`` (the agent-facing layer used from Python);
- ``source``: who said it, from the turn's role: ``user`` (or a named person),
  ``assistant``, ``tool`` (every agent event, and tool output), ``system``; what comes in
  through an importer is ``import`` and what a MemCube installs ``cube``, whoever said it
  first;
- ``trust``: the source's trust level, as the screening reads it
  (:data:`remem.govern.screen.TRUST`): ``user`` for a person's words, ``agent`` for the
  assistant's, ``external`` for text from anywhere.

A derived memory inherits the provenance of the episodes it was derived from, the least
trusted of them winning, also when a later episode is merged into it (the store applies
:func:`remem.store.policy.least_trusted`): a memory that rests on a tool's output is never
trusted as the user's word, whatever else it cites.
"""

from __future__ import annotations

from ..errors import ValidationError
from ..model import DOORS, Provenance
from .screen import trust_of

__all__ = ["SOURCE", "check_door", "provenance", "source_of"]

#: The source of what a speaker says (a named person is a user).
SOURCE = {"user": "user", "assistant": "assistant", "agent": "assistant", "tool": "tool",
          "system": "system", "import": "import", "cube": "cube"}
#: Doors whose text is from elsewhere, whoever said it first.
_FOREIGN = {"import": "import", "cube": "cube"}


def check_door(door: object) -> str:
    """``door`` if it is a door (:data:`~remem.model.DOORS`), else ValidationError."""
    if not isinstance(door, str) or door not in DOORS:
        raise ValidationError("door", f"{door!r} is not a door; use one of {', '.join(DOORS)}")
    return door


def source_of(role: str | None, door: str) -> str:
    """Who said a text of speaker ``role`` that came in through ``door``."""
    if door in _FOREIGN:
        return _FOREIGN[door]
    return SOURCE.get((role or "user").lower(), "user")


def provenance(door: str, role: str | None) -> Provenance:
    """The provenance of an episode said by ``role`` that came in through ``door``.

    >>> provenance("hook", "tool")
    Provenance(door='hook', source='tool', trust='external')
    """
    source = source_of(role, check_door(door))
    return Provenance(door=door, source=source, trust=trust_of(source))  # type: ignore[arg-type]
