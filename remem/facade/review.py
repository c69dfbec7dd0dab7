"""Memory's methods for what people and time decide about memories: feedback, items
held for review, flags, skills, the topic tree, decay, strength and retention. The rules
are the memory agent's (:mod:`remem.organize.decisions`, :mod:`remem.organize.strength`)
and the retention policy's (:mod:`remem.govern.retention`)."""

from __future__ import annotations

import builtins
import time
from datetime import datetime

from .._inputs import check_label, clean_text, parse_scope, parse_time
from ..errors import ValidationError
from ..model import MemoryItem, RetentionResult, TopicNode
from ..organize import decisions
from ..store import Filters
from .base import FacadeBase

__all__ = ["ReviewMethods"]


class ReviewMethods(FacadeBase):
    """Review and the memory agent's upkeep on a :class:`~remem.memory.Memory`."""

    def feedback(self, memory_id: str, verdict: str, note: str | None = None, *,
                 org_id: str | None = None, user_id: str | None = None,
                 project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """Tell the memory agent how a memory did: ``helpful`` strengthens and matures it,
        ``wrong`` forgets it, ``stale`` archives it. Kept in its history with the note."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        if verdict not in decisions.VERDICTS:
            raise ValidationError("verdict", f"{verdict!r} is not a verdict; use helpful, wrong or stale")
        if note is not None:
            note = self.redactor.text(clean_text(note, "note", 2000))
        decisions.feedback(self.store, memory_id, scope, verdict, note)
        return self.store.get(memory_id, scope)

    def held(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None,
             limit: int = 100) -> builtins.list[MemoryItem]:
        """What waits for a person's review: turns, tool output and memories held because
        they read as instructions to the agent (see :meth:`review`), newest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=project is not None)
        filters = Filters(include_episodes=True, statuses=("held",))
        return list(self.store.page(scope, filters, limit, None))

    def review(self, memory_id: str, *, approve: bool, note: str | None = None,
               org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None) -> MemoryItem:
        """Decide on a held item: approved, it becomes active (searchable, shown to the
        agent); rejected, it is forgotten (soft, with history; ``purge`` deletes it)."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        decisions.decide_held(self.store, memory_id, scope, approve=approve,
                              note=self.redactor.maybe(note))
        self._jobs.wake()
        return self.store.get(memory_id, scope)

    def flagged(self, *, org_id: str | None = None, user_id: str | None = None,
                agent_id: str | None = None, project: str | None = None,
                limit: int = 100) -> builtins.list[MemoryItem]:
        """Active memories flagged for review because a memory they were derived from was
        superseded (``metadata["review"]`` says which), newest first; see :meth:`settle_flag`."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=project is not None)
        found = self.store.derived(scope, limit=2000)
        return [m for m in found if m.metadata.get("review") and not m.metadata.get("reviewed")][:limit]

    def settle_flag(self, memory_id: str, *, keep: bool, org_id: str | None = None,
                    user_id: str | None = None, agent_id: str | None = None,
                    project: str | None = None) -> MemoryItem:
        """Decide on a flagged memory: kept, its flag is cleared; otherwise it is forgotten."""
        self._check_open()
        scope = self._writable(memory_id, parse_scope(org_id=org_id, user_id=user_id,
                                                      agent_id=agent_id, project=project))
        decisions.settle_flag(self.store, memory_id, scope, keep=keep)
        return self.store.get(memory_id, scope)

    def tree(self, *, org_id: str | None = None, user_id: str | None = None,
             agent_id: str | None = None, project: str | None = None) -> TopicNode:
        """The mind map of a scope: topics, subtopics and the memories under them."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        return self.agent.mindmap.tree(scope)

    def skills(self, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               status: str | None = None) -> builtins.list[MemoryItem]:
        """Skill candidates and approved skills of a scope (``status`` "candidate" or
        "approved" narrows it); an approved skill's SKILL.md is in ``metadata["skill_md"]``."""
        self._check_open()
        if status not in (None, "candidate", "approved"):
            raise ValidationError("status", f"{status!r}: use candidate or approved")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        found = self.store.derived(scope, ["skill"], limit=1000)
        return [s for s in found if status is None or s.metadata.get("skill_status") == status]

    def approve_skill(self, memory_id: str, *, org_id: str | None = None,
                      user_id: str | None = None, agent_id: str | None = None,
                      project: str | None = None) -> MemoryItem:
        """Approve a skill candidate: it becomes canonical and gets its SKILL.md."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        decisions.approve_skill(self.store, memory_id, scope)
        return self.store.get(memory_id, scope)

    def decay(self, *, now: str | datetime | None = None,
              org_id: str | None = None) -> builtins.list[str]:
        """Archive the memories (of one org, or all) whose strength fell under the
        threshold (pinned ones never); returns their ids. Runs nightly as a job; this runs
        it now."""
        self._check_open()
        from ..organize.strength import decay

        at = parse_time(now, "now")
        check_label(org_id, "org_id")
        with self.store.transaction():
            return decay(self.store, self.config.agent, at, org_id)

    def apply_retention(self, *, now: str | datetime | None = None, dry_run: bool = False,
                        org_id: str | None = None, user_id: str | None = None) -> RetentionResult:
        """Apply the retention policy (``config.retention``) now, as its scheduled job does:
        episodes older than a rule's age compacted (their text deleted for good, the
        memories derived from them kept, with a note in their history), memories archived
        or purged; pinned ones never. ``now`` is the present the ages count from (default:
        :attr:`clock`); ``dry_run`` says what would be done and does nothing; ``org_id`` and
        ``user_id`` confine the run to one org or user. Each item acted on is in the audit
        log (door ``retention``).

        >>> m = Memory("team.db", config=Config(retention={"rules": [
        ...     {"items": "episodes", "older_than_days": 30, "action": "compact"}]}))
        >>> m.apply_retention(dry_run=True).compacted   # doctest: +SKIP
        """
        self._check_open()
        from ..schedule.jobs import retention

        at = parse_time(now, "now")
        check_label(org_id, "org_id")
        check_label(user_id, "user_id")
        if user_id is not None and org_id is None:
            org_id = "default"
        done = retention(self.store, self.config.retention, self.agent.mindmap).apply(
            self.clock() if at is None else at, dry_run=dry_run, org_id=org_id, user_id=user_id)
        if not dry_run:
            self._contexts.clear()
        return done

    def strength(self, memory_id: str, *, now: str | datetime | None = None,
                 org_id: str | None = None, user_id: str | None = None,
                 project: str | None = None, agent_id: str | None = None) -> float:
        """How strong a memory is at ``now`` (default: the present): 1.0 when new or just
        used, halving every half-life of its kind unused, higher with use and maturity.
        Under ``config.agent.archive_below`` the nightly decay archives it (unless pinned)."""
        self._check_open()
        from ..organize.strength import strength

        at = parse_time(now, "now")
        item = self.get(memory_id, org_id=org_id, user_id=user_id, project=project,
                        agent_id=agent_id)
        uses, used_at = self.store.use_stats([item.id]).get(item.id, (0, None))
        return strength(item, uses, used_at, time.time() if at is None else at,
                        self.config.agent.half_life_days)
