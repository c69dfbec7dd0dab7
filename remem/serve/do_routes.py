"""Requests in plain language, reminders and team plans over HTTP: ``POST /v1/do``,
``GET /v1/reminders``, ``POST /v1/reminders/{id}/dismiss``, ``POST /v1/team/plan``."""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field, StrictBool

from ..memory import Memory
from ..model import MemoryItem
from ..organize.team import TeamPlan
from ..schedule.orchestrate import DoResult
from .auth import Authenticator, Principal
from .routes import ERRORS, AgentQ, MemoryId, OrgQ, ProjectQ, UserQ
from .schemas import OwnerFields

__all__ = ["do_routes"]


class DoRequest(OwnerFields):
    """A request in plain language (English or Chinese) to carry out on the memory."""

    text: str = Field(examples=["Record yesterday's meeting with Li Lei and remind me the day "
                                "after tomorrow to write the technical report"])
    dry_run: StrictBool = Field(False, description="return the plan only; change nothing")


class DismissRequest(OwnerFields):
    """Dismiss a reminder, or mark it done."""

    done: StrictBool = False


class TeamPlanRequest(OwnerFields):
    """A requirement for the leader to split among its team."""

    request: str = Field(examples=["a login page with its REST API"])
    agent_id: str | None = Field("leader", description="the leader's agent id")


class ReminderList(BaseModel):
    """Open reminders, soonest first."""

    reminders: list[MemoryItem]


def do_routes(memory: Memory, auth: Authenticator) -> APIRouter:
    """Do, reminders and team plans."""
    router = APIRouter(prefix="/v1", responses=ERRORS)
    read: Callable[..., Principal] = auth.require("read")
    write: Callable[..., Principal] = auth.require("write")

    @router.post("/do", tags=["memory agent"])
    def do(body: DoRequest, who: Annotated[Principal, Depends(write)]) -> DoResult:
        """Plan the request as memory operations and run them in one transaction; returns
        the plan's steps and what each did (only the plan with ``dry_run``)."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.do(body.text, org_id=org, user_id=user, agent_id=body.agent_id,
                         project=body.project, dry_run=body.dry_run, door="rest")

    @router.get("/reminders", tags=["memory agent"])
    def reminders(who: Annotated[Principal, Depends(read)], org_id: OrgQ = None,
                  user_id: UserQ = None, agent_id: AgentQ = None, project: ProjectQ = None,
                  due: Annotated[bool, Query(description="only those due now")] = False
                  ) -> ReminderList:
        """The user's open reminders (due ones are in every context block)."""
        org, user = who.confine(org_id, user_id)
        return ReminderList(reminders=memory.reminders(org_id=org, user_id=user,
                                                       agent_id=agent_id, project=project, due=due))

    @router.post("/reminders/{memory_id}/dismiss", tags=["memory agent"])
    def dismiss(memory_id: MemoryId, body: DismissRequest,
                who: Annotated[Principal, Depends(write)]) -> MemoryItem:
        """Dismiss a reminder (or mark it done): it leaves the context blocks."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.dismiss_reminder(memory_id, done=body.done, org_id=org, user_id=user,
                                       agent_id=body.agent_id, project=body.project)

    @router.post("/team/plan", tags=["memory agent"])
    def team_plan(body: TeamPlanRequest, who: Annotated[Principal, Depends(read)]) -> TeamPlan:
        """The team skills the leader learned that apply to the requirement, each with its
        split into roles (agent ids), order, dependencies and checks; empty if none."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.plan(body.request, org_id=org, user_id=user, project=body.project,
                           agent_id=body.agent_id or "leader")

    return router
