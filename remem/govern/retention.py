"""The retention policy: how long what is stored is kept, per kind and per scope.

The rules of :class:`~remem.config.RetentionConfig` run in order, each over the items
the store took in more than ``older_than_days`` before the present:

- ``compact`` (episodes): the turn is deleted for good: its text, its full-text and
  vector rows, its history, and its words in its neighbours' full-text context, in the
  injection log and in working-memory reasons. The memories derived from it stay, each
  with a ``sources_compacted`` entry in its history. A turn the extractor has still to
  read waits (what it says is in no memory yet).
- ``archive`` (memories): an active memory is archived, as decay archives: out of search
  and of every context block, still listed and restorable.
- ``purge`` (memories): the memory is deleted for good, with what was derived from it, as
  :meth:`remem.Memory.purge` deletes it (the purge is handed in, so that the memory
  agent's rules apply: the turn ``remember`` wrote for it goes too, and the mind map
  forgets its words).

Pinned items are never touched, nor taken along: a memory whose purge would take a
pinned one with it (derived from it) is left as it is. A rule naming an org, a user or a
project acts inside those walls only; a run confined to an org or a user (``org_id``,
``user_id``) applies only the rules that can reach inside it, and only there. Every item acted on is put in
the audit log: door ``retention``, action ``retention compact|archive|purge``, the item's
id, in its org's and its user's walls, and who started the run (``actor``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from ..config import RetentionConfig, RetentionRule
from ..errors import NotFoundError
from ..model import MemoryItem, RetentionResult, Scope
from ..store.base import Store
from .audit import Auditor

__all__ = ["DAY", "Retention", "exact_scope"]

DAY = 86400.0
_PAGE = 500
_EVERY_STATUS = ("active", "superseded", "archived", "forgotten", "held")


class _TakesPinned(Exception):
    """A purge would take a pinned memory with it: rolled back."""


def exact_scope(item: MemoryItem) -> Scope:
    """The walls an item lives in, exactly (across sessions)."""
    return Scope(org_id=item.org_id, user_id=item.user_id, agent_id=item.agent_id,
                 project=item.project)


def _walls(rule: RetentionRule, org_id: str | None,
           user_id: str | None) -> tuple[str | None, str | None] | None:
    """The org and user a rule acts on in a run confined to ``org_id`` and ``user_id``;
    None when the rule cannot reach inside them."""
    if org_id is not None and rule.org_id not in (None, org_id):
        return None
    if user_id is not None and rule.user_id not in (None, user_id):
        return None
    return org_id or rule.org_id, user_id or rule.user_id


class Retention:
    """Applies a retention policy to one store.

    ``purge`` deletes one memory for good and returns the ids that went (default: the
    store's own purge in the memory's walls); ``auditor`` records what was done.
    """

    def __init__(self, store: Store, config: RetentionConfig, *,
                 purge: Callable[[MemoryItem], list[str]] | None = None,
                 auditor: Auditor | None = None) -> None:
        self.store = store
        self.config = config
        self.purge = purge or (lambda item: store.purge(item.id, exact_scope(item)))
        self.auditor = auditor or Auditor(store)
        self._pins: dict[Scope, set[str]] = {}

    def due(self, rule: RetentionRule, now: float, *, org_id: str | None = None,
            user_id: str | None = None) -> Iterator[list[MemoryItem]]:
        """The items ``rule`` acts on at ``now``, a page at a time, oldest first."""
        walls = _walls(rule, org_id, user_id)
        if walls is None:
            return
        episodes = rule.items == "episodes"
        cursor = None
        while True:
            page = self.store.stored_before(
                now - rule.older_than_days * DAY, episodes=episodes,
                kinds=None if rule.items in ("episodes", "memories") else [rule.items],
                statuses=("active",) if rule.action == "archive" else None,
                org_id=walls[0], user_id=walls[1], project=rule.project, limit=_PAGE,
                cursor=cursor)
            if page:
                yield list(page)
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def apply(self, now: float | None = None, *, dry_run: bool = False,
              org_id: str | None = None, user_id: str | None = None, actor: str | None = None,
              progress: Callable[[], object] | None = None) -> RetentionResult:
        """Run every rule at ``now`` (default: the present); with ``dry_run``, only say
        what each would do. Each page of items is one transaction, after which
        ``progress`` is called (a job renews its lease there)."""
        now = time.time() if now is None else now
        done: dict[str, list[str]] = {"compacted": [], "noted": [], "archived": [], "purged": []}
        self._pins = {}
        for n, rule in enumerate(self.config.rules, 1):
            reason = (f"retention rule {n}: {rule.items} older than {rule.older_than_days:g} "
                      f"days")
            for items in self.due(rule, now, org_id=org_id, user_id=user_id):
                if dry_run:
                    key = {"compact": "compacted", "archive": "archived", "purge": "purged"}
                    done[key[rule.action]] += [i.id for i in items if i.id not in done["purged"]]
                    continue
                with self.store.transaction():
                    self._act(rule.action, items, reason, done, actor)
                if progress is not None:
                    progress()
        at = datetime.fromtimestamp(now, timezone.utc)
        return RetentionResult(at=at, dry_run=dry_run,
                               **{k: list(dict.fromkeys(v)) for k, v in done.items()})

    def _act(self, action: str, items: Sequence[MemoryItem], reason: str,
             done: dict[str, list[str]], actor: str | None) -> None:
        by_id = {i.id: i for i in items}
        if action == "compact":
            compacted, noted = self.store.compact(list(by_id), None, reason=reason)
            done["compacted"] += compacted
            done["noted"] += noted
            touched = [by_id[i] for i in compacted]
        elif action == "archive":
            for item in items:
                self.store.set_fields(item.id, exact_scope(item), action="archived",
                                      status="archived", reason=reason)
            done["archived"] += list(by_id)
            touched = list(items)
        else:
            touched = []
            for item in items:
                if item.id in done["purged"]:
                    continue  # went with a memory it was derived from
                pinned = self._pinned(exact_scope(item))
                try:
                    with self.store.transaction():  # a savepoint: rolled back alone
                        gone = self.purge(item)
                        if pinned & set(gone):
                            raise _TakesPinned(item.id)
                except (NotFoundError, _TakesPinned):
                    continue
                done["purged"] += gone
                touched.append(item)
        for item in touched:
            self.auditor.record(door="retention", action=f"retention {action}",
                                org_id=item.org_id, user_id=item.user_id, actor=actor,
                                target=item.id, status=0)

    def _pinned(self, scope: Scope) -> set[str]:
        """The pinned memories of a user's scope (every project), read once per run."""
        key = scope.model_copy(update={"project": None})
        if key not in self._pins:
            self._pins[key] = {m.id for m in self.store.derived(
                key, statuses=_EVERY_STATUS, limit=1_000_000) if m.pinned}
        return self._pins[key]
