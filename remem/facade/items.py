"""Memory's methods on one memory by id: change it, forget, restore, pin or purge it,
tell remem it was used, read its history, its links and the turns around it."""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence

from .._inputs import check_label, clean_text, parse_scope
from ..errors import ValidationError
from ..model import HistoryEntry, Link, MemoryItem, new_id
from ..organize import decisions
from ..store import Filters
from ..text import split_passages
from .base import STATUSES, FacadeBase

__all__ = ["ItemMethods"]


class ItemMethods(FacadeBase):
    """Changing and reading one memory of a :class:`~remem.memory.Memory`."""

    def update(self, memory_id: str, *, text: str, reason: str | None = None,
               org_id: str | None = None, user_id: str | None = None,
               project: str | None = None, agent_id: str | None = None) -> MemoryItem:
        """Give a derived memory new text as a new version; ``history`` keeps the old one."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        body = self.redactor.text(clean_text(text, "text", self.config.max_text_chars))
        check_label(reason, "reason")
        reason = self.redactor.maybe(reason)
        job_id = new_id("j_")
        item = self.store.update_text(memory_id, scope, body,
                                      split_passages(body, self.config.chunk_tokens), reason, job_id)
        self._jobs.track([job_id])
        return item

    def forget(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
               user_id: str | None = None, project: str | None = None,
               agent_id: str | None = None) -> MemoryItem:
        """Hide a memory from search; it stays in the file and in its history."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        check_label(reason, "reason")
        reason = self.redactor.maybe(reason)
        return decisions.forget(self.store, self.agent.mindmap, memory_id, scope, reason)

    def restore(self, memory_id: str, *, reason: str | None = None, org_id: str | None = None,
                user_id: str | None = None, project: str | None = None,
                agent_id: str | None = None) -> MemoryItem:
        """Make a forgotten, archived or superseded memory active again (searchable, shown
        to the agent); the history keeps what happened. Held items go through :meth:`review`."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        check_label(reason, "reason")
        item = self.store.get(memory_id, scope)
        if item.status not in ("forgotten", "archived", "superseded"):
            raise ValidationError("id", f"{memory_id} is {item.status}; only a forgotten, archived "
                                  "or superseded memory can be restored")
        return self.store.set_status(memory_id, scope, "active",
                                     self.redactor.maybe(reason) or "restored")

    def pin(self, memory_id: str, *, pinned: bool = True, org_id: str | None = None,
            user_id: str | None = None, project: str | None = None,
            agent_id: str | None = None) -> MemoryItem:
        """Pin a memory (it never decays and stays in the core block) or, with
        ``pinned=False``, unpin it."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        self.store.set_fields(memory_id, scope, action="pinned" if pinned else "unpinned",
                              reason=None, pinned=bool(pinned))
        return self.store.get(memory_id, scope)

    def purge(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
              project: str | None = None, agent_id: str | None = None) -> list[str]:
        """Delete a memory for good, with everything derived from it; returns the deleted ids."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        scope = self._writable(memory_id, scope)
        ids = decisions.purge(self.store, self.agent.mindmap, memory_id, scope)
        self._contexts.clear()
        return ids

    def used(self, memory_ids: Sequence[str], *, org_id: str | None = None,
             user_id: str | None = None, agent_id: str | None = None,
             project: str | None = None) -> None:
        """Tell remem these memories were used together (e.g. in one answer): each gets
        stronger, and each pair's ``co_used`` edge, which the graph channel follows."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        ids = builtins.list(dict.fromkeys(memory_ids))
        for memory_id in ids:
            self.store.get(memory_id, scope)  # each must exist in the scope
        pairs = [(a, b, "co_used", 1.0) for i, a in enumerate(ids) for b in ids[i + 1:]]
        with self.store.transaction():
            self.store.touch(ids)
            self.store.mark_used(ids, scope, time.time())
            self.store.link(pairs + [(b, a, t, w) for a, b, t, w in pairs], add=True)

    def history(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
                project: str | None = None, agent_id: str | None = None) -> builtins.list[HistoryEntry]:
        """Every version and status change of a memory, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        return self.store.history(memory_id, scope)

    def links(self, memory_id: str, *, org_id: str | None = None, user_id: str | None = None,
              project: str | None = None, agent_id: str | None = None,
              limit: int = 100) -> builtins.list[Link]:
        """The edges of a memory in the memory network (supersedes, derived_from, co_used,
        related...), heaviest first, each with the memory at its other end; memories
        outside the scope are left out."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project, nested=True)
        item = self.store.get(memory_id, scope)
        rowid = self.store.rowids([item.id])[item.id]
        edges = self.store.edge_list(rowid, limit)
        seen = self.store.accept([o for o, _, _, _ in edges], scope,
                                 Filters(include_episodes=True, statuses=STATUSES))
        others = self.store.get_rows(seen)
        return [Link(type=t, direction=d, weight=w, memory=others[o])  # type: ignore[arg-type]
                for o, t, d, w in edges if o in others]

    def around(self, memory_id: str, *, window: int = 1, org_id: str | None = None,
               user_id: str | None = None, project: str | None = None,
               agent_id: str | None = None) -> tuple[builtins.list[MemoryItem], builtins.list[MemoryItem]]:
        """The turns of the same session just before and just after an episode (up to
        ``window`` each side, in session order), inside the scope; empty for a memory
        that is not a turn of a session."""
        self._check_open()
        if window < 0:
            raise ValidationError("window", f"must be 0 or more, got {window}")
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            nested=True)
        item = self.store.get(memory_id, scope)
        if not item.is_episode or not item.session_id or window == 0:
            return [], []
        rowid = self.store.rowids([item.id])[item.id]
        pairs = self.store.neighbors([rowid], window, scope,
                                     Filters(include_episodes=True, statuses=STATUSES))
        found = self.store.get_rows([n for n, _ in pairs])
        before = [found[n] for n, _ in sorted(pairs) if n < rowid and n in found]
        after = [found[n] for n, _ in sorted(pairs) if n > rowid and n in found]
        return before, after
