"""The audit log of the SQLite store (mixed into :class:`~remem.store.sqlite.SQLiteStore`);
:mod:`remem.store.postgres.audit` mirrors its statements one for one."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from typing import Any

from ..model import AuditEntry
from .base import NewAudit
from .policy import page_before

__all__ = ["AuditOps", "audit_where", "to_entry"]

COLUMNS = "rowid, id, at, door, action, org_id, user_id, actor, key_id, target, status"


def audit_where(org_id: str, user_id: str | None, filters: dict[str, Any], *,
                mark: str = "?") -> tuple[str, list[Any]]:
    """The WHERE clause of an audit read: the walls first, then the filters given."""
    clauses, params = [f"org_id = {mark}"], [org_id]
    if user_id is not None:
        clauses.append(f"user_id = {mark}")
        params.append(user_id)
    for name in ("door", "actor", "key_id", "target"):
        if filters.get(name) is not None:
            clauses.append(f"{name} = {mark}")
            params.append(filters[name])
    if filters.get("action") is not None:  # a prefix: 'POST' or 'GET /v1/memories'
        clauses.append(f"substr(action, 1, {mark}) = {mark}")
        params += [len(filters["action"]), filters["action"]]
    if filters.get("since") is not None:
        clauses.append(f"at >= {mark}")
        params.append(filters["since"])
    if filters.get("until") is not None:
        clauses.append(f"at < {mark}")
        params.append(filters["until"])
    return " AND ".join(clauses), params


def to_entry(row: Any) -> AuditEntry:
    return AuditEntry(id=row[1], at=datetime.fromtimestamp(row[2], timezone.utc), door=row[3],
                      action=row[4], org_id=row[5], user_id=row[6], actor=row[7], key_id=row[8],
                      target=row[9], status=row[10])


class AuditOps:
    """Writes and reads of the audit log."""

    conn: sqlite3.Connection
    write: Any

    def record_audit(self, entry: NewAudit) -> None:
        """Record one entry (in the open transaction, if any)."""
        with self.write(changes=False) as conn:
            conn.execute(
                "INSERT INTO audit (id, at, door, action, org_id, user_id, actor, key_id, target, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            f"SELECT {COLUMNS} FROM audit WHERE {where} AND rowid < ? ORDER BY rowid DESC LIMIT ?",
            [*params, page_before(cursor), limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return [to_entry(r) for r in rows], str(rows[-1][0]) if more and rows else None
