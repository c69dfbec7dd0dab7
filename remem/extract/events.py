"""Rules for coding-agent events: pitfalls and their fixes, files that go together, procedures.

Events are read per session, in the order given (oldest first).

- **A failure and its fix.** A tool call that failed (exit code not 0), then within the
  next ``window`` events of its session:
  the same command succeeding after other successful commands and no file edit: those
  commands are a prerequisite (``npm test`` fails until ``nvm use 20``); or a similar
  command succeeding (the same arguments after another program, the same program with
  arguments added or removed, or most words shared): the variant is the fix
  (``python manage.py test`` -> ``python3 manage.py test``). A rerun that succeeds after a
  file edit is a bug fixed in the code, not a pitfall. An error event followed by a
  successful command that names what the error named (``No module named 'yaml'`` ->
  ``pip install pyyaml``) is a pitfall too.
- **A task.** The files edited between a task's start and end (two or more) go together;
  a task that ended well gives a procedure: its successful commands in order, and the
  outcome.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import ErrorEvent, FileEdit, TaskEnd, TaskStart, ToolCall
from ..text import has_cjk
from .base import Candidate, EpisodeIn, as_utc

__all__ = ["event_candidates", "similar"]

_NOT_FOUND = re.compile(r"command not found|not recognized as|no such file or directory|"
                        r"is not installed|executable file not found", re.IGNORECASE)
_REASON = re.compile(r"error|not found|denied|missing|err!|unresolved|no rule|incompatible|"
                     r"externally|cannot|could not|failed|refused|invalid|unknown", re.IGNORECASE)
_FAILED = re.compile(r"\b(?:fail|failed|failing|gave up|give up|giving up|abandon\w*|blocked|"
                     r"could not|cannot|unable|not fixed|broken|aborted|cancell?ed|reverted)\b"
                     r"|失败|放弃|没搞定|未完成|没修好|卡住|未解决", re.IGNORECASE)
_READ_ONLY = re.compile(r"^(?:ls|cat|less|more|head|tail|grep|rg|find|pwd|echo|which|man|tree|"
                        r"wc|file|stat|env|history|git (?:status|log|diff|show|branch))\b")
# exit code 1 of these means "no match" or "they differ", not a failure
_NO_MATCH = re.compile(r"^(?:grep|egrep|fgrep|rg|ag|diff|cmp|test|\[|git diff)\b")
_ERROR_NOISE = frozenset("error errors exception traceback file line not found named module "
                         "modulenotfounderror importerror no the and failed cannot could for "
                         "with from most recent call last".split())


def _program(command: str) -> str:
    """The program a command runs, past ``sudo``, ``env`` and ``VAR=value`` prefixes."""
    words = command.split()
    while len(words) > 1 and (words[0] in ("sudo", "env", "time", "nohup") or "=" in words[0]):
        words = words[1:]
    return words[0] if words else command


def _cmd(ep: EpisodeIn) -> str:
    """The command of a tool-call episode."""
    event = ep.event
    return event.command.strip() if isinstance(event, ToolCall) and event.command else ""


def _tokens(command: str) -> list[str]:
    return [t.lower() for t in re.findall(r"[A-Za-z0-9_]{2,}", command)]


def _matches(word: str, others: Sequence[str]) -> bool:
    return any(word == o or (min(len(word), len(o)) >= 4 and (word in o or o in word))
               for o in others)


def similar(failed: str, other: str) -> bool:
    """True when ``other`` looks like another way to run ``failed``."""
    a, b = failed.split(), other.split()
    if not a or not b or a == b:
        return False
    if len(a) > 1 and a[1:] == b[1:]:
        return True  # another program, the same arguments
    if a[0] == b[0]:  # the same program: only with arguments added or removed
        return set(a[1:]) <= set(b[1:]) or set(b[1:]) <= set(a[1:])
    ta, tb = _tokens(failed), _tokens(other)
    if not ta or not tb:
        return False
    shared = sum(1 for t in ta if _matches(t, tb))
    return shared / max(len(ta), len(tb)) >= 0.5


def _reason(call: ToolCall) -> str:
    lines = [line.strip() for line in (call.output or "").splitlines() if line.strip()]
    if not lines:
        return f"exit code {call.exit_code}"
    line = next((x for x in lines if _REASON.search(x)), lines[-1])
    return line if len(line) <= 100 else line[:99] + "…"


def _heads(failed: str, fixed: str) -> tuple[str, str]:
    """The differing fronts of two commands that end the same way."""
    a, b = failed.split(), fixed.split()
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return " ".join(a[: len(a) - n]), " ".join(b[: len(b) - n])


def _candidate(kind: str, text: str, eps: Sequence[EpisodeIn], *, subject: str,
               entities: list[str], rule: str, confidence: float) -> Candidate:
    when = as_utc(eps[-1].event_time)
    return Candidate(kind=kind, text=text, subject=subject,  # type: ignore[arg-type]
                     entities=list(dict.fromkeys(entities)), tags=["agent-event"],
                     event_time=when, observed_at=when,
                     confidence=confidence, source_ids=list(dict.fromkeys(e.id for e in eps)),
                     rule=rule)


def _command_fix(seq: Sequence[EpisodeIn], i: int, window: int) -> Candidate | None:
    failed = seq[i].event
    assert isinstance(failed, ToolCall) and failed.command
    cmd = failed.command.strip()
    subject = seq[i].project or "environment"
    upto = seq[i + 1: i + 1 + window]
    # the same command succeeding later: what ran between was missing, unless code changed
    prior: list[EpisodeIn] = []
    for ep in upto:
        ev = ep.event
        if isinstance(ev, (TaskStart, TaskEnd, FileEdit)):
            break
        if isinstance(ev, ToolCall) and ev.command and ev.command.strip() == cmd:
            if ev.exit_code == 0 and prior:
                steps = ", ".join(f"`{_cmd(p)}`" for p in prior)
                return _candidate(
                    "pitfall", f"`{cmd}` fails here ({_reason(failed)}); run {steps} first, "
                    f"then `{cmd}`", [seq[i], *prior, ep], subject=subject,
                    entities=[_program(cmd), *(_program(_cmd(p)) for p in prior)],
                    rule="events.pitfall.prerequisite", confidence=0.7)
            break
        if isinstance(ev, ToolCall) and ev.exit_code == 0 and ev.command:
            prior.append(ep)
    # a similar command succeeding: the variant is the fix
    between: list[EpisodeIn] = []
    for ep in upto:
        ev = ep.event
        if isinstance(ev, (TaskStart, TaskEnd)):
            break
        if not isinstance(ev, ToolCall) or not ev.command or ev.exit_code != 0:
            continue
        fixed = ev.command.strip()
        if not similar(cmd, fixed):
            between.append(ep)
            continue
        was, now = _heads(cmd, fixed)
        if _NOT_FOUND.search(failed.output or "") or failed.exit_code == 127:
            if was and now and len(was.split()) <= 2:
                text = (f"`{was}` is not available here ({_reason(failed)}); use `{now}` "
                        f"(e.g. `{fixed}`)")
                return _candidate("pitfall", text, [seq[i], ep], subject=subject,
                                  entities=[was, now], rule="events.pitfall.not_found",
                                  confidence=0.85)
        after = (" (after " + ", ".join(f"`{_cmd(b)}`" for b in between)
                 + ")") if between else ""
        text = f"`{cmd}` fails here ({_reason(failed)}); use `{fixed}` instead{after}"
        return _candidate("pitfall", text, [seq[i], *between, ep], subject=subject,
                          entities=[_program(cmd), _program(fixed)],
                          rule="events.pitfall.variant", confidence=0.75)
    return None


def _error_fix(seq: Sequence[EpisodeIn], i: int, window: int) -> Candidate | None:
    error = seq[i].event
    assert isinstance(error, ErrorEvent)
    named = [w for w in _tokens(f"{error.message} {error.detail or ''}") if w not in _ERROR_NOISE]
    before: list[EpisodeIn] = []  # what ran between the error and the retry: the fix
    for ep in seq[i + 1: i + 1 + window]:
        ev = ep.event
        if isinstance(ev, (TaskStart, TaskEnd)):
            break
        if not isinstance(ev, ToolCall) or ev.exit_code != 0 or not ev.command:
            continue
        cmd = ev.command.strip()
        if not any(_matches(t, named) for t in _tokens(cmd)):
            if not _READ_ONLY.match(cmd):
                before.append(ep)
            continue
        if before:
            fixes = ", ".join(f"`{_cmd(b)}`" for b in before)
            text = f"{error.message.strip()}: fixed by running {fixes} before `{cmd}`"
        else:
            text = f"{error.message.strip()}: fixed by running `{cmd}`"
        return _candidate("pitfall", text, [seq[i], *before, ep],
                          subject=seq[i].project or "environment",
                          entities=[*(_program(_cmd(b)) for b in before), _program(cmd)],
                          rule="events.pitfall.error_fix", confidence=0.6)
    return None


def _task(eps: list[EpisodeIn], task: str | None, end: EpisodeIn | None) -> list[Candidate]:
    out: list[Candidate] = []
    subject = eps[0].project or "project"
    files: list[str] = []
    edits: list[EpisodeIn] = []
    steps: list[EpisodeIn] = []
    for ep in eps:
        ev = ep.event
        if isinstance(ev, FileEdit) and ev.path not in files:
            files.append(ev.path)
            edits.append(ep)
        elif isinstance(ev, ToolCall) and ev.exit_code == 0 and ev.command \
                and not _READ_ONLY.match(ev.command.strip()) \
                and ev.command.strip() not in [_cmd(s) for s in steps]:
            steps.append(ep)
    zh = has_cjk(task or "")
    marks = [e for e in (eps[0], end) if e is not None and isinstance(e.event, (TaskStart, TaskEnd))]
    if len(files) >= 2:
        listed = ", ".join(files)
        text = (f"{task}相关的文件：{listed}" if zh else f"Files for {task}: {listed}") if task \
            else f"Files edited together: {listed}"
        out.append(_candidate("files", text, [*marks[:1], *edits, *marks[1:]], subject=subject,
                              entities=files, rule="events.files.task" if task
                              else "events.files.session", confidence=0.75 if task else 0.5))
    outcome = end.event.outcome if end is not None and isinstance(end.event, TaskEnd) else None
    if task and outcome and steps and not _FAILED.search(outcome):
        cmds = [f"`{_cmd(s)}`" for s in steps[:6]]
        if zh:
            how = "运行 " + cmds[0] if len(cmds) == 1 else "先运行 " + "，然后 ".join(cmds)
            text = f"{task}：{how}。结果：{outcome}"
        else:
            goal = task[0].lower() + task[1:]
            text = f"To {goal}: run {', then '.join(cmds)}. Outcome: {outcome}"
        out.append(_candidate("procedure", text, [*marks[:1], *steps, *marks[1:]],
                              subject=subject, entities=[_program(c.strip("`")) for c in cmds],
                              rule="events.procedure.task", confidence=0.7))
    return out


def _tasks(seq: Sequence[EpisodeIn]) -> list[Candidate]:
    out: list[Candidate] = []
    current: list[EpisodeIn] = []
    task: str | None = None
    seen_task = False
    for ep in seq:
        ev = ep.event
        if isinstance(ev, TaskStart):
            current, task, seen_task = [ep], ev.task, True
        elif isinstance(ev, TaskEnd):
            seen_task = True
            out.extend(_task(current or [ep], ev.task or task, ep))
            current, task = [], None
        else:
            current.append(ep)
    if current and not seen_task:
        out.extend(_task(current, None, None))  # a session without task markers
    return out


def event_candidates(episodes: Sequence[EpisodeIn], *, window: int = 4) -> list[Candidate]:
    """Pitfalls, files and procedures from agent events (episodes whose ``event`` is set)."""
    sessions: dict[str | None, list[EpisodeIn]] = {}
    for ep in episodes:
        if ep.event is not None:
            sessions.setdefault(ep.session_id or ep.event.session_id, []).append(ep)
    out: list[Candidate] = []
    for seq in sessions.values():
        for i, ep in enumerate(seq):
            ev = ep.event
            found = None
            if isinstance(ev, ToolCall) and ev.exit_code not in (None, 0) and ev.command \
                    and not (ev.exit_code == 1 and _NO_MATCH.match(ev.command.strip())):
                found = _command_fix(seq, i, window)
            elif isinstance(ev, ErrorEvent):
                found = _error_fix(seq, i, window)
            if found is not None:
                out.append(found)
        out.extend(_tasks(seq))
    return out
