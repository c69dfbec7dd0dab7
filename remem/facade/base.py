"""What the parts of the facade share: the state a Memory runs on, typed, and the checks
its methods have in common."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ClosedError, NotFoundError
from ..govern.sharing import Sharing
from ..model import Context, Hit, MemoryItem, Scope

if TYPE_CHECKING:
    from ..config import Config
    from ..embed import Embedder
    from ..extract.base import Extractor
    from ..extract.heads import Reader
    from ..extract.plan_factory import Planner
    from ..govern.audit import Auditor
    from ..govern.keys import KeyStore
    from ..govern.redact import Redactor
    from ..organize.agent import MemoryAgent
    from ..retrieve import Retriever
    from ..retrieve.assemble import ContextAssembler
    from ..schedule import Triggers, Worker
    from ..schedule.pending import PendingJobs
    from ..store import Store
    from .ingest import Ingest

__all__ = ["STATUSES", "FacadeBase"]

#: Every status a memory can have.
STATUSES = ("active", "superseded", "archived", "forgotten", "held")


class FacadeBase:
    """The state :class:`~remem.memory.Memory` sets up from :func:`.wiring.build`, and
    the checks its methods share; its public methods live in the subclasses, by concern."""

    config: Config
    clock: Callable[[], float]
    path: Path | str
    embedder: Embedder
    redactor: Redactor
    store: Store
    auditor: Auditor
    _keys: KeyStore
    retriever: Retriever
    reader: Reader
    extractor: Extractor | None
    agent: MemoryAgent
    triggers: Triggers
    worker: Worker
    reminder_listeners: list[Callable[[MemoryItem], object]]
    _prefetcher: Retriever
    _contexts: ContextAssembler
    _jobs: PendingJobs
    _pending: set[str]
    _ingest: Ingest
    _planner: Planner | None
    _closed: bool

    # methods of other parts that some parts call (a plan runs remember, search, forget, pin)
    get: Callable[..., MemoryItem]
    search: Callable[..., list[Hit]]
    context: Callable[..., Context]
    remember: Callable[..., MemoryItem]
    forget: Callable[..., MemoryItem]
    pin: Callable[..., MemoryItem]

    @property
    def sharing(self) -> Sharing:
        """The grants of this store (:class:`~remem.govern.sharing.Sharing`)."""
        return Sharing(self.store)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError()

    def _writable(self, memory_id: str, scope: Scope) -> Scope:
        """The exact scope in which the caller may change ``memory_id``: its own scope, or,
        from a project, the same user's memory outside any project. Never the team's or
        another user's (NotFoundError, as for any id outside the walls)."""
        if scope.project is None or scope.user_id is None:
            return scope
        item = self.store.get(memory_id, scope.model_copy(update={"nested": True}))
        if item.user_id != scope.user_id:
            raise NotFoundError(memory_id)
        return scope.model_copy(update={"project": item.project})

    def _passages(self, text: str, speaker: str | None) -> list[str]:
        return self._ingest.passages(text, speaker)
