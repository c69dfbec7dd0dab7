"""The audit log: every change and every read through the services, inside the walls.

Each door records what it was asked, once per request: the REST service every ``/v1``
request (with the API key that made it), the MCP server every tool call, the CLI every
command that writes; and the retention policy every item it compacts, archives or
purges. An entry says when, through which door, by whom (the user, the key), what (the
action, and the memory, job or key it named) and how it ended; never the text itself
(what was stored is in the store, redacted). Reading the log is confined like every read:
to the caller's org, and to the caller's user when it is confined to one.
"""

from __future__ import annotations

import time

from ..errors import ValidationError
from ..model import Page, new_id
from ..store.base import NewAudit, Store

__all__ = ["DOORS", "Auditor"]

#: The doors that record what they were asked, and the retention policy, which records
#: each item it compacts, archives or purges.
DOORS = ("rest", "mcp", "cli", "retention")


class Auditor:
    """Writes and reads a store's audit log."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, *, door: str, action: str, org_id: str | None, user_id: str | None = None,
               actor: str | None = None, key_id: str | None = None, target: str | None = None,
               status: int | None = None, at: float | None = None) -> str:
        """Record one entry; returns its id."""
        if door not in DOORS:
            raise ValidationError("door", f"{door!r} is not a door; use {', '.join(DOORS)}")
        entry = NewAudit(id=new_id("a_"), at=time.time() if at is None else at, door=door,
                         action=action[:200], org_id=org_id or "default", user_id=user_id,
                         actor=actor, key_id=key_id, target=None if target is None else target[:200],
                         status=status)
        self.store.record_audit(entry)
        return entry.id

    def read(self, *, org_id: str | None, user_id: str | None = None, door: str | None = None,
             actor: str | None = None, key_id: str | None = None, action: str | None = None,
             target: str | None = None, since: float | None = None, until: float | None = None,
             limit: int = 50, cursor: str | None = None) -> Page:
        """Entries of the org (of one user's data, with ``user_id``), newest first."""
        if door is not None and door not in DOORS:
            raise ValidationError("door", f"{door!r} is not a door; use {', '.join(DOORS)}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        found, next_cursor = self.store.audit(
            org_id or "default", user_id, door=door, actor=actor, key_id=key_id, action=action,
            target=target, since=since, until=until, limit=limit, cursor=cursor)
        return Page(found, next_cursor)  # type: ignore[arg-type]

