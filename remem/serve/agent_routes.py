"""The memory agent over HTTP: remember, context, prefetch, feedback, the mind map,
skills, decay, and the background jobs."""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..errors import NotFoundError
from ..memory import Memory
from ..model import Context, JobInfo, MemoryItem, TopicNode
from .auth import Authenticator, Principal
from .errors import ApiError
from .routes import ERRORS, AgentQ, MemoryId, OrgQ, ProjectQ, UserQ, confine_write
from .schemas import OwnerFields, ScopeFields

__all__ = ["agent_routes"]

JobId = Annotated[str, Path(description="a job id, e.g. j_01a2... (see GET /v1/jobs)")]


class RememberRequest(ScopeFields):
    """A memory to keep directly (an agent's "remember this"), merged with what is known."""

    text: str = Field(examples=["the team deploys with `make ship`"])
    kind: str = Field("fact", description="preference, persona, profile, project, convention, "
                      "pitfall, procedure, skill, files, decision, fact or event")
    subject: str | None = None
    role: str = "user"
    pinned: StrictBool = Field(False, description="never archived by decay")
    metadata: dict[str, Any] | None = None


class ContextRequest(ScopeFields):
    """What to put in a model's context: the core memories, the session's working memory,
    and what ``query`` finds, within a token budget."""

    query: str | None = Field(None, examples=["how do we deploy?"])
    budget_tokens: int = Field(1000, ge=1, le=100_000)
    log: bool = Field(False, description="record the block in the injection log (door "
                      "`context`): set it when the block is handed to a model")


class PrefetchRequest(OwnerFields):
    """The session whose working memory to warm from its latest turns."""

    session_id: str


class Warmed(BaseModel):
    """The ids of the memories now warm in the session's working memory."""

    warmed: list[str]


class FeedbackRequest(OwnerFields):
    """How a memory did: helpful strengthens it, wrong forgets it, stale archives it."""

    verdict: Literal["helpful", "wrong", "stale"]
    note: str | None = None


class DecayRequest(BaseModel):
    """Run decay as of a time (default: now)."""

    model_config = ConfigDict(extra="forbid")

    now: str | None = Field(None, description="ISO 8601")


class SkillList(BaseModel):
    """Skill candidates and approved skills."""

    skills: list[MemoryItem]


class JobList(BaseModel):
    """Background jobs, newest first."""

    jobs: list[JobInfo]


class Archived(BaseModel):
    """The ids of the memories decay archived."""

    archived: list[str]


def _job(call: Callable[[str], JobInfo], job_id: str) -> JobInfo:
    try:
        return call(job_id)
    except NotFoundError:
        raise ApiError(404, "job_not_found", f"no job with id {job_id!r}; see GET /v1/jobs for "
                       "the ids") from None


def agent_routes(memory: Memory, auth: Authenticator) -> APIRouter:
    """Remember, context, prefetch, feedback, tree, skills, decay and jobs."""
    router = APIRouter(prefix="/v1", responses=ERRORS)
    read: Callable[..., Principal] = auth.require("read")
    write: Callable[..., Principal] = auth.require("write")
    admin: Callable[..., Principal] = auth.require("admin")

    @router.post("/remember", status_code=201, tags=["memory agent"])
    def remember(body: RememberRequest, who: Annotated[Principal, Depends(write)]) -> MemoryItem:
        """Keep a memory directly; returns the memory it became (new, merged or superseding).
        A user's key may name a team's (or another user's) scope it holds a write grant on;
        the memory then records the key's user as its writer."""
        org, user, writer = confine_write(who, body.org_id, body.user_id)
        return memory.remember(body.text, kind=body.kind, subject=body.subject, org_id=org,
                               user_id=user, agent_id=body.agent_id, project=body.project,
                               session_id=body.session_id, role=body.role, pinned=body.pinned,
                               metadata=body.metadata, writer=writer, door="rest")

    @router.post("/context", tags=["memory agent"])
    def context(body: ContextRequest, who: Annotated[Principal, Depends(read)]) -> Context:
        """A context block ready for a model (``text``), the memories in it and its tokens."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.context(org_id=org, user_id=user, agent_id=body.agent_id, project=body.project,
                              session_id=body.session_id, query=body.query,
                              budget_tokens=body.budget_tokens, log=body.log)

    @router.post("/prefetch", tags=["memory agent"])
    def prefetch(body: PrefetchRequest, who: Annotated[Principal, Depends(write)]) -> Warmed:
        """Warm a session's working memory now (a job does this after each turn)."""
        org, user = who.confine(body.org_id, body.user_id)
        return Warmed(warmed=memory.prefetch(org_id=org, user_id=user, agent_id=body.agent_id,
                                             project=body.project, session_id=body.session_id))

    @router.post("/memories/{memory_id}/feedback", tags=["memory agent"])
    def feedback(memory_id: MemoryId, body: FeedbackRequest,
                 who: Annotated[Principal, Depends(write)]) -> MemoryItem:
        """Say how a memory did; kept in its history with the note."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.feedback(memory_id, body.verdict, body.note, org_id=org, user_id=user,
                               agent_id=body.agent_id, project=body.project)

    @router.get("/tree", tags=["memory agent"])
    def tree(who: Annotated[Principal, Depends(read)], org_id: OrgQ = None, user_id: UserQ = None,
             agent_id: AgentQ = None, project: ProjectQ = None) -> TopicNode:
        """The mind map of a scope: topics, subtopics and the memories under them."""
        org, user = who.confine(org_id, user_id)
        return memory.tree(org_id=org, user_id=user, agent_id=agent_id, project=project)

    @router.get("/skills", tags=["memory agent"])
    def skills(who: Annotated[Principal, Depends(read)], org_id: OrgQ = None, user_id: UserQ = None,
               agent_id: AgentQ = None, project: ProjectQ = None,
               status: Annotated[Literal["candidate", "approved"] | None, Query()] = None) -> SkillList:
        """Skill candidates and approved skills (each approved one with its SKILL.md)."""
        org, user = who.confine(org_id, user_id)
        return SkillList(skills=memory.skills(org_id=org, user_id=user, agent_id=agent_id,
                                              project=project, status=status))

    @router.post("/skills/{memory_id}/approve", tags=["memory agent"])
    def approve_skill(memory_id: MemoryId, who: Annotated[Principal, Depends(write)],
                      body: Annotated[OwnerFields | None, Body()] = None) -> MemoryItem:
        """Approve a skill candidate: it becomes canonical and gets its SKILL.md."""
        body = body or OwnerFields.model_validate({})
        org, user = who.confine(body.org_id, body.user_id)
        return memory.approve_skill(memory_id, org_id=org, user_id=user, agent_id=body.agent_id,
                                    project=body.project)

    @router.post("/decay", tags=["jobs"])
    def decay(who: Annotated[Principal, Depends(admin)],
              body: Annotated[DecayRequest | None, Body()] = None) -> Archived:
        """Archive the memories whose strength fell under the threshold, in the key's org
        (admin); it also runs nightly as a job."""
        return Archived(archived=memory.decay(now=body.now if body else None, org_id=who.org_id))

    @router.get("/jobs", tags=["jobs"])
    def jobs(who: Annotated[Principal, Depends(admin)],
             state: Annotated[Literal["queued", "running", "done", "failed", "cancelled"] | None,
                              Query()] = None,
             kind: Annotated[str | None, Query(description="embed, extract...")] = None,
             limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> JobList:
        """The background jobs of the key's org, or of its user's data when the key is
        confined to one user, newest first, with why they failed (admin)."""
        return JobList(jobs=memory.jobs(state=state, kind=kind, org_id=who.org_id,
                                        user_id=who.user_id, limit=limit))

    def _own_job(job_id: str, who: Principal) -> str:
        """The job, if the key may see it (another user's is not found, as outside its org)."""
        if who.user_id is not None:
            memory.job(job_id, org_id=who.org_id, user_id=who.user_id)
        return job_id

    @router.post("/jobs/{job_id}/retry", tags=["jobs"])
    def retry_job(job_id: JobId, who: Annotated[Principal, Depends(admin)]) -> JobInfo:
        """Queue a failed or cancelled job again (admin)."""
        return _job(lambda j: memory.retry_job(_own_job(j, who), org_id=who.org_id), job_id)

    @router.post("/jobs/{job_id}/cancel", tags=["jobs"])
    def cancel_job(job_id: JobId, who: Annotated[Principal, Depends(admin)]) -> JobInfo:
        """Cancel a queued or failed job (admin)."""
        return _job(lambda j: memory.cancel_job(_own_job(j, who), org_id=who.org_id), job_id)

    return router
