"""Grants between scopes in the SQLite store (mixed into :class:`~remem.store.sqlite.SQLiteStore`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from ...model import Share
from ..clauses import share_filters
from ..rows import row_to_share
from . import statements as sql

__all__ = ["SQLiteShares"]




class SQLiteShares:
    """``put_share`` / ``drop_share`` / ``shares`` of the SQLite store."""

    conn: sqlite3.Connection
    write: Any

    def put_share(self, share: Share) -> Share:
        key = (share.org_id, share.user_id, share.project, share.grantee_kind, share.grantee)
        with self.write(changes=False) as conn:
            conn.execute(sql.PUT_SHARE_UPDATE_SHARES, (share.access, *key))
            conn.execute(sql.PUT_SHARE_INSERT_SHARES,
                         (share.id, *key, share.access, share.created_at.timestamp(),
                          share.created_by, *key))
            row = conn.execute(sql.PUT_SHARE_SELECT_SHARES, key).fetchone()
        return row_to_share(row)

    def drop_share(self, share_id: str, org_id: str) -> Share | None:
        with self.write(changes=False) as conn:
            row = conn.execute(sql.DROP_SHARE_SELECT_SHARES,
                               (share_id, org_id)).fetchone()
            if row is None:
                return None
            conn.execute(sql.DROP_SHARE_DELETE_SHARES, (share_id, org_id))
        return row_to_share(row)

    def shares(self, org_id: str, *, user_id: str | None = None, project: str | None = None,
               grantee_kind: str | None = None, grantee: str | None = None,
               share_id: str | None = None) -> list[Share]:
        where, params = share_filters(org_id, "?", user_id=user_id, project=project,
                                      grantee_kind=grantee_kind, grantee=grantee, share_id=share_id)
        return [row_to_share(r) for r in self.conn.execute(
            sql.SHARES_SELECT.format(where=where), params)]
