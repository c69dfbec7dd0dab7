"""Assembling a scope's context block from the store (the block itself: :mod:`.context`).

The core memories come from the scope across sessions, with the user's memories outside
any project and the team's; the working memory from the session; the rest from a search
the caller passes in. Without a query a block depends only on the store and on which
reminders are due, so it is kept and given again until either changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..model import Context, Hit, MemoryItem, Scope
from ..store.base import Store
from .context import CORE_KINDS, ContextOptions, build_context, core_memories

__all__ = ["ContextAssembler"]

_KEPT = 256  # query-less blocks kept; all are dropped beyond it


class ContextAssembler:
    """Context blocks of one store.

    ``due(scope, now)`` gives the reminders due for a user's scope (they lead the core
    block); ``clock`` gives the present as epoch seconds.
    """

    def __init__(self, store: Store, options: ContextOptions, *, clock: Callable[[], float],
                 due: Callable[[Scope, float], list[MemoryItem]]) -> None:
        self.store = store
        self.options = options
        self.clock = clock
        self.due = due
        self._kept: dict[tuple[Scope, int], tuple[tuple[Any, ...], Context]] = {}

    def __call__(self, scope: Scope, *, budget_tokens: int,
                 search: Callable[[int], list[Hit]] | None) -> Context:
        """The block for ``scope`` within ``budget_tokens``; ``search`` (called with the
        tokens left) finds what the query adds, None without a query."""
        version = self.store.change_token()  # whoever wrote, through whichever connection
        shared = scope.model_copy(update={"session_id": None})
        # a reminder comes due with time, not with a write: its ids are part of the key
        due = self.due(shared, self.clock()) if scope.user_id is not None else []
        key = (version, *(m.id for m in due))
        cached = self._kept.get((scope, budget_tokens)) if search is None else None
        if cached is not None and cached[0] == key:
            return cached[1]
        found = self.store.derived(shared.model_copy(update={"nested": True}), CORE_KINDS, limit=2000)
        core: Sequence[MemoryItem] = due + core_memories(
            found, self.store.use_stats([m.id for m in found]), now=self.clock(),
            idle_days=self.options.idle_days)
        ctx = build_context(core=core, working=[m for m, _ in self.store.working_set(scope)],
                            search=search, asked=scope, budget_tokens=budget_tokens,
                            options=self.options)
        if search is None:
            if len(self._kept) > _KEPT:
                self._kept.clear()
            self._kept[(scope, budget_tokens)] = (key, ctx)
        return ctx

    def clear(self) -> None:
        """Forget the kept blocks."""
        self._kept.clear()
