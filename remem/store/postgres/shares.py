"""Grants between scopes in the PostgreSQL store (mixed into PostgresStore); the
statements mirror :mod:`remem.store.sqlite.shares` one for one."""

from __future__ import annotations

from typing import Any

from ...model import Share
from ..clauses import share_filters
from ..rows import row_to_share
from . import statements as sql

__all__ = ["PostgresShares"]




class PostgresShares:
    """``put_share`` / ``drop_share`` / ``shares`` of the PostgreSQL store."""

    _all: Any
    _one: Any
    _run: Any
    write: Any

    def put_share(self, share: Share) -> Share:
        key = (share.org_id, share.user_id, share.project, share.grantee_kind, share.grantee)
        with self.write(changes=False):
            self._run(sql.PUT_SHARE_INSERT_SHARES,
                      (share.id, *key, share.access, share.created_at.timestamp(), share.created_by))
            row = self._one(sql.PUT_SHARE_SELECT_SHARES, key)
        return row_to_share(row)

    def drop_share(self, share_id: str, org_id: str) -> Share | None:
        with self.write(changes=False):
            row = self._one(sql.DROP_SHARE_DELETE_SHARES,
                            (share_id, org_id))
        return None if row is None else row_to_share(row)

    def shares(self, org_id: str, *, user_id: str | None = None, project: str | None = None,
               grantee_kind: str | None = None, grantee: str | None = None,
               share_id: str | None = None) -> list[Share]:
        where, params = share_filters(org_id, "%s", user_id=user_id, project=project,
                                      grantee_kind=grantee_kind, grantee=grantee, share_id=share_id)
        return [row_to_share(r) for r in self._all(
            sql.SHARES_SELECT.format(where=where), params)]
