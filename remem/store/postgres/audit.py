"""The audit log of the PostgreSQL store (mixed into PostgresStore); the statements
mirror :mod:`remem.store.sqlite.audit` one for one."""

from __future__ import annotations

from typing import Any

from ...model import AuditEntry
from ..base import NewAudit
from ..clauses import audit_where
from ..policy import page_before
from ..rows import row_to_audit
from . import statements as sql

__all__ = ["PostgresAudit"]


class PostgresAudit:
    """Writes and reads of the audit log (mixed into PostgresStore)."""

    _all: Any
    _run: Any
    write: Any

    def record_audit(self, entry: NewAudit) -> None:
        with self.write(changes=False):
            self._run(
                sql.RECORD_AUDIT_INSERT,
                (entry.id, entry.at, entry.door, entry.action, entry.org_id, entry.user_id,
                 entry.actor, entry.key_id, entry.target, entry.status))

    def audit(self, org_id: str, user_id: str | None = None, *, door: str | None = None,
              actor: str | None = None, key_id: str | None = None, action: str | None = None,
              target: str | None = None, since: float | None = None, until: float | None = None,
              limit: int = 50, cursor: str | None = None) -> tuple[list[AuditEntry], str | None]:
        where, params = audit_where(org_id, user_id, {
            "door": door, "actor": actor, "key_id": key_id, "action": action, "target": target,
            "since": since, "until": until}, mark="%s")
        rows = self._all(
            sql.AUDIT_SELECT.format(where=where),
            [*params, page_before(cursor), limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        return [row_to_audit(r) for r in rows], str(rows[-1][0]) if more and rows else None
