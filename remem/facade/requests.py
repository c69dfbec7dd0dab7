"""Memory's methods for requests and sessions: plain-language requests (planned as
memory operators and run by :mod:`remem.schedule.orchestrate`), reminders, team plans,
a session's working memory and its end, and the KV cache of an activation tier."""

from __future__ import annotations

import builtins
from datetime import datetime, timezone
from typing import Any

from .._inputs import clean_text, parse_scope
from ..errors import ValidationError
from ..extract.plan_factory import Planner, create_planner
from ..govern.provenance import check_door
from ..model import MemoryItem
from ..organize.team import TeamPlan, team_plan
from ..organize.team_llm import LLMSkillJudge
from ..schedule import Trigger, TriggerEvent, prefetch
from ..schedule.orchestrate import DoResult, Executor
from ..schedule.reminders import due_reminders, open_reminders, settle_reminder
from ..store.base import Job
from .base import FacadeBase

__all__ = ["RequestMethods"]


class RequestMethods(FacadeBase):
    """Requests, reminders, team plans and sessions on a :class:`~remem.memory.Memory`."""

    @property
    def planner(self) -> Planner:
        """What :meth:`do` plans with (``config.agent.planner``), made on first use."""
        if self._planner is None:
            self._planner = create_planner(self.config.agent, self.reader)
        return self._planner

    def do(self, text: str, *, org_id: str | None = None, user_id: str | None = None,
           agent_id: str | None = None, project: str | None = None,
           dry_run: bool = False, door: str = "sdk") -> DoResult:
        """Carry out a request in plain language (English or Chinese): it is planned as
        memory operators (remember, update, forget, search, summarise, link, remind, pin,
        share; see :mod:`remem.extract.plan`), relative dates resolved against
        :attr:`clock`, and run in one transaction. ``dry_run`` returns the plan only.
        What the steps write records ``door`` (as for :meth:`add`) in its provenance.

        >>> m.do("Record yesterday's meeting with Li Lei and remind me the day after "
        ...      "tomorrow to write the technical report", user_id="alice")   # doctest: +SKIP
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        check_door(door)
        body = clean_text(text, "text", self.config.max_text_chars)
        plan = self.planner.plan(body, datetime.fromtimestamp(self.clock(), timezone.utc))
        result = DoResult(request=body, planner=plan.planner, dry_run=dry_run, steps=plan.steps)
        if dry_run:
            return result
        done = Executor(self, scope, now=self.clock, screen=self.agent.screen_text,
                        chunk_tokens=self.config.chunk_tokens, door=door).run(plan)
        self._jobs.track(self.store.queued("embed"))
        return result.model_copy(update={"results": done})

    def reminders(self, *, org_id: str | None = None, user_id: str | None = None,
                  agent_id: str | None = None, project: str | None = None,
                  due: bool = False) -> builtins.list[MemoryItem]:
        """The user's open reminders, soonest first (``due``: only those due now by
        :attr:`clock`); the due date is ``metadata["reminder"]["due_date"]``."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        if due:
            return due_reminders(self.store, scope, self.clock())
        return open_reminders(self.store, scope)

    def dismiss_reminder(self, memory_id: str, *, done: bool = False,
                         org_id: str | None = None, user_id: str | None = None,
                         agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        """Dismiss a reminder (``done=True``: mark it done): it leaves the context blocks."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        return settle_reminder(self.store, memory_id, scope, "done" if done else "dismissed",
                               now=self.clock())

    def plan(self, request: str, *, org_id: str | None = None, user_id: str | None = None,
             project: str | None = None, agent_id: str = "leader") -> TeamPlan:
        """The team skills of ``agent_id`` (the leader) that apply to ``request``, each
        with its proposed split: roles (agent ids), their order, dependencies and checks;
        empty when none applies. Skills are learned from what the user tells the leader
        (see :mod:`remem.organize.team`). When a chat model plans requests
        (``agent.planner``), it also judges which rules cover the requirement
        (``judged_by``); otherwise the bundled encoder does."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        body = clean_text(request, "request", self.config.max_text_chars)
        # the chat model that plans requests, when one is configured, judges which rules apply
        client = getattr(self.planner, "client", None)
        judge = LLMSkillJudge(client, attempts=self.config.agent.llm_attempts) \
            if client is not None else None
        return team_plan(self.store, self.reader, scope, body, judge=judge,
                         applies_at=self.config.agent.team_applies_at)

    def prefetch(self, *, org_id: str | None = None, user_id: str | None = None,
                 agent_id: str | None = None, project: str | None = None,
                 session_id: str) -> builtins.list[str]:
        """Warm a session's working memory now from its latest turns (a job does this
        after each turn); returns the ids warmed."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        if scope.session_id is None:
            raise ValidationError("session_id", "prefetch needs the session whose memory to warm")
        return prefetch(self.store, self._prefetcher, self.config.agent, scope)

    def end_session(self, *, session_id: str, org_id: str | None = None,
                    user_id: str | None = None, agent_id: str | None = None,
                    project: str | None = None) -> builtins.list[str]:
        """Tell remem a session is over: fires the ``session_end`` triggers; returns the
        ids of the jobs they queued."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        with self.store.transaction():
            queued = self.triggers.fire(TriggerEvent("session_end", scope))
        if queued:
            self._jobs.track(queued)
        return builtins.list(queued)

    def use_activation(self, activation: Any, *, org_id: str | None = None,
                       user_id: str | None = None, agent_id: str | None = None,
                       project: str | None = None, budget_tokens: int = 1000) -> None:
        """Keep an :class:`~remem.tiers.ActivationMemory`'s KV cache of this scope's core
        block current: after turns of the scope, a ``kv-build`` job rebuilds it if the
        block changed (the cache file is keyed by the block, so an unchanged block costs
        nothing). It is built once now."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        where = scope.model_dump(exclude={"nested"})

        def build(job: Job) -> None:
            block = self.context(**where, budget_tokens=budget_tokens).core_text
            cache = activation.prepare(block) if block else None
            self.store.finish_job(job, {"tokens": 0 if cache is None else cache.tokens})

        self.worker.handlers["kv-build"] = build
        self.triggers.add(Trigger(f"kv-build:{where}", on="turn", job="kv-build", coalesce=True,
                                  payload=lambda event: {"scope": where}))
        block = self.context(**where, budget_tokens=budget_tokens).core_text
        if block:
            activation.prepare(block)
