"""The injection log under ``/v1/injections``: what each door gave a model, and the heed
rates, confined to the caller's org (and user) like every other route."""


from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from ..memory import Memory
from ..model import HeedRate, Injection
from .auth import Authenticator, Principal
from .routes import ERRORS, AgentQ, OrgQ, ProjectQ, UserQ

__all__ = ["InjectionPage", "log_routes"]

SessionQ = Annotated[str | None, Query()]


class InjectionPage(BaseModel):
    """A page of the injection log, newest first."""

    items: list[Injection]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


class HeedRates(BaseModel):
    """Per door and kind: memories injected, and used afterwards."""

    rates: list[HeedRate]


def log_routes(memory: Memory, auth: Authenticator) -> APIRouter:
    """``GET /v1/injections`` and ``GET /v1/injections/stats``."""
    router = APIRouter(prefix="/v1", responses=ERRORS, tags=["injection log"])
    read: Callable[..., Principal] = auth.require("read")

    @router.get("/injections")
    def injections(
        who: Annotated[Principal, Depends(read)],
        org_id: OrgQ = None, user_id: UserQ = None, agent_id: AgentQ = None,
        project: ProjectQ = None, session_id: SessionQ = None,
        door: Annotated[str | None, Query(description="e.g. hook:SessionStart, proxy")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    ) -> InjectionPage:
        """What remem handed to models in the scope, newest first: the door, the query,
        the memories in the order given, and whether each was used afterwards."""
        org, user = who.confine(org_id, user_id)
        page = memory.injections(org_id=org, user_id=user, agent_id=agent_id, project=project,
                                 session_id=session_id, door=door, limit=limit, cursor=cursor)
        return InjectionPage(items=list(page), next_cursor=page.next_cursor)

    @router.get("/injections/stats")
    def stats(
        who: Annotated[Principal, Depends(read)],
        org_id: OrgQ = None, user_id: UserQ = None, agent_id: AgentQ = None,
        project: ProjectQ = None, session_id: SessionQ = None,
        since: Annotated[str | None, Query(description="ISO 8601; only injections since")] = None,
    ) -> HeedRates:
        """The heed rates: of the memories injected through each door, per kind, how many
        the agent then used."""
        org, user = who.confine(org_id, user_id)
        return HeedRates(rates=memory.heed(org_id=org, user_id=user, agent_id=agent_id,
                                           project=project, session_id=session_id, since=since))

    return router
