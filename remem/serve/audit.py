"""The REST service's side of the audit log: every ``/v1`` request is recorded (who, with
which key, what, when, how it ended), and ``GET /v1/audit`` reads it inside the walls."""


import logging
import unicodedata
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..memory import Memory
from ..model import AuditEntry
from .auth import Authenticator, Principal
from .routes import ERRORS, OrgQ, UserQ

__all__ = ["AuditPage", "AuditTrail", "audit_routes"]

log = logging.getLogger(__name__)

_UNRECORDED = ("/v1/health",)


class AuditTrail:
    """ASGI middleware: records each ``/v1`` request in the audit log once its response
    starts (a stream is recorded when it opens), with the principal the route saw."""

    def __init__(self, app: ASGIApp, memory: Memory) -> None:
        self.app = app
        self.memory = memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith("/v1/") or path in _UNRECORDED:
            await self.app(scope, receive, send)
            return
        recorded = False

        async def sending(message: Message) -> None:
            nonlocal recorded
            if message["type"] == "http.response.start" and not recorded:
                recorded = True
                self._record(scope, message["status"])
            await send(message)

        await self.app(scope, receive, sending)

    def _record(self, scope: Scope, status: int) -> None:
        who: Principal | None = scope.get("state", {}).get("principal")
        route = scope.get("route")
        action = f"{scope['method']} {getattr(route, 'path', scope['path'])}"
        params: dict[str, Any] = scope.get("path_params") or {}
        target = next((str(v) for k, v in params.items() if k.endswith("id")), None)
        try:
            self.memory.record_access(
                door="rest", action=_storable(action), target=_storable(target), status=status,
                org_id=who.org_id if who is not None else None,
                user_id=who.user_id if who is not None else None,
                actor=(who.user_id or (f"org:{who.org_id}" if who.org_id else "single-user"))
                if who is not None else None,
                key_id=who.key_id if who is not None else None)
        except Exception:  # the answer goes out all the same; the log says why
            log.exception("could not record %s in the audit log", action)


def _storable(value: str | None) -> str | None:
    """``value`` with its control characters and lone surrogates escaped (``\\x01``): a
    request can put anything in its path, and it is recorded all the same, showing what
    was asked for."""
    if value is None:
        return None
    return "".join(c.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(c) in ("Cc", "Cs") else c for c in value)


class AuditPage(BaseModel):
    """A page of the audit log, newest first."""

    items: list[AuditEntry]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


def audit_routes(memory: Memory, auth: Authenticator) -> APIRouter:
    """``GET /v1/audit``."""
    router = APIRouter(prefix="/v1", responses=ERRORS, tags=["audit"])
    admin: Callable[..., Principal] = auth.require("admin")

    @router.get("/audit")
    def audit(
        who: Annotated[Principal, Depends(admin)],
        org_id: OrgQ = None, user_id: UserQ = None,
        door: Annotated[str | None, Query(description="rest, mcp, cli or retention")] = None,
        actor: Annotated[str | None, Query(description="who did it")] = None,
        key_id: Annotated[str | None, Query(description="with which API key")] = None,
        action: Annotated[str | None, Query(description="a prefix, e.g. POST or "
                                            "'DELETE /v1/memories'")] = None,
        target: Annotated[str | None, Query(description="the memory, job or key named")] = None,
        since: Annotated[str | None, Query(description="ISO 8601")] = None,
        until: Annotated[str | None, Query(description="ISO 8601")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    ) -> AuditPage:
        """Who changed or read what through the services, when, with which key (admin);
        confined to the key's org, and to its user when the key has one."""
        org, user = who.confine(org_id, user_id)
        page = memory.audit(org_id=org, user_id=user, door=door, actor=actor, key_id=key_id,
                            action=action, target=target, since=since, until=until, limit=limit,
                            cursor=cursor)
        return AuditPage(items=list(page), next_cursor=page.next_cursor)

    return router
