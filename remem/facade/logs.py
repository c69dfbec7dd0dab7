"""Memory's logs: what was handed to models (the injection log) and how much of it was
used, who did what through which door (the audit log), and the background jobs."""

from __future__ import annotations

import builtins
import re
import time
from collections.abc import Sequence
from datetime import datetime

from .._inputs import check_label, parse_scope, parse_time
from ..errors import ValidationError
from ..model import Context, HeedRate, Injection, JobInfo, Page, new_id
from ..store.base import NewInjection
from .base import FacadeBase

__all__ = ["LogMethods"]

_LOGGED_CHARS = 20_000  # of an injected text, in the injection log
_DOOR = re.compile(r"(hook|mcp):[A-Za-z_]{1,64}|proxy|context|[a-z][a-z_-]{0,31}")


class LogMethods(FacadeBase):
    """The injection log, the audit log and the jobs of a :class:`~remem.memory.Memory`."""

    def log_context(self, ctx: Context, *, door: str, query: str | None = None,
                    org_id: str | None = None, user_id: str | None = None,
                    agent_id: str | None = None, project: str | None = None,
                    session_id: str | None = None) -> Injection | None:
        """Record that the block ``ctx`` (from :meth:`context`) was handed to a model
        through ``door``; nothing is recorded for an empty block (None)."""
        given = [(memory_id, section, ctx.channels.get(memory_id, []))
                 for section, ids in ctx.sections.items() for memory_id in ids]
        if not given:
            return None
        return self.log_injection(door=door, given=given, tokens=ctx.tokens, query=query,
                                  org_id=org_id, user_id=user_id, agent_id=agent_id,
                                  project=project, session_id=session_id, text=ctx.text)

    def log_injection(self, *, door: str, given: Sequence[tuple[str, str, Sequence[str]]],
                      tokens: int, query: str | None = None, org_id: str | None = None,
                      user_id: str | None = None, agent_id: str | None = None,
                      project: str | None = None, session_id: str | None = None,
                      text: str | None = None, at: str | datetime | None = None) -> Injection:
        """Record that the memories ``given`` were handed to a model through ``door``
        (``hook:<event>``, ``mcp:<tool>``, ``proxy``, ``context``...), in the scope of the
        agent and session that got them.

        ``given`` is ``(memory id, section, channels)`` in the order of the text; the
        entry keeps the query (shortened), the ``text`` given (its first 20,000
        characters) and its ``tokens``. The log is kept
        within ``config.injection_log_days`` and ``config.injection_log_rows``.
        """
        self._check_open()
        if not isinstance(door, str) or not _DOOR.fullmatch(door):
            raise ValidationError("door", f"{door!r} is not a door; use hook:<event>, "
                                  "mcp:<tool>, proxy or context")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise ValidationError("tokens", f"expected a count of tokens, got {tokens!r}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        when = parse_time(at, "at")
        query, text = self.redactor.maybe(query), self.redactor.maybe(text)
        entry = NewInjection(id=new_id("i_"), at=time.time() if when is None else when, door=door,
                             scope=scope, query=None if query is None else query[:2000],
                             tokens=tokens, items=[(str(i), str(s), [str(c) for c in ch])
                                                   for i, s, ch in given],
                             text=None if text is None else str(text)[:_LOGGED_CHARS])
        self.store.log_injection(entry, keep_days=self.config.injection_log_days,
                                 keep_rows=self.config.injection_log_rows)
        return self.store.injection(entry.id, scope)

    def injections(self, *, org_id: str | None = None, user_id: str | None = None,
                   agent_id: str | None = None, project: str | None = None,
                   session_id: str | None = None, door: str | None = None,
                   limit: int = 50, cursor: str | None = None) -> Page:
        """What was handed to models in the scope, newest first, one page at a time
        (``page.next_cursor``): each :class:`~remem.model.Injection` with its memories in
        order and whether each was used afterwards."""
        self._check_open()
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        check_label(door, "door")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        found, cursor = self.store.injections(scope, door=door, limit=limit, cursor=cursor)
        return Page(found, cursor)  # type: ignore[arg-type]

    def injected(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 limit: int = 20) -> builtins.list[Injection]:
        """The latest injections in the scope that gave this memory, newest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return self.store.injections_of(memory_id, scope, limit)

    def heed(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             session_id: str | None = None,
             since: str | datetime | None = None) -> builtins.list[HeedRate]:
        """The heed rates of the scope: for each door and kind, how many memories were
        injected and how many of them the agent then used (:meth:`used`, or ``helpful``
        feedback)."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self.store.heed_rates(scope, since=parse_time(since, "since"))

    def record_access(self, *, door: str, action: str, org_id: str | None = None,
                      user_id: str | None = None, actor: str | None = None,
                      key_id: str | None = None, target: str | None = None,
                      status: int | None = None) -> str:
        """Record in the audit log that ``actor`` (with API key ``key_id``) did ``action``
        through ``door`` (rest, mcp or cli) on ``target``, in the walls of ``org_id`` and
        ``user_id``; returns the entry's id. The doors call this; it is no place for text."""
        self._check_open()
        for name, value in (("action", action), ("org_id", org_id), ("user_id", user_id),
                            ("actor", actor), ("key_id", key_id), ("target", target)):
            check_label(value, name)
        return self.auditor.record(door=door, action=action, org_id=org_id, user_id=user_id,
                                   actor=actor, key_id=key_id, target=target, status=status)

    def audit(self, *, org_id: str | None = None, user_id: str | None = None,
              door: str | None = None, actor: str | None = None, key_id: str | None = None,
              action: str | None = None, target: str | None = None,
              since: str | datetime | None = None, until: str | datetime | None = None,
              limit: int = 50, cursor: str | None = None) -> Page:
        """The audit log of an org (default: the default org), or of one user's data in it,
        newest first: who did what through which door, with which key, when. ``action``
        matches as a prefix (``POST``, ``GET /v1/memories``, ``memory_``)."""
        self._check_open()
        for name, value in (("org_id", org_id), ("user_id", user_id), ("actor", actor),
                            ("key_id", key_id), ("action", action), ("target", target)):
            check_label(value, name)
        return self.auditor.read(org_id=org_id, user_id=user_id, door=door, actor=actor,
                                 key_id=key_id, action=action, target=target,
                                 since=parse_time(since, "since"), until=parse_time(until, "until"),
                                 limit=limit, cursor=cursor)

    def jobs(self, *, state: str | None = None, kind: str | None = None,
             org_id: str | None = None, user_id: str | None = None,
             limit: int = 50) -> builtins.list[JobInfo]:
        """Background jobs, newest first: what is queued, running, done or failed, and why.
        ``org_id`` keeps the jobs of that org's data; ``user_id`` those of one user's."""
        self._check_open()
        if state not in (None, "queued", "running", "done", "failed", "cancelled"):
            raise ValidationError("state", f"{state!r}: use queued, running, done, failed or cancelled")
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ValidationError("limit", f"expected an integer from 1 to 1000, got {limit!r}")
        check_label(org_id, "org_id")
        check_label(user_id, "user_id")
        if user_id is not None and org_id is None:
            org_id = "default"
        return self.store.jobs(state=state, kind=kind, org_id=org_id, user_id=user_id, limit=limit)

    def job(self, job_id: str, *, org_id: str | None = None, user_id: str | None = None) -> JobInfo:
        """One background job by id (with ``org_id`` / ``user_id``: only a job of that
        org's or user's data; JobNotFoundError otherwise)."""
        self._check_open()
        return self.store.job(job_id, org_id, user_id)

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The state of each of these jobs (queued, running, done, failed or cancelled),
        read from the store now; an id with no job (e.g. purged) is left out."""
        self._check_open()
        return self.store.job_states(job_ids)

    def retry_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        """Queue a failed (or cancelled) job again (with ``org_id``: only that org's)."""
        self._check_open()
        job = self.store.retry_job(job_id, org_id)
        self._jobs.track([job_id])
        return job

    def cancel_job(self, job_id: str, *, org_id: str | None = None) -> JobInfo:
        """Cancel a queued or failed job (with ``org_id``: only that org's)."""
        self._check_open()
        return self.store.cancel_job(job_id, org_id)
