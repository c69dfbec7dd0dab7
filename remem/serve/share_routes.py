"""Grants under ``/v1/shares``: give another user, agent or team read or write access to a
user's (or team's) memories or one project, revoke it, and see who can see what.

A key confined to one user grants and revokes only on that user's own memories, and lists
only the grants it gave and those given to it; an org key (or the single user of a
loopback server) manages the whole org's."""

from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from ..memory import Memory
from ..model import Share
from .auth import Authenticator, Principal
from .routes import ERRORS, OrgQ, UserQ

__all__ = ["GrantRequest", "ShareList", "share_routes"]


class GrantRequest(BaseModel):
    """A grant: who gets which access to whose memories."""

    model_config = ConfigDict(extra="forbid")

    grantee: str = Field(min_length=1, max_length=256, description="a user, agent or team id")
    grantee_kind: Literal["user", "agent", "team"] = "user"
    access: Literal["read", "write"] = "read"
    user_id: str | None = Field(None, description="whose memories (default: the key's user)")
    project: str | None = Field(None, description="only this project's (default: all of them)")
    org_id: str | None = None


class ShareList(BaseModel):
    """Grants, oldest first."""

    shares: list[Share]


def share_routes(memory: Memory, auth: Authenticator) -> APIRouter:
    """``GET``/``POST /v1/shares`` and ``DELETE /v1/shares/{share_id}``."""
    router = APIRouter(prefix="/v1", responses=ERRORS, tags=["sharing"])
    read: Callable[..., Principal] = auth.require("read")
    write: Callable[..., Principal] = auth.require("write")

    @router.get("/shares")
    def list_shares(
        who: Annotated[Principal, Depends(read)], org_id: OrgQ = None, user_id: UserQ = None,
        grantee: Annotated[str | None, Query(description="only what this user can see "
                                             "through grants")] = None,
    ) -> ShareList:
        """Who can see what: the grants a user gave, those given to a grantee, or (an org
        key, asking for neither) every grant of the org."""
        org, user = who.confine(org_id, user_id)
        if who.user_id is not None:  # a user's key: what it gave and what it was given
            user, grantee = who.user_id, who.user_id
        return ShareList(shares=memory.shares(org_id=org, user_id=user, grantee=grantee))

    @router.post("/shares", status_code=201)
    def grant(body: GrantRequest, who: Annotated[Principal, Depends(write)]) -> Share:
        """Grant access; granting the same scope to the same grantee again changes it."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.share(grantee=body.grantee, grantee_kind=body.grantee_kind,
                            access=body.access, org_id=org, user_id=user, project=body.project,
                            created_by=who.user_id or user)

    @router.delete("/shares/{share_id}")
    def revoke(share_id: Annotated[str, Path(description="a grant id, e.g. sh_01a2...")],
               who: Annotated[Principal, Depends(write)], org_id: OrgQ = None) -> Share:
        """Revoke a grant: from now on the grantee no longer sees what it opened."""
        org, _ = who.confine(org_id, None)
        return memory.unshare(share_id, org_id=org, user_id=who.user_id)

    return router
