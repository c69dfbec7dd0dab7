"""Grants between scopes in the SQLite store (mixed into :class:`~remem.store.sqlite.SQLiteStore`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from ...model import Share
from ..clauses import share_filters
from ..rows import SHARE_COLUMNS, row_to_share

__all__ = ["ShareOps"]

_SAME = ("org_id = ? AND COALESCE(user_id, '') = COALESCE(?, '') AND "
         "COALESCE(project, '') = COALESCE(?, '') AND grantee_kind = ? AND grantee = ?")


class ShareOps:
    """``put_share`` / ``drop_share`` / ``shares`` of the SQLite store."""

    conn: sqlite3.Connection
    write: Any

    def put_share(self, share: Share) -> Share:
        key = (share.org_id, share.user_id, share.project, share.grantee_kind, share.grantee)
        with self.write(changes=False) as conn:
            conn.execute(f"UPDATE shares SET access = ? WHERE {_SAME}", (share.access, *key))
            conn.execute(f"INSERT INTO shares ({SHARE_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? "
                         f"WHERE NOT EXISTS (SELECT 1 FROM shares WHERE {_SAME})",
                         (share.id, *key, share.access, share.created_at.timestamp(),
                          share.created_by, *key))
            row = conn.execute(f"SELECT {SHARE_COLUMNS} FROM shares WHERE {_SAME}", key).fetchone()
        return row_to_share(row)

    def drop_share(self, share_id: str, org_id: str) -> Share | None:
        with self.write(changes=False) as conn:
            row = conn.execute(f"SELECT {SHARE_COLUMNS} FROM shares WHERE id = ? AND org_id = ?",
                               (share_id, org_id)).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM shares WHERE id = ? AND org_id = ?", (share_id, org_id))
        return row_to_share(row)

    def shares(self, org_id: str, *, user_id: str | None = None, project: str | None = None,
               grantee_kind: str | None = None, grantee: str | None = None,
               share_id: str | None = None) -> list[Share]:
        where, params = share_filters(org_id, "?", user_id=user_id, project=project,
                                      grantee_kind=grantee_kind, grantee=grantee, share_id=share_id)
        return [row_to_share(r) for r in self.conn.execute(
            f"SELECT {SHARE_COLUMNS} FROM shares WHERE {where} ORDER BY created_at, id", params)]
