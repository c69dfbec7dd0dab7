"""``remem import`` and ``remem export``: JSON Lines in and out of a store, and agent
instruction files (CLAUDE.md, AGENTS.md, Cursor rules) in and AGENTS.md out.

An import file is checked in full before anything is added, so a bad line leaves the
store as it was. A line is a message dict (``role``/``speaker``, ``content``/``text``,
``metadata``, ``timestamp``), an agent event dict (with ``type``), or a line of
``remem export`` (with ``id`` and ``kind``); any of them may carry scope keys.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Annotated, Any, Literal, cast

import typer

from .._inputs import parse_events, parse_messages, parse_scope, parse_time
from ..bench.progress import Reporter
from ..config import Config, default_path, is_url
from ..errors import ValidationError
from ..integrations.scope import AgentScope, resolve_scope
from ..memory import Memory
from ..model import EPISODE_KINDS, AddResult, Scope
from .app import (
    AgentOpt,
    DbOpt,
    JsonOpt,
    OrgOpt,
    ProjectOpt,
    ScopeArgs,
    SessionOpt,
    UserOpt,
    app,
    boundary,
    fail,
    open_memory,
    owner,
    scope,
)
from .output import err_console, print_json

SCOPE_KEYS = ("org_id", "user_id", "agent_id", "project", "session_id")
BATCH = 64
PROGRESS_FROM = 500  # lines; shorter files finish before a bar would help

Kind = Literal["message", "event"]


class LineError(Exception):
    """A line of an import file that cannot be imported; the message names the line."""


@dataclass(frozen=True)
class Entry:
    """One checked line of an import file, ready to add."""

    line: int
    scope: Scope
    kind: Kind
    body: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    forgotten: bool = False
    timestamp: str | None = None  # of an exported event that had none of its own

    def group(self) -> tuple[Any, ...]:
        """Entries with equal groups can be added in one call."""
        meta = json.dumps(self.metadata, sort_keys=True, default=str)
        return self.scope, self.kind, meta, self.timestamp


@dataclass
class Plan:
    """What an import file holds: the entries to add and the lines skipped."""

    entries: list[Entry] = field(default_factory=list)
    skipped: int = 0


# --- reading and checking -------------------------------------------------------------

def read_lines(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line, decoded as UTF-8."""
    for number, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise LineError(
                f"line {number}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        if text.strip():
            yield number, text


def _field_error(number: int, exc: ValidationError, prefix: str) -> LineError:
    where = exc.field.removeprefix(prefix).lstrip(".")
    return LineError(f"line {number}: {where + ': ' if where else ''}{exc.problem}")


@dataclass(frozen=True)
class Exported:
    """What a line of ``remem export`` becomes: a message or an event to add again."""

    kind: Kind
    body: dict[str, Any]
    metadata: dict[str, Any]
    forgotten: bool
    timestamp: str | None = None


def from_export(obj: dict[str, Any]) -> Exported | None:
    """The message or event of a line of ``remem export``; None for a derived memory,
    which import cannot re-create (the memory agent derives those)."""
    if obj.get("kind") not in EPISODE_KINDS:
        return None
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata", f"expected an object, got {type(metadata).__name__}")
    metadata = dict(metadata)
    forgotten = obj.get("status") == "forgotten"
    if obj["kind"] == "event" and isinstance(metadata.get("event"), dict):
        event = dict(metadata.pop("event"))
        stamp = obj.get("event_time") if event.get("timestamp") is None else None
        parse_time(stamp, "event_time")
        return Exported("event", event, metadata, forgotten, stamp)
    body: dict[str, Any] = {"content": obj.get("text"), "metadata": metadata}
    if obj.get("role") is not None:
        body["role"] = obj["role"]
    if obj.get("event_time") is not None:
        body["timestamp"] = obj["event_time"]
    return Exported("message", body, {}, forgotten)


def _load(number: int, text: str) -> dict[str, Any]:
    try:
        obj = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        raise LineError(f"line {number}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise LineError(f"line {number}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _take_scope(obj: dict[str, Any], defaults: ScopeArgs) -> Scope:
    """The line's scope, removed from ``obj``: the scope options given on the command line
    win, the line's keys fill in the rest; an event keeps its own ``session_id``, a field
    of events."""
    keep = {"session_id"} if "type" in obj else set()
    given = {key: obj[key] if key in keep else obj.pop(key)
             for key in SCOPE_KEYS if obj.get(key) is not None}
    for key in set(SCOPE_KEYS) - keep:
        obj.pop(key, None)
    return parse_scope(**{**given, **defaults})


def parse_line(number: int, text: str, defaults: ScopeArgs, max_chars: int) -> Entry | None:
    """Check one line; the Entry to add, None for a line to skip, or LineError."""
    obj = _load(number, text)
    kind: Kind = "event" if "type" in obj else "message"
    extra: dict[str, Any] = {}
    prefix = ""
    try:
        line_scope = _take_scope(obj, defaults)
        if "id" in obj and "kind" in obj:
            exported = from_export(obj)
            if exported is None:
                return None
            kind, obj = exported.kind, exported.body
            extra = {"metadata": exported.metadata, "forgotten": exported.forgotten,
                     "timestamp": exported.timestamp}
        prefix = "events[0]" if kind == "event" else "messages[0]"
        if kind == "event":
            parse_events([obj])
        else:
            parse_messages([obj], max_chars)
    except ValidationError as exc:
        raise _field_error(number, exc, prefix) from None
    return Entry(number, line_scope, kind, obj, **extra)


def plan_import(lines: Iterable[tuple[int, str]], defaults: ScopeArgs, max_chars: int) -> Plan:
    """Check every line; the entries to add, or LineError for the first bad line."""
    plan = Plan()
    for number, text in lines:
        entry = parse_line(number, text, defaults, max_chars)
        if entry is None:
            plan.skipped += 1
        else:
            plan.entries.append(entry)
    return plan


# --- adding ---------------------------------------------------------------------------

def batches(entries: list[Entry], size: int = BATCH) -> Iterator[list[Entry]]:
    """Runs of consecutive entries that share a group, at most ``size`` long."""
    batch: list[Entry] = []
    for entry in entries:
        if batch and (len(batch) >= size or entry.group() != batch[0].group()):
            yield batch
            batch = []
        batch.append(entry)
    if batch:
        yield batch


def add_batch(m: Memory, batch: list[Entry]) -> AddResult:
    """Add one batch in one call, then forget what was forgotten when it was exported."""
    first, where = batch[0], batch[0].scope
    bodies = [entry.body for entry in batch]
    if first.kind == "event":
        result = m.add_events(bodies, metadata=first.metadata or None, timestamp=first.timestamp,
                              org_id=where.org_id, user_id=where.user_id,
                              agent_id=where.agent_id, project=where.project,
                              session_id=where.session_id, door="import")
    else:
        result = m.add(bodies, org_id=where.org_id, user_id=where.user_id,
                       agent_id=where.agent_id, project=where.project,
                       session_id=where.session_id, door="import")
    for entry, episode_id in zip(batch, result.episode_ids, strict=True):
        if entry.forgotten:
            m.forget(episode_id, reason="forgotten before it was exported", org_id=where.org_id,
                     user_id=where.user_id, agent_id=where.agent_id, project=where.project)
    return result


def run_import(m: Memory, entries: list[Entry], wait: bool) -> AddResult:
    """Add the entries batch by batch, with progress on stderr for a long file (a bar on
    a terminal, else a plain line every few batches or seconds)."""
    episode_ids: list[str] = []
    job_ids: list[str] = []
    shown = Reporter("importing", len(entries), every=BATCH * 4) \
        if len(entries) >= PROGRESS_FROM else None
    try:
        for batch in batches(entries):
            result = add_batch(m, batch)
            if wait:  # embedding is the slow part, so the progress follows it
                m.flush()
            episode_ids += result.episode_ids
            job_ids += result.job_ids
            if shown is not None:
                shown.advance(len(batch))
    finally:
        if shown is not None:
            shown.close()
    return AddResult(episode_ids=episode_ids, job_ids=job_ids)


def _open_source(source: str) -> IO[bytes]:
    return sys.stdin.buffer if source == "-" else open(source, "rb")


INSTRUCTION_FORMATS = ("claude-md", "agents-md", "cursor-rules")


@app.command("import")
def import_(
    source: Annotated[str, typer.Argument(
        metavar="FILE|FORMAT", help="A JSON Lines file, one message, event or exported memory a "
        "line (- reads stdin); or the format of agent instructions to turn into memories: "
        "claude-md, agents-md or cursor-rules, followed by its PATH.")],
    path: Annotated[Path | None, typer.Argument(
        metavar="[PATH]", help="With a FORMAT: the file (or rules folder) to read; default "
        "CLAUDE.md, AGENTS.md or .cursor/rules of the project.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="With a FORMAT: show the memories it would propose, add nothing.")] = False,
    file_format: Annotated[str | None, typer.Option(
        "--format", help="pam: FILE is a Portable AI Memory (PAM 1.0) memory-store.json, "
        "checked in full, then its memories added in one transaction.")] = None,
    wait: Annotated[bool, typer.Option(
        help="Wait until everything is embedded (searchable by meaning).")] = True,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Add the messages of a JSON Lines file, or turn agent instruction files into memories.

    JSON Lines: a bad line stops it before anything is added. Scope keys on a line
    (user_id, session_id, project, agent_id, org_id) are used where no scope option is
    given; a given option wins (an export of alice imported with --user bob goes to bob).
    Derived memories in an export are skipped: import adds episodes only.

    Instructions (claude-md, agents-md, cursor-rules): each rule becomes a typed memory
    (convention, pitfall, preference, project, decision, procedure) citing its file and
    lines, in the scope of the project (default user: $REMEM_USER or the OS user).

    PAM (--format pam): the memories of a memory-store.json, each kept with its content as
    the source episode; its checksum and content hashes must match.

    Examples: remem import chat.jsonl --user alice ; remem import claude-md CLAUDE.md ;
    remem import --format pam memory-store.json --user alice
    """
    if file_format is not None:
        if file_format != "pam":
            fail(f"unknown import format {file_format!r}", hint="use pam")
        _import_pam(source, wait=wait, db=db, org=org, user=user, agent=agent, project=project,
                    as_json=as_json)
        return
    if source in INSTRUCTION_FORMATS and (path is not None or not Path(source).exists()):
        _import_instructions(source, path, dry_run=dry_run, wait=wait, db=db, org=org, user=user,
                             agent=agent, project=project, as_json=as_json)
        return
    if path is not None:
        fail(f"{source!r} is not a format of instructions; use {', '.join(INSTRUCTION_FORMATS)} "
             "before PATH, or give one JSON Lines FILE")
    name = "stdin" if source == "-" else source
    with boundary():
        max_chars = Config.from_env().max_text_chars
        stream = _open_source(source)
        try:
            plan = plan_import(read_lines(stream), scope(org, user, agent, project, session),
                               max_chars)
        except LineError as exc:
            fail(f"{name}, {exc}; nothing was imported")
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    with open_memory(db, create=True) as m:
        result = run_import(m, plan.entries, wait)
    if as_json:
        print_json({**result.model_dump(mode="json"), "skipped": plan.skipped})
        return
    skipped = f" ({_count(plan.skipped, 'derived memory', 'derived memories')} skipped)"
    count = _count(len(result.episode_ids), "episode", "episodes")
    typer.echo(f"imported {count} from {name}{skipped if plan.skipped else ''}")


def _import_pam(source: str, *, wait: bool, db: str | None, org: str | None, user: str | None,
                agent: str | None, project: str | None, as_json: bool) -> None:
    name = "stdin" if source == "-" else source
    with boundary():
        stream = _open_source(source)
        try:
            raw = stream.read()
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{name} is not a JSON document: {exc}; nothing was imported")
    with open_memory(db, create=True) as m:
        try:
            ids = m.import_pam(document, **owner(org, user, agent, project))
        except ValidationError as exc:
            fail(f"{name}: {exc}; nothing was imported", kind="ValidationError")
        if wait:
            m.flush()
    if as_json:
        print_json({"imported": len(ids), "memory_ids": ids})
        return
    typer.echo(f"imported {_count(len(ids), 'memory', 'memories')} from {name} (PAM)")


def _default_source(fmt: str, root: Path) -> Path:
    if fmt == "claude-md":
        return root / "CLAUDE.md"
    if fmt == "agents-md":
        return root / "AGENTS.md"
    rules = root / ".cursor" / "rules"
    return rules if rules.exists() or not (root / ".cursorrules").exists() else root / ".cursorrules"


def _agent_scope(org: str | None, user: str | None, agent: str | None, project: str | None,
                 where: Path) -> AgentScope:
    return resolve_scope(user=user, project=project, org=org, agent=agent, cwd=where)


def _import_instructions(fmt: str, path: Path | None, *, dry_run: bool, wait: bool,
                         db: str | Path | None, org: str | None, user: str | None, agent: str | None,
                         project: str | None, as_json: bool) -> None:
    from ..integrations.agent import AgentMemory
    from ..integrations.importers import Format, import_files
    from ..integrations.scope import project_root

    start = (path.parent if path is not None else Path.cwd()).expanduser().resolve()
    where = _agent_scope(org, user, agent, project, start)
    source = path if path is not None else _default_source(fmt, project_root(start) or start)
    store: str | Path = db if db is not None else (Config.from_env().store or default_path())
    if dry_run and not is_url(store) and not Path(store).exists():
        store = Path(":memory:")  # nothing known yet: compare with nothing, leave nothing
    with open_memory(store, create=True) as m:
        done = import_files(AgentMemory(m, where, door="import"), cast(Format, fmt), source,
                            dry_run=dry_run)
        if wait and not dry_run:
            m.flush()
    if as_json:
        print_json([{"kind": s.kind, "text": s.text, "path": str(f), "lines": list(s.lines),
                     "section": str(s.section), "id": item.id if item else None,
                     "became": item.text if item else None} for f, s, item in done])
        return
    if dry_run:
        for file, snippet, _ in done:
            typer.echo(f"{snippet.kind:<10} {file.name}:{snippet.start}-{snippet.end}  {snippet.text}")
        typer.echo(f"{_count(len(done), 'memory', 'memories')} would be proposed; nothing was added")
        return
    kinds: dict[str, int] = {}
    for _, snippet, _ in done:
        kinds[snippet.kind] = kinds.get(snippet.kind, 0) + 1
    detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    typer.echo(f"imported {_count(len(done), 'memory', 'memories')} from {source}"
               + (f" ({detail})" if detail else "")
               + f" into project {where.project}, user {where.user_id}")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@app.command()
def export(
    fmt: Annotated[str | None, typer.Argument(
        metavar="[FORMAT]", help="agents-md: the confirmed conventions and pitfalls as a marked "
        "block of AGENTS.md. Default: every memory as JSON Lines.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", dir_okay=False, help="Write to this file instead of stdout; for "
        "agents-md, only its marked block is replaced.")] = None,
    episodes: Annotated[bool, typer.Option(
        "--episodes/--no-episodes", help="Include raw episodes, not only derived memories.")
    ] = True,
    candidates: Annotated[bool, typer.Option(
        "--candidates", help="agents-md: also the memories not confirmed yet.")] = False,
    file_format: Annotated[str | None, typer.Option(
        "--format", help="jsonl (the default), agents-md, or pam: a Portable AI Memory (PAM "
        "1.0) memory-store.json of the derived memories.")] = None,
    db: DbOpt = None, org: OrgOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    project: ProjectOpt = None, session: SessionOpt = None, as_json: JsonOpt = False,
) -> None:
    """Write every memory in the scope, whatever its status, as JSON Lines, oldest first;
    or the project's confirmed conventions and pitfalls as a block of AGENTS.md.

    With --json: the memories as one JSON array on stdout; with --out as well, the file
    is JSON Lines and stdout says {"exported": N, "path": ...}.

    Examples: remem export --user alice --out alice.jsonl ; remem export agents-md --out AGENTS.md ;
    remem export --format pam --user alice --out memory-store.json
    """
    if file_format is not None and fmt is not None and file_format != fmt:
        fail(f"two formats given: {fmt} and --format {file_format}")
    fmt = fmt or (None if file_format == "jsonl" else file_format)
    if fmt == "pam":
        _export_pam(out, db=db, org=org, user=user, agent=agent, project=project, as_json=as_json)
        return
    if fmt is not None:
        if fmt != "agents-md":
            fail(f"unknown export format {fmt!r}", hint="use agents-md or pam, or none for JSON Lines")
        _export_agents_md(out, candidates, db=db, org=org, user=user, agent=agent, project=project,
                          as_json=as_json)
        return
    with open_memory(db) as m:
        items = m.export(include_episodes=episodes, **scope(org, user, agent, project, session))
        if as_json and out is None:
            print_json([item.model_dump(mode="json") for item in items])
            return
        lines = (json.dumps(item.model_dump(mode="json"), ensure_ascii=False) + "\n"
                 for item in items)
        if out is None:
            for line in lines:
                sys.stdout.write(line)
            return
        count = write_atomic(out, lines)
    if as_json:
        print_json({"exported": count, "path": str(out)})
        return
    err_console().print(f"exported {count} memories to {out}", markup=False, highlight=False)


def _export_pam(out: Path | None, *, db: str | None, org: str | None, user: str | None,
                agent: str | None, project: str | None, as_json: bool) -> None:
    from ..cube.pam import dumps

    with open_memory(db) as m:
        document = m.export_pam(**owner(org, user, agent, project))
    text = dumps(document)
    if out is None:
        sys.stdout.write(text)
        return
    with boundary():
        write_atomic(out, [text])
    count = len(document["memories"])
    if as_json:
        print_json({"exported": count, "path": str(out), "format": "pam"})
        return
    err_console().print(f"exported {count} memories to {out} (PAM)", markup=False, highlight=False)


def _export_agents_md(out: Path | None, candidates: bool, *, db: Path | None, org: str | None,
                      user: str | None, agent: str | None, project: str | None,
                      as_json: bool = False) -> None:
    from ..integrations import exporter
    from ..integrations.agent import AgentMemory

    start = (out.expanduser().resolve().parent if out is not None else Path.cwd())
    where = _agent_scope(org, user, agent, project, start)
    with open_memory(db) as m:
        items = exporter.select(AgentMemory(m, where), include_candidates=candidates,
                                target=out.expanduser().resolve() if out is not None else None)
    body = exporter.render(items, where.project)
    block = f"{exporter.BEGIN}\n{body}\n{exporter.END}"
    if out is None:
        if as_json:
            print_json({"block": block, "memories": len(items), "project": where.project})
        else:
            typer.echo(block)
        return
    with boundary():
        changed = exporter.write(out.expanduser(), body)
    if as_json:
        print_json({"path": str(out), "memories": len(items), "changed": changed,
                    "project": where.project})
        return
    what = "wrote" if changed else "unchanged:"
    err_console().print(f"{what} {_count(len(items), 'memory', 'memories')} in the remem block of {out}",
                        markup=False, highlight=False)


def write_atomic(path: Path, lines: Iterable[str]) -> int:
    """Write ``lines`` to ``path`` through a temporary file, so a failure leaves no half file."""
    path = path.expanduser()
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    count = 0
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line)
                count += 1
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return count
