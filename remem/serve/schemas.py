"""Request and response bodies of the REST service.

Requests are checked here for shape (unknown fields are refused); their content (texts,
ids, times) is checked by :class:`remem.Memory`, which names the field that is wrong.
The responses reuse remem's own types (``MemoryItem``, ``Hit``, ``Stats``...).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..model import HistoryEntry, Hit, MemoryItem

__all__ = [
    "AUTH_ERRORS",
    "DOOR_ERRORS",
    "ERRORS",
    "AddEventsRequest",
    "AddRequest",
    "Deleted",
    "ErrorBody",
    "FlushRequest",
    "Flushed",
    "ForgetRequest",
    "Health",
    "HistoryResponse",
    "MemoryPage",
    "OwnerFields",
    "Ready",
    "ScopeFields",
    "SearchRequest",
    "SearchResponse",
    "UpdateRequest",
    "error_responses",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OwnerFields(_Request):
    """The scope of a call on one memory. With an API key, the key's org (and user) apply."""

    org_id: str | None = Field(None, description="default: the key's org, or 'default'")
    user_id: str | None = None
    agent_id: str | None = None
    project: str | None = None


class ScopeFields(OwnerFields):
    """The scope of a call on many memories."""

    session_id: str | None = None


class AddRequest(ScopeFields):
    """Turns to remember verbatim, one episode each."""

    messages: str | dict[str, Any] | list[dict[str, Any] | str] = Field(
        description="a string, or messages with role (or speaker), content (or text), and "
        "optional metadata and timestamp",
        examples=[[{"role": "user", "content": "I moved to pnpm last week"}]],
    )
    timestamp: str | None = Field(None, description="ISO 8601; default: now",
                                  examples=["2023-05-08T13:56:00Z"])
    metadata: dict[str, Any] | None = None


class AddEventsRequest(ScopeFields):
    """Coding-agent events: tool calls, file edits, errors, task start and end."""

    events: dict[str, Any] | list[dict[str, Any]] = Field(
        description="events with a type: tool_call, file_edit, error, task_start, task_end",
        examples=[[{"type": "tool_call", "tool": "Bash", "command": "pytest", "exit_code": 1}]],
    )
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None


class SearchRequest(ScopeFields):
    """A search: the query and its options."""

    query: str = Field(examples=["which package manager do we use?"])
    k: int = Field(10, ge=1, le=1000, description="hits at most")
    kinds: list[str] | None = None
    since: str | None = Field(None, description="only what happened from then on, ISO 8601")
    until: str | None = Field(None, description="only what happened until then, ISO 8601")
    as_of: str | None = Field(None, description="search the store as it was then, ISO 8601")
    budget_tokens: int | None = Field(None, ge=1, description="pack hits into this many tokens")
    include_episodes: bool = True
    include_superseded: bool = False
    include_archived: bool = False
    include_shared: bool = Field(True, description="also what other users shared with the "
                                 "caller (each such hit names its grant in shared_by)")
    trust: list[Literal["user", "agent", "external"]] | None = Field(
        None, description="only memories trusted so: user, agent, external")
    door: list[str] | None = Field(None, description="only memories that came in through one "
                                   "of these doors: sdk, rest, mcp, hook, cli, import, cube, "
                                   "proxy, agent")


class UpdateRequest(OwnerFields):
    """New text for a memory; the old version stays in its history."""

    text: str
    reason: str | None = None


class ForgetRequest(OwnerFields):
    """Hide a memory from search; it stays in the file and its history."""

    reason: str | None = None


class FlushRequest(_Request):
    """Wait for the background work queued so far."""

    timeout: float = Field(30.0, gt=0, le=600, description="seconds to wait at most")


class SearchResponse(BaseModel):
    """Search hits, best first."""

    hits: list[Hit]


class MemoryPage(BaseModel):
    """One page of memories, newest first; pass ``next_cursor`` as ``cursor`` for the next."""

    items: list[MemoryItem]
    next_cursor: str | None


class HistoryResponse(BaseModel):
    """Every version and status change of a memory, oldest first."""

    entries: list[HistoryEntry]


class Deleted(BaseModel):
    """The ids deleted for good: the memory and what was derived from it."""

    deleted: list[str]


class Flushed(BaseModel):
    """True if all the queued work is done; False if some still runs or failed."""

    done: bool


class Health(BaseModel):
    """The process is up."""

    status: Literal["ok"] = "ok"
    version: str


class Ready(BaseModel):
    """The store can be read."""

    status: Literal["ready"] = "ready"
    embedder: str
    auth: Literal["api_keys", "single_user"]
    embed_backlog: int = Field(0, description="passages stored and searchable by their words "
                               "whose vector is not computed yet")


class ErrorDetail(BaseModel):
    code: str = Field(description="stable, for programs: not_found, invalid_field, missing_key...")
    message: str = Field(description="for people: what was wrong and how to fix it")
    field: str | None = Field(None, description="the request field at fault, when one is")


class ErrorBody(BaseModel):
    """Every error response."""

    error: ErrorDetail


def error_responses(*statuses: tuple[int, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these ``(status, description)`` pairs, each in the error shape."""
    return {status: {"model": ErrorBody, "description": text} for status, text in statuses}


# What any route may answer before it runs: the body limit, the host guard, the query
# check, the server's state.
DOOR_ERRORS = error_responses(
    (400, "the body is not valid JSON, or its Content-Length is not a number"),
    (403, "the Host or Origin header does not name this server"),
    (413, "the body is over the server's size limit"),
    (422, "a field or query parameter of the request is not valid, unknown, or given twice; "
          "the message names it"),
    (503, "the store is closed or cannot be reached"),
)
AUTH_ERRORS = {**DOOR_ERRORS, **error_responses(
    (401, "no API key, or one that is not valid or was revoked"),
    (403, "the key lacks the scope, or asks for another org or user; or the Host or Origin "
          "header does not name this server"),
)}
ERRORS = {**AUTH_ERRORS, **error_responses(
    (404, "no memory (or job, or grant) with this id in the caller's scope"))}
