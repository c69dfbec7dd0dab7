"""The remem MCP server: memory tools, resources and prompts for coding agents.

Built on the official MCP Python SDK (``mcp`` 2.x, ``MCPServer``). Every tool is a thin
door over :class:`~remem.integrations.agent.AgentMemory` in one fixed scope (the user
and project given when the server starts); library errors come back to the model as
tool errors with the library's message.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import Field

from ..errors import ConfigError, RememError
from ..integrations.agent import AgentMemory, RememberKind, Verdict
from ..integrations.scope import AgentScope
from ..memory import Memory

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["INSTRUCTIONS", "build_server", "serve"]

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
remem is this project's long-term memory: conventions, pitfalls (each with its fix),
preferences, decisions and what happened in earlier sessions.
- At the start of a task call memory_bootstrap once and follow what it says.
- Before editing files call memory_for_files with their paths.
- Before a shell command you have not run in this project, call memory_check_command.
- When stuck, or after an error, call memory_recall with the question or the error text.
- When you learn something durable (a convention, a pitfall and its fix, a user
  preference, a decision), call memory_remember with one short, self-contained sentence.
- If a memory was wrong or out of date, call memory_feedback (or memory_update).
Memories marked "stale?" cite code that changed since: check before relying on them."""

Budget = Annotated[int, Field(ge=50, le=8000, description="Most tokens the answer may use.")]
MemoryId = Annotated[str, Field(min_length=1, max_length=200,
                                description="A memory id as shown in brackets, e.g. m_01a2...")]
KIND_NAMES = ("pitfall", "convention", "preference", "project", "decision", "procedure",
              "skill", "files", "profile", "fact", "episode", "event")
# A kind is a string with its choices in the schema; remem itself checks it, so a wrong
# one gets a short error naming the choices rather than the SDK's validation dump.
Kind = Annotated[str, Field(json_schema_extra={"enum": list(KIND_NAMES)})]


def _sdk() -> type[MCPServer]:
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise ConfigError('the MCP server needs the MCP SDK 2.x: pip install "remem[server]"') from None
    return MCPServer


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    """Library errors become tool errors with their message, for the model to act on."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except RememError as exc:
        raise ToolError(str(exc)) from exc


def _audited(register: Callable[..., Any], agent: AgentMemory) -> Callable[..., Any]:
    """``server.tool`` that registers each tool so that every call of it is recorded in the
    audit log (the tool, the memory it named, whether it succeeded)."""

    def tool(*args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        decorate = register(*args, **kwargs)

        def wrap(fn: Callable[..., Any]) -> Any:
            @functools.wraps(fn)
            def call(*a: Any, **kw: Any) -> Any:
                target = next((str(v) for k, v in kw.items() if k.endswith("id") and v), None)
                status = 1
                try:
                    out = fn(*a, **kw)
                    status = 0
                    return out
                finally:
                    try:
                        agent.memory.record_access(
                            door="mcp", action=fn.__name__, org_id=agent.scope.org_id,
                            user_id=agent.scope.user_id, actor=agent.scope.user_id,
                            target=target, status=status)
                    except Exception:  # the answer goes back all the same
                        log.exception("could not record %s in the audit log", fn.__name__)

            return decorate(call)

        return wrap

    return tool


def build_server(agent: AgentMemory) -> MCPServer:
    """An MCP server whose tools read and write ``agent``'s memory in its scope."""
    server_class = _sdk()
    from mcp.server.mcpserver import ResourceSecurity
    from mcp.types import ToolAnnotations

    from .. import __version__

    server = server_class("remem", instructions=INSTRUCTIONS, version=__version__,
                          log_level="WARNING")
    server.tool = _audited(server.tool, agent)  # type: ignore[method-assign]
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    @server.tool(annotations=reads, structured_output=False)
    def memory_bootstrap(
        budget_tokens: Budget = 800,
        query: Annotated[str | None, Field(
            max_length=2000, description="Optional: the task at hand, to add what is known "
            "about it.")] = None,
    ) -> str:
        """Get the digest of what is known about this project and user: pitfalls with their
        fixes, conventions, preferences, decisions. Call it once at the start of a task,
        before anything else, and follow it. Each line is `- [kind] text (id ...)`."""
        with _as_tool_errors():
            return agent.bootstrap(budget_tokens=budget_tokens, query=query or None,
                                   door="mcp:memory_bootstrap")

    @server.tool(annotations=reads, structured_output=False)
    def memory_recall(
        query: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "What you want to know, in plain words, e.g. 'how do we run the tests?'"))],
        files: Annotated[list[str] | None, Field(max_length=50, description=(
            "Optional paths the question is about (path or path:START-END)."))] = None,
        error: Annotated[str | None, Field(max_length=20000, description=(
            "Optional error text or stack trace you hit; its tail is used."))] = None,
        kinds: Annotated[list[Kind] | None, Field(description=(
            "Optional: only these kinds, e.g. ['pitfall'] or ['convention', 'decision']."))] = None,
        budget_tokens: Budget = 800,
    ) -> str:
        """Search this project's memory: conventions, pitfalls and fixes, decisions, earlier
        sessions. Use it when you are unsure how something is done here, or right after an
        error (pass the error text). Returns the best memories first; `stale?` marks one
        whose cited code changed since."""
        with _as_tool_errors():
            return agent.recall(query, files=files or (), error=error, kinds=kinds,
                                budget_tokens=budget_tokens, door="mcp:memory_recall")

    @server.tool(annotations=writes, structured_output=False)
    def memory_remember(
        text: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "One short, self-contained statement, e.g. 'Run tests with `make test`, not "
            "pytest directly'. A pitfall states its fix."))],
        kind: Annotated[str, Field(json_schema_extra={"enum": list(get_args(RememberKind))},
                                   description=(
            "pitfall (a trap and its fix), convention (how things are done here), preference "
            "(what the user likes), project (a fact about the project), decision (a choice and "
            "why), procedure (steps that work), files (files that go together), fact."))] = "fact",
        subject: Annotated[str | None, Field(max_length=200, description=(
            "Optional: what it is about, e.g. a tool, a module, 'user'."))] = None,
        files: Annotated[list[str] | None, Field(max_length=20, description=(
            "Optional files it is about (path or path:START-END); they are cited, so the "
            "memory is flagged when that code changes."))] = None,
    ) -> str:
        """Propose a durable memory for this project: something a later session should know.
        The memory agent merges it with what is known (no duplicates). Do not store secrets,
        passing remarks or what the code itself makes obvious."""
        with _as_tool_errors():
            item = agent.remember(text, kind=kind, subject=subject, files=files or ())
            return f"remembered as {item.id} [{item.kind}]: {item.text}"

    @server.tool(annotations=writes, structured_output=False)
    def memory_update(
        memory_id: MemoryId,
        text: Annotated[str, Field(min_length=1, max_length=4000, description="The corrected text.")],
        reason: Annotated[str | None, Field(max_length=500, description="Why it changed.")] = None,
    ) -> str:
        """Correct a memory's text. The old version stays in its history."""
        with _as_tool_errors():
            item = agent.update(memory_id, text, reason=reason)
            return f"updated {item.id} to version {item.version}: {item.text}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                             open_world_hint=False), structured_output=False)
    def memory_forget(
        memory_id: MemoryId,
        reason: Annotated[str | None, Field(max_length=500, description="Why it is wrong.")] = None,
    ) -> str:
        """Stop a memory from being recalled (it was wrong or no longer applies). It stays in
        its history and can be looked up by id."""
        with _as_tool_errors():
            item = agent.forget(memory_id, reason=reason)
            return f"forgot {item.id}"

    @server.tool(annotations=writes, structured_output=False)
    def memory_feedback(
        memory_id: MemoryId,
        verdict: Annotated[Verdict, Field(description=(
            "helpful (it helped), wrong (it is not true), stale (it was true, not any more)."))],
        note: Annotated[str | None, Field(max_length=1000, description="Optional detail.")] = None,
    ) -> str:
        """Say whether a memory you used helped, was wrong, or is out of date; this is how
        memory learns what to trust."""
        with _as_tool_errors():
            item = agent.feedback(memory_id, verdict, note=note)
            return f"noted: {item.id} {verdict} (status {item.status})"

    @server.tool(annotations=reads, structured_output=False)
    def memory_for_files(
        files: Annotated[list[str], Field(min_length=1, max_length=50, description=(
            "The paths you are about to edit, relative to the project root or absolute."))],
        budget_tokens: Budget = 800,
    ) -> str:
        """Get what is known about files before you edit them: conventions, pitfalls and
        decisions that cite or name them (`stale?` when the cited code changed since), and
        their recent edits."""
        with _as_tool_errors():
            return agent.for_files(files, budget_tokens=budget_tokens)

    @server.tool(annotations=reads, structured_output=False)
    def memory_check_command(
        command: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "The exact shell command you are about to run."))],
    ) -> str:
        """Check a shell command before running it: known pitfalls for its program in this
        project (each with its fix) and earlier failures that said something is missing.
        If a pitfall applies, use the fix it gives instead."""
        with _as_tool_errors():
            return agent.render_check(agent.check_command(command),
                                      door="mcp:memory_check_command")

    @server.tool(annotations=reads, structured_output=False)
    def memory_list(
        kinds: Annotated[list[Kind] | None, Field(description="Optional: only these kinds.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 20,
        cursor: Annotated[str | None, Field(description=(
            "The cursor printed at the end of the previous page."))] = None,
        include_episodes: Annotated[bool, Field(description=(
            "Also list raw turns and events, not only memories."))] = False,
    ) -> str:
        """List this project's memories, newest first, one page at a time."""
        with _as_tool_errors():
            return agent.listing(kinds=kinds, limit=limit, cursor=cursor,
                                 include_episodes=include_episodes)

    @server.tool(annotations=reads, structured_output=False)
    def memory_get(memory_id: MemoryId) -> str:
        """Get one memory in full: its text, status, the files it cites (and whether they
        changed), its sources and its history."""
        with _as_tool_errors():
            return agent.describe(memory_id)

    @server.tool(annotations=writes, structured_output=False)
    def memory_do(
        text: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "The user's request in their words, English or Chinese, e.g. 'Record yesterday's "
            "meeting with Li Lei and remind me the day after tomorrow to write the report'"))],
        dry_run: Annotated[bool, Field(description="Only show the plan; change nothing.")] = False,
    ) -> str:
        """Carry out a request about memory in plain language: it becomes a plan of memory
        operations (remember, update, forget, search, summarise, link, remind, pin, share)
        run in one transaction. Returns the plan and what each step did, as JSON."""
        with _as_tool_errors():
            result = agent.memory.do(text, dry_run=dry_run, door=agent.door,
                                     **agent.scope.owner())
            return result.model_dump_json(exclude_none=True, indent=1)

    @server.tool(annotations=reads, structured_output=False)
    def team_plan(
        request: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "The requirement the leader has to split among roles."))],
        leader: Annotated[str, Field(min_length=1, max_length=200, description=(
            "The leader's agent id."))] = "leader",
    ) -> str:
        """How the user taught the leader to split work like this: each applicable team
        skill with its roles (agent ids), their order, dependencies and checks, as JSON;
        `"skills": []` when none applies."""
        with _as_tool_errors():
            where = {k: v for k, v in agent.scope.owner().items() if k != "agent_id"}
            return agent.memory.plan(request, agent_id=leader, **where).model_dump_json(indent=1)

    @server.tool(annotations=reads, structured_output=False)
    def skill_list() -> str:
        """List the skills learned in this project: procedures that worked several times,
        each with its name. Read one with skill_get before doing that task."""
        with _as_tool_errors():
            return agent.skills_text()

    @server.tool(annotations=reads, structured_output=False)
    def skill_get(
        name: Annotated[str, Field(min_length=1, max_length=200, description=(
            "A skill's name or id, as skill_list shows it."))],
    ) -> str:
        """Get a skill's instructions (its SKILL.md) by name or id."""
        with _as_tool_errors():
            return agent.skill(name)

    @server.resource("memory://core", name="core", mime_type="text/markdown",
                     description="The project's core memory: pitfalls, conventions, "
                     "preferences, decisions.")
    def core() -> str:
        return agent.bootstrap(budget_tokens=2000)

    # {+path} keeps the slashes of a path; reading it only looks memories up
    @server.resource("memory://file/{+path}", name="file", mime_type="text/markdown",
                     description="What is known about one file of the project.",
                     security=ResourceSecurity(exempt_params={"path"}))
    def file(path: str) -> str:
        return agent.for_files([path])

    @server.prompt(description="Save what this session taught as durable memories.")
    def remember(
        what: Annotated[str | None, Field(description="Optional: what to remember.")] = None,
    ) -> str:
        focus = f"Remember this: {what}\n\n" if what else ""
        return (f"{focus}Review what we did and learned. For each durable lesson (a convention, "
                "a pitfall and its fix, a preference, a decision), call memory_remember once "
                "with one short self-contained sentence and the right kind; cite files with "
                "`files` when it is about code. Skip anything already known, temporary or secret.")

    @server.prompt(description="Recall what memory knows about a topic.")
    def recall(query: Annotated[str, Field(description="The topic or question.")]) -> str:
        try:
            found = agent.recall(query)
        except RememError as exc:
            found = f"(memory could not be searched: {exc})"
        return (f"Here is what project memory knows about {query!r}:\n\n{found}\n\n"
                "Use it where it applies; call memory_feedback on any memory that turns out "
                "wrong or stale.")

    return server


def serve(*, transport: Literal["stdio", "http"] = "stdio", host: str = "127.0.0.1",
          port: int = 8421, db: str | os.PathLike[str] | None = None,
          scope: AgentScope) -> None:
    """Run the MCP server on stdio or streamable HTTP (``http://host:port/mcp``) until it
    is stopped; the store is opened first and closed after."""
    _sdk()  # say what to install before the store is opened
    memory = Memory(db)
    try:
        server = build_server(AgentMemory(memory, scope, door="mcp"))
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
    finally:
        memory.close()
