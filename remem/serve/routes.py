"""The ``Memory`` API under ``/v1``: one route per operation, each confined to the
caller's org (and user)."""


from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Path, Query

from .. import __version__
from ..memory import Memory
from ..model import AddResult, MemoryItem, Stats
from .auth import Authenticator, Principal
from .errors import ApiError
from .events import EventHub
from .keys import KeyStore
from .schemas import (
    AUTH_ERRORS,
    DOOR_ERRORS,
    ERRORS,
    AddEventsRequest,
    AddRequest,
    Deleted,
    Flushed,
    FlushRequest,
    ForgetRequest,
    Health,
    HistoryResponse,
    MemoryPage,
    Ready,
    SearchRequest,
    SearchResponse,
    UpdateRequest,
    error_responses,
)

__all__ = ["ERRORS", "memory_routes", "service_routes"]

MemoryId = Annotated[str, Path(description="a memory or episode id, e.g. e_01a2...")]
OrgQ = Annotated[str | None, Query(description="default: the key's org, or 'default'")]
UserQ = Annotated[str | None, Query()]
AgentQ = Annotated[str | None, Query()]
ProjectQ = Annotated[str | None, Query()]


def confine_write(who: Principal, org_id: str | None,
                  user_id: str | None) -> tuple[str | None, str | None, str | None]:
    """``(org, user, writer)`` of a write. A user's key writes as that user; naming another
    user (a team's scope) it writes there as ``writer``, which the facade lets through only
    with a write grant (403 ``permission_denied`` otherwise), and records on what it writes."""
    if who.user_id is None or user_id is None or user_id == who.user_id:
        org, user = who.confine(org_id, user_id)
        return org, user, None
    org, _ = who.confine(org_id, None)
    return org, user_id, who.user_id


def service_routes(memory: Memory, auth: Authenticator, keys: KeyStore) -> APIRouter:
    """Health, readiness and store-wide statistics."""
    router = APIRouter(prefix="/v1", tags=["service"])
    read: Callable[..., Principal] = auth.require("read")
    admin: Callable[..., Principal] = auth.require("admin")

    @router.get("/health", responses=DOOR_ERRORS)
    def health() -> Health:
        """The process is up (no key needed)."""
        return Health(version=__version__)

    @router.get("/ready", responses={**AUTH_ERRORS, **error_responses(
        (503, "the store cannot be read, or is closed"))})
    def ready(who: Annotated[Principal, Depends(read)]) -> Ready:
        """The store opens and answers."""
        try:
            embedder = memory.stored_embedder()
            backlog = memory.embed_backlog()
        except Exception as exc:
            raise ApiError(503, "not_ready", f"the store cannot be read ({exc}); check that the "
                           "file exists and is readable, and the server log") from exc
        return Ready(embedder=embedder, embed_backlog=backlog,
                     auth="api_keys" if who.key_id else "single_user")

    @router.get("/stats", responses=AUTH_ERRORS)
    def stats(who: Annotated[Principal, Depends(admin)]) -> Stats:
        """Counts of what the key may see (admin): its org's, or its user's when the key is
        confined to one user; without keys (single-user mode), the whole store's."""
        return memory.stats(org_id=who.org_id, user_id=who.user_id)

    return router


def memory_routes(memory: Memory, auth: Authenticator, hub: EventHub) -> APIRouter:
    """Add, search, list, get, update, forget, purge, history, flush."""
    router = APIRouter(prefix="/v1", responses=ERRORS)
    read: Callable[..., Principal] = auth.require("read")
    write: Callable[..., Principal] = auth.require("write")
    admin: Callable[..., Principal] = auth.require("admin")

    @router.post("/memories", status_code=201, tags=["memories"])
    def add(body: AddRequest, who: Annotated[Principal, Depends(write)]) -> AddResult:
        """Store each message verbatim as an episode, in one transaction; embedding follows
        in the background (``job_ids``; see ``/v1/events/stream`` for when it is done)."""
        org, user, writer = confine_write(who, body.org_id, body.user_id)
        result = memory.add(body.messages, org_id=org, user_id=user, agent_id=body.agent_id,
                            project=body.project, session_id=body.session_id,
                            timestamp=body.timestamp, metadata=body.metadata, writer=writer,
                            door="rest")
        hub.ingested(result, org_id=org, user_id=user, session_id=body.session_id)
        return result

    @router.post("/events", status_code=201, tags=["memories"])
    def add_events(body: AddEventsRequest, who: Annotated[Principal, Depends(write)]) -> AddResult:
        """Store coding-agent events (tool calls, file edits, errors, task start/end)."""
        org, user = who.confine(body.org_id, body.user_id)
        result = memory.add_events(body.events, org_id=org, user_id=user, agent_id=body.agent_id,
                                   project=body.project, session_id=body.session_id,
                                   timestamp=body.timestamp, metadata=body.metadata, door="rest")
        hub.ingested(result, org_id=org, user_id=user, session_id=body.session_id)
        return result

    @router.post("/search", tags=["memories"])
    def search(body: SearchRequest, who: Annotated[Principal, Depends(read)]) -> SearchResponse:
        """The memories that best answer the query, best first, each with how it was found."""
        org, user = who.confine(body.org_id, body.user_id)
        hits = memory.search(
            body.query, org_id=org, user_id=user, agent_id=body.agent_id, project=body.project,
            session_id=body.session_id, k=body.k, kinds=body.kinds, since=body.since,
            until=body.until, as_of=body.as_of, budget_tokens=body.budget_tokens,
            include_episodes=body.include_episodes, include_superseded=body.include_superseded,
            include_archived=body.include_archived, include_shared=body.include_shared,
            trust=body.trust, door=body.door)
        return SearchResponse(hits=hits)

    @router.post("/flush", tags=["memories"])
    def flush(who: Annotated[Principal, Depends(write)],
              body: Annotated[FlushRequest | None, Body()] = None) -> Flushed:
        """Wait until the background work queued through this server is over."""
        body = body or FlushRequest.model_validate({})
        return Flushed(done=memory.flush(timeout=body.timeout))

    @router.get("/memories", tags=["memories"])
    def list_memories(
        who: Annotated[Principal, Depends(read)],
        org_id: OrgQ = None, user_id: UserQ = None, agent_id: AgentQ = None,
        project: ProjectQ = None, session_id: Annotated[str | None, Query()] = None,
        kinds: Annotated[list[str] | None, Query(description="repeatable: ?kinds=a&kinds=b")] = None,
        include_episodes: bool = False, include_inactive: bool = False,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
        trust: Annotated[list[Literal["user", "agent", "external"]] | None, Query(
            description="only memories trusted so (repeatable): user, agent, external")] = None,
        door: Annotated[list[str] | None, Query(
            description="only memories that came in through this door (repeatable): sdk, rest, "
            "mcp, hook, cli, import, cube, proxy, agent")] = None,
    ) -> MemoryPage:
        """Memories in the scope, newest first, one page at a time; each says where it came
        from (``provenance``: door, source, trust)."""
        org, user = who.confine(org_id, user_id)
        page = memory.list(org_id=org, user_id=user, agent_id=agent_id, project=project,
                           session_id=session_id, kinds=kinds, include_episodes=include_episodes,
                           include_inactive=include_inactive, limit=limit, cursor=cursor,
                           trust=trust, door=door)
        return MemoryPage(items=list(page), next_cursor=page.next_cursor)

    @router.get("/memories/{memory_id}", tags=["memories"])
    def get(memory_id: MemoryId, who: Annotated[Principal, Depends(read)], org_id: OrgQ = None,
            user_id: UserQ = None, agent_id: AgentQ = None, project: ProjectQ = None) -> MemoryItem:
        """One memory or episode, whatever its status."""
        org, user = who.confine(org_id, user_id)
        return memory.get(memory_id, org_id=org, user_id=user, agent_id=agent_id, project=project)

    @router.patch("/memories/{memory_id}", tags=["memories"])
    def update(memory_id: MemoryId, body: UpdateRequest,
               who: Annotated[Principal, Depends(write)]) -> MemoryItem:
        """Give a memory new text as a new version; the history keeps the old one."""
        org, user = who.confine(body.org_id, body.user_id)
        return memory.update(memory_id, text=body.text, reason=body.reason, org_id=org,
                             user_id=user, agent_id=body.agent_id, project=body.project)

    @router.post("/memories/{memory_id}/forget", tags=["memories"])
    def forget(memory_id: MemoryId, who: Annotated[Principal, Depends(write)],
               body: Annotated[ForgetRequest | None, Body()] = None) -> MemoryItem:
        """Hide a memory from search; it stays in the file and in its history."""
        body = body or ForgetRequest.model_validate({})
        org, user = who.confine(body.org_id, body.user_id)
        return memory.forget(memory_id, reason=body.reason, org_id=org, user_id=user,
                             agent_id=body.agent_id, project=body.project)

    @router.delete("/memories/{memory_id}", tags=["memories"])
    def purge(memory_id: MemoryId, who: Annotated[Principal, Depends(admin)], org_id: OrgQ = None,
              user_id: UserQ = None, agent_id: AgentQ = None, project: ProjectQ = None) -> Deleted:
        """Delete a memory for good, with everything derived from it (admin)."""
        org, user = who.confine(org_id, user_id)
        return Deleted(deleted=memory.purge(memory_id, org_id=org, user_id=user, agent_id=agent_id,
                                            project=project))

    @router.get("/memories/{memory_id}/history", tags=["memories"])
    def history(memory_id: MemoryId, who: Annotated[Principal, Depends(read)], org_id: OrgQ = None,
                user_id: UserQ = None, agent_id: AgentQ = None,
                project: ProjectQ = None) -> HistoryResponse:
        """Every version and status change of a memory, oldest first."""
        org, user = who.confine(org_id, user_id)
        return HistoryResponse(entries=memory.history(memory_id, org_id=org, user_id=user,
                                                      agent_id=agent_id, project=project))

    return router
