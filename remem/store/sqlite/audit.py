"""The audit log of the SQLite store (mixed into :class:`~remem.store.sqlite.SQLiteStore`);
:mod:`remem.store.postgres.audit` mirrors its statements one for one."""

from __future__ import annotations

import sqlite3
from typing import Any

from ...model import AuditEntry
from ..base import NewAudit
from ..clauses import audit_where
from ..policy import page_before
from ..rows import row_to_audit
from . import statements as sql

__all__ = ["SQLiteAudit"]


class SQLiteAudit:
    """Writes and reads of the audit log."""

    conn: sqlite3.Connection
    write: Any

    def record_audit(self, entry: NewAudit) -> None:
        """Record one entry (in the open transaction, if any)."""
        with self.write(changes=False) as conn:
            conn.execute(
                sql.RECORD_AUDIT_INSERT,
                (entry.id, entry.at, entry.door, entry.action, entry.org_id, entry.user_id,
                 entry.actor, entry.key_id, entry.target, entry.status))

    def audit(self, org_id: str, user_id: str | None = None, *, door: str | None = None,
              actor: str | None = None, key_id: str | None = None, action: str | None = None,
              target: str | None = None, since: float | None = None, until: float | None = None,
              limit: int = 50, cursor: str | None = None) -> tuple[list[AuditEntry], str | None]:
        """Entries inside the walls, newest first, and the next page's cursor."""
        where, params = audit_where(org_id, user_id, {
            "door": door, "actor": actor, "key_id": key_id, "action": action, "target": target,
            "since": since, "until": until})
        rows = self.conn.execute(
            sql.AUDIT_SELECT.format(where=where),
            [*params, page_before(cursor), limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return [row_to_audit(r) for r in rows], str(rows[-1][0]) if more and rows else None
