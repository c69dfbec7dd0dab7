"""Domain types: scopes, episodes, memories, agent events, search hits."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = [
    "AddResult",
    "AuditEntry",
    "AgentEvent",
    "Candidate",
    "KINDS",
    "ErrorEvent",
    "FileEdit",
    "Hit",
    "HeedRate",
    "HistoryEntry",
    "Injected",
    "Injection",
    "JobInfo",
    "Link",
    "Context",
    "TopicNode",
    "MemoryItem",
    "Page",
    "Provenance",
    "RetentionResult",
    "Scope",
    "Share",
    "Source",
    "Stats",
    "TaskEnd",
    "TaskStart",
    "ToolCall",
    "DOORS",
    "EPISODE_KINDS",
    "SOURCES",
    "TRUST_LEVELS",
    "new_id",
    "utcnow",
]

#: Kinds of the raw, verbatim rows; every other kind is derived by the memory agent.
EPISODE_KINDS = ("episode", "event")

Status = Literal["active", "superseded", "archived", "forgotten", "held"]


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


def new_id(prefix: str) -> str:
    """A unique id that sorts by creation time: ``prefix`` + 12 hex of ms + 10 random hex."""
    return f"{prefix}{int(time.time() * 1000):012x}{os.urandom(5).hex()}"


class Scope(BaseModel):
    """Who a memory belongs to. Each field is a hard partition checked in the store.

    ``org_id`` always applies (default ``"default"``); the others narrow a query when
    given and are recorded on everything written.

    ``nested`` widens a read to the levels above it: a project's reads also see the
    user's memories that belong to no project, and a user's reads the org's memories that
    belong to no user (and likewise for ``agent_id``); with no user named, only the org's.
    Other users, orgs and projects stay walled off. Writes go to exact scopes only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    org_id: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    nested: bool = False


Access = Literal["read", "write"]
GranteeKind = Literal["user", "agent", "team"]


class Share(BaseModel):
    """A grant: ``grantee`` may read (or read and write) the memories of one owner's scope.

    The scope shared is ``(org_id, user_id, project)``: ``project`` None shares every
    memory of the user, ``user_id`` None the org's own (a team's) memories. A grantee is
    a user, an agent (reads made with that ``agent_id``) or a team: the users who hold a
    grant on the team's own scope (``user_id`` = the team's id).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    org_id: str = "default"
    user_id: str | None = None
    project: str | None = None
    grantee_kind: GranteeKind = "user"
    grantee: str
    access: Access = "read"
    created_at: datetime
    created_by: str | None = None

    @property
    def principal(self) -> str:
        """``kind:id`` of the grantee, e.g. ``user:bob``."""
        return f"{self.grantee_kind}:{self.grantee}"

    def scope(self) -> Scope:
        """The owner's scope the grant opens (exact, not nested)."""
        return Scope(org_id=self.org_id, user_id=self.user_id, project=self.project)


#: The doors a memory can come in through: the Python API, the REST service, the MCP
#: server, a coding agent's hooks, the command line, an importer, a MemCube, the chat
#: proxy, and the agent-facing layer used directly (``unknown``: stored before remem
#: recorded doors).
DOORS = ("sdk", "rest", "mcp", "hook", "cli", "import", "cube", "proxy", "agent")
Door = Literal["sdk", "rest", "mcp", "hook", "cli", "import", "cube", "proxy", "agent", "unknown"]
#: Who said what a memory holds: the user (or a named person), the assistant, tool output
#: (an agent event, a command's output, a fetched page), a system message, an imported
#: file, a MemCube.
SOURCES = ("user", "assistant", "tool", "system", "import", "cube")
SourceName = Literal["user", "assistant", "tool", "system", "import", "cube"]
#: How far what a memory holds is trusted, most trusted first: a person's own words, the
#: agent's words, text from anywhere (tool output, system text, imports, cubes).
TRUST_LEVELS = ("user", "agent", "external")
Trust = Literal["user", "agent", "external"]


class Provenance(BaseModel):
    """Where a memory came from: the ``door`` it came in through, the ``source`` that said
    it, and the ``trust`` that earns it (see :mod:`remem.govern.provenance`). A derived
    memory has the provenance of the least trusted episode it was derived from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    door: Door = "sdk"
    source: SourceName = "user"
    trust: Trust = "user"


class MemoryItem(BaseModel):
    """One memory: a raw episode (kind ``episode`` or ``event``) or a derived memory."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    text: str
    status: Status = "active"
    subject: str | None = None
    role: str | None = None
    maturity: str = "candidate"
    version: int = 1
    pinned: bool = False
    org_id: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    event_time: datetime | None = None
    observed_at: datetime
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    sources: list[str] = Field(default_factory=list, description="ids of source episodes")
    provenance: Provenance = Field(default_factory=Provenance, description="the door it came "
                                   "in through, who said it, and how far it is trusted")

    @property
    def is_episode(self) -> bool:
        """True for a raw, verbatim turn or event."""
        return self.kind in EPISODE_KINDS


class Source(BaseModel):
    """An episode a memory came from, with the metadata given when it was added."""

    model_config = ConfigDict(frozen=True)

    id: str
    role: str | None
    text: str
    session_id: str | None
    event_time: datetime | None
    metadata: dict[str, Any]


class Hit(BaseModel):
    """One search result: the memory, its fused score, how it was found, its sources."""

    model_config = ConfigDict(frozen=True)

    memory: MemoryItem
    score: float
    channels: dict[str, int] = Field(description="recall channel -> rank (1 = best) in it")
    reasons: list[str] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    tokens: int = 0
    shared_by: str | None = Field(None, description="id of the grant through which another "
                                  "user's scope shared this memory (None: the caller's own)")


class AddResult(BaseModel):
    """What ``add`` returns at once: one episode id per message, and queued job ids."""

    model_config = ConfigDict(frozen=True)

    episode_ids: list[str]
    job_ids: list[str]


class HistoryEntry(BaseModel):
    """One change in a memory's life: its creation, an update, a forget, a supersession."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    version: int
    action: str
    text: str
    status: str
    reason: str | None
    at: datetime


class Stats(BaseModel):
    """Counts and sizes of a store."""

    model_config = ConfigDict(frozen=True)

    path: str
    episodes: int
    memories: int
    by_kind: dict[str, int]
    by_status: dict[str, int]
    passages: int
    vectors: int
    jobs: dict[str, int]
    embedder: str
    schema_version: int
    size_bytes: int
    #: passages stored (and found by their words) whose vector is not computed yet
    embed_backlog: int = 0


class RetentionResult(BaseModel):
    """What one run of the retention policy did (with ``dry_run``: would do), by action.

    ``compacted`` are episodes whose text went for good, ``noted`` the memories derived
    from them, which stay with a note in their history; ``archived`` and ``purged`` are
    memories (``purged`` also holds what was derived from them and went with them)."""

    model_config = ConfigDict(frozen=True)

    at: datetime = Field(description="the present the ages were counted from")
    dry_run: bool = False
    compacted: list[str] = Field(default_factory=list)
    noted: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list)
    purged: list[str] = Field(default_factory=list)


#: The kinds of memory an extractor may propose.
KINDS = ("preference", "persona", "profile", "project", "convention", "pitfall", "procedure",
         "skill", "files", "decision", "fact", "event")
Kind = Literal["preference", "persona", "profile", "project", "convention", "pitfall", "procedure",
               "skill", "files", "decision", "fact", "event"]
#: What a statement does: says something new, changes or corrects something known, asks
#: to forget, sets a standing rule, or nothing worth keeping.
Intent = Literal["statement", "update", "correction", "forget", "instruction", "chitchat", "keep"]
#: Where a memory belongs: the user everywhere, the project, or only this session.
Level = Literal["user", "project", "session"]


class Candidate(BaseModel):
    """A memory an extractor proposes, with where it came from and why.

    ``text`` is short and in the language it was said in. ``subject`` is who or what it
    is about: the speaker's name for what a named speaker says about themselves, ``"user"``
    for the generic user role, the project (or ``"project"``, ``"environment"``) for facts
    about the work. ``rule`` names what produced it, for explanations. ``intent`` says
    whether it updates or corrects something known; ``level`` whether it holds for the
    user in every project (stored outside any project) or for this project.
    ``replaces_only`` marks a change said too briefly to stand alone ("switched to tabs"):
    it is kept only when it replaces a known memory. ``said`` is the statement in the
    speaker's own words, when ``text`` rewords it: that is what is read against the
    memories it may repeat or replace.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    text: str = Field(min_length=1)
    subject: str
    entities: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    event_time: datetime | None = None
    observed_at: datetime | None = None
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    source_ids: list[str] = Field(default_factory=list)
    rule: str
    intent: Intent = "statement"
    level: Level = "project"
    replaces_only: bool = False
    said: str | None = None


class JobInfo(BaseModel):
    """A background job as ``remem jobs`` shows it."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    state: str = Field(description="queued, running, done, failed or cancelled")
    priority: int
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None
    result: dict[str, Any] | None = None
    created_at: datetime
    updated_at: datetime


class Context(BaseModel):
    """A ready context block for a model: the text and the memories in it.

    ``text`` holds the core block (profile, preferences, conventions, pitfalls: stable
    order, so prompt caches hit), then the session's working memory, then what the query
    found that neither had.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    memories: list[MemoryItem]
    tokens: int
    core_tokens: int = Field(description="tokens of the stable core block at the start of text")
    core_text: str = Field("", description="the stable core block itself: the start of text")
    sections: dict[str, list[str]] = Field(description="section -> memory ids, in order")
    channels: dict[str, list[str]] = Field(
        default_factory=dict, description="memory id -> the recall channels that found it "
        "(memories of the recall section only)")


class TopicNode(BaseModel):
    """A node of the memory mind map: a topic with its subtopics and memories."""

    model_config = ConfigDict(frozen=True)

    id: int | None
    label: str
    keywords: list[str] = Field(default_factory=list)
    size: int = 0
    children: list[TopicNode] = Field(default_factory=list)
    memories: list[MemoryItem] = Field(default_factory=list)

    def render(self, indent: int = 0) -> str:
        """The tree as indented text, one line per topic and memory."""
        pad = "  " * indent
        lines = [f"{pad}{self.label} ({self.size})"]
        lines += [f"{pad}  - [{m.kind}] {m.text}" for m in self.memories]
        lines += [c.render(indent + 1) for c in self.children]
        return "\n".join(lines)


class Link(BaseModel):
    """An edge of the memory network, seen from one memory: its type, which way it points
    (``out``: from this memory to the other), its weight and the memory at the other end."""

    model_config = ConfigDict(frozen=True)

    type: str
    direction: Literal["out", "in"]
    weight: float
    memory: MemoryItem


class Injected(BaseModel):
    """One memory (or episode) handed to a model in an injection, at its rank in the text."""

    model_config = ConfigDict(frozen=True)

    memory_id: str
    kind: str
    rank: int = Field(description="1 = first in the text given")
    section: str = Field(description="where in the text: core, working, recall, pitfall...")
    channels: list[str] = Field(default_factory=list, description="recall channels that found it")
    used: bool = Field(False, description="the agent used it afterwards (used() or helpful feedback)")


class Injection(BaseModel):
    """What remem put in front of a model once: when, for whom, through which door, for
    which query, and the memories in the text, in order."""

    model_config = ConfigDict(frozen=True)

    id: str
    at: datetime
    door: str
    org_id: str = "default"
    user_id: str | None = None
    agent_id: str | None = None
    project: str | None = None
    session_id: str | None = None
    query: str | None = None
    tokens: int
    text: str | None = Field(None, description="the text the model was given (its start)")
    items: list[Injected] = Field(default_factory=list)


class AuditEntry(BaseModel):
    """One change or read through a service: when, through which door, by whom (the user
    and the API key), what (the action and the memory or job it named), and how it ended.
    ``org_id`` and ``user_id`` are the walls it sits in: the data it touched."""

    model_config = ConfigDict(frozen=True)

    id: str
    at: datetime
    door: str = Field(description="rest, mcp, cli, or retention (the retention policy)")
    actor: str | None = Field(None, description="who: the key's user, the agent's user or the "
                              "account that ran the command")
    key_id: str | None = None
    action: str = Field(description="e.g. 'GET /v1/memories/{memory_id}', 'memory_remember', "
                        "'forget'")
    target: str | None = Field(None, description="the memory, job or key it named")
    org_id: str = "default"
    user_id: str | None = None
    status: int | None = Field(None, description="the HTTP status; for MCP and the CLI 0 when "
                               "it succeeded, 1 when it failed")


class HeedRate(BaseModel):
    """Of the memories of one kind injected through one door, how many were then used."""

    model_config = ConfigDict(frozen=True)

    door: str
    kind: str
    injected: int
    used: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float:
        """The heed rate: used / injected (0 when nothing was injected)."""
        return self.used / self.injected if self.injected else 0.0


class Page(list):  # type: ignore[type-arg]
    """A list of memories with ``next_cursor`` for the page after it (None at the end)."""

    def __init__(self, items: list[MemoryItem], next_cursor: str | None) -> None:
        super().__init__(items)
        self.next_cursor = next_cursor


# --- coding-agent events -------------------------------------------------------------

class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")

    timestamp: datetime | None = None
    session_id: str | None = None


class ToolCall(_Event):
    """A tool the agent ran, e.g. a shell command, with its exit code and output tail."""

    type: Literal["tool_call"]
    tool: str = "Bash"
    command: str | None = None
    input: dict[str, Any] | None = None
    exit_code: int | None = None
    output: str | None = None


class FileEdit(_Event):
    """A file the agent created or changed."""

    type: Literal["file_edit"]
    path: str
    change: str | None = None


class ErrorEvent(_Event):
    """An error the agent hit outside a tool call."""

    type: Literal["error"]
    message: str
    detail: str | None = None


class TaskStart(_Event):
    """The agent started a task."""

    type: Literal["task_start"]
    task: str


class TaskEnd(_Event):
    """The agent finished a task, with how it went."""

    type: Literal["task_end"]
    task: str | None = None
    outcome: str | None = None


AgentEvent = Annotated[
    ToolCall | FileEdit | ErrorEvent | TaskStart | TaskEnd, Field(discriminator="type")
]


def render_event(event: ToolCall | FileEdit | ErrorEvent | TaskStart | TaskEnd) -> str:
    """The searchable one-paragraph text of an event."""
    if isinstance(event, ToolCall):
        head = f"{event.tool}: {event.command}" if event.command else f"{event.tool} {event.input}"
        parts = [head]
        if event.exit_code is not None:
            parts.append(f"exit code {event.exit_code}")
        if event.output:
            parts.append(event.output[-2000:])
        return "\n".join(parts)
    if isinstance(event, FileEdit):
        return f"edited {event.path}" + (f": {event.change}" if event.change else "")
    if isinstance(event, ErrorEvent):
        return f"error: {event.message}" + (f"\n{event.detail}" if event.detail else "")
    if isinstance(event, TaskStart):
        return f"task started: {event.task}"
    return f"task ended: {event.task or ''} outcome: {event.outcome or 'unknown'}".strip()
