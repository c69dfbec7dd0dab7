"""``remem bench ingest``: how fast turns are taken in, and how soon each is found.

Turns (the synthetic team sentences of ``bench scale``, sessions of ``session`` turns)
go in through ``Memory.add`` as an agent sends them, ``batch`` turns a call, with the
background worker running as in any process (embedding, extraction). Measured:

- ``ack_per_s``: turns acknowledged per second (``add`` returned: stored, and found by
  their words at once, which ``searchable_at_once`` checks on every ``probe_every``-th
  turn with a full-text search straight after its ``add``, outside the timed part);
- ``embed_drain_per_s``: passages embedded per second while the backlog drains after
  the last add (``Memory.stats().embed_backlog`` sampled until it is 0);
- ``until_found_by_meaning_s``: for the probed turns, seconds from ``add`` returning
  until the turn's vector is stored, after which a search by meaning finds it (checked:
  ``found_by_meaning`` is the share of probes a vector search then ranks first).
- ``until_agent_done_s``: seconds from the last ``add`` until the memory agent has read
  every turn (``agent_backlog_at_last_ack`` turns were waiting for it then) and the rest
  of the background work is over.

With ``peers=("mem0",)`` and the ``peers`` extra installed, mem0's ``add``
(``infer=False``, the same embedder, one call per turn) takes the same turns in the same
run; its add embeds before it returns, so its turns are found by meaning at ack.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import AgentConfig, Config
from ..memory import Memory
from ..model import Scope
from ..store import Filters
from .progress import Reporter
from .scale import synthetic_texts
from .stats import percentile

__all__ = ["run"]

_USER = "ingest"


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None}
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3)}


class _Watch:
    """Notes when each probed passage first has a vector (a thread polling the store)."""

    def __init__(self, memory: Memory, every_s: float = 0.05) -> None:
        self.memory = memory
        self.every_s = every_s
        self.waiting: dict[int, float] = {}  # passage rowid -> when its add returned
        self.latency: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def add(self, passage: int, acked: float) -> None:
        with self._lock:
            self.waiting[passage] = acked

    def _loop(self) -> None:
        store = self.memory.store
        while not self._stop.wait(self.every_s):
            with self._lock:
                todo = dict(self.waiting)
            if not todo:
                continue
            missing = {r for r, _ in store.unembedded(list(todo))}
            now = time.perf_counter()
            with self._lock:
                for passage, acked in todo.items():
                    if passage not in missing:
                        self.latency[passage] = now - acked
                        self.waiting.pop(passage, None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _remem(texts: list[str], folder: Path, session: int, batch: int, probe_every: int,
           extractor: str, shown: Reporter | None, agent_timeout_s: float) -> dict[str, Any]:
    memory = Memory(folder / "ingest.db", config=Config(agent=AgentConfig(extractor=extractor)))
    store = memory.store
    try:
        watch = _Watch(memory)
        watch.start()
        elapsed = 0.0
        probes = found_at_once = 0
        probe_text: dict[int, str] = {}
        for start in range(0, len(texts), batch):
            chunk = texts[start : start + batch]
            t0 = time.perf_counter()
            result = memory.add(chunk, user_id=_USER, session_id=f"s{start // session}")
            acked = time.perf_counter()
            elapsed += acked - t0
            for offset, episode in enumerate(result.episode_ids):
                if (start + offset) % probe_every:
                    continue
                text = chunk[offset]
                ticket = re.search(r"ticket (\d+)", text)
                rowid = store.rowids([episode])[episode]
                passage = store.conn.execute("SELECT rowid FROM passages WHERE memory_rowid = ?",
                                             (rowid,)).fetchone()[0]
                watch.add(passage, acked)
                probe_text[rowid] = text
                probes += 1
                terms = ["ticket", ticket.group(1)] if ticket else text.split()[:3]
                hits = store.fulltext(terms, Scope(user_id=_USER), Filters(), 5)
                found_at_once += bool(hits) and hits[0][0] == rowid
            if shown is not None:
                shown.advance(len(chunk))
        if shown is not None:
            shown.close()
        ack_s = elapsed
        backlog_at_end = memory.stats().embed_backlog
        agent_backlog = len(store.queued("extract"))
        t0 = time.perf_counter()
        while memory.stats().embed_backlog:
            time.sleep(0.1)
        drain_s = time.perf_counter() - t0
        deadline = time.perf_counter() + 60
        while watch.waiting and time.perf_counter() < deadline:
            time.sleep(0.1)
        watch.stop()
        agent_done = memory.flush(timeout=agent_timeout_s)
        agent_s = time.perf_counter() - t0
        # the probes, once embedded, are found by meaning: their own text as the query
        by_meaning = 0
        scope = Scope(user_id=_USER)
        for rowid, text in probe_text.items():
            vector = memory.embedder.embed_queries([text])[0]
            hits = store.vector(vector, scope, Filters(), 1)
            by_meaning += bool(hits) and hits[0][0] == rowid
        return {
            "turns": len(texts),
            "ack_per_s": round(len(texts) / ack_s, 1),
            "ack_ms_per_call": round(ack_s * 1000 / max(1, -(-len(texts) // batch)), 2),
            "searchable_at_once": round(found_at_once / max(1, probes), 3),
            "embed_backlog_at_last_ack": backlog_at_end,
            "embed_drain_per_s": round(backlog_at_end / drain_s, 1) if drain_s > 0 else None,
            "until_found_by_meaning_s": _quantiles(list(watch.latency.values())),
            "found_by_meaning": round(by_meaning / max(1, len(probe_text)), 3),
            "probes": probes,
            "agent_backlog_at_last_ack": agent_backlog,
            "until_agent_done_s": round(agent_s, 1) if agent_done else None,
        }
    finally:
        memory.close()


def _mem0(texts: list[str], folder: Path, session: int, shown: Reporter | None) -> dict[str, Any]:
    from .peers import Mem0System

    system = Mem0System(folder / "mem0")
    try:
        when = datetime.now(timezone.utc)
        t0 = time.perf_counter()
        for i, text in enumerate(texts):
            system.add_session(_USER, f"s{i // session}", when, [("user", text, {"turn_id": str(i)})])
            if shown is not None:
                shown.advance(1)
        elapsed = time.perf_counter() - t0
        if shown is not None:
            shown.close()
        return {"turns": len(texts), "ack_per_s": round(len(texts) / elapsed, 1),
                "until_found_by_meaning_s": "at ack (add embeds before it returns)",
                "notes": system.notes}
    finally:
        system.close()


def run(n: int = 2000, *, session: int = 20, batch: int = 1, probe_every: int = 25,
        extractor: str = "rules", peers: tuple[str, ...] = ("mem0",),
        progress: bool = True, agent_timeout_s: float = 600.0) -> dict[str, Any]:
    """Add ``n`` turns ``batch`` a call to a new store (and to each peer that is
    installed); see the module for what is measured. ``extractor="off"`` leaves the
    worker only the embedding (the memory agent's extraction shares it otherwise);
    ``until_agent_done_s`` is None when the background work outlasts ``agent_timeout_s``."""
    texts = synthetic_texts(n, seed=23)
    out: dict[str, Any] = {"n": n, "batch": batch, "session_turns": session,
                           "extractor": extractor,
                           "config": "defaults (the worker running: embedding, and extraction "
                                     "unless extractor is off)"}
    with tempfile.TemporaryDirectory(prefix="remem-ingest-") as tmp:
        folder = Path(tmp)
        shown = Reporter("remem add", n) if progress else None
        out["remem"] = _remem(texts, folder, session, batch, probe_every, extractor, shown,
                              agent_timeout_s)
        for peer in peers:
            if peer != "mem0":
                out[peer] = {"skipped": "no such peer"}
                continue
            try:
                shown = Reporter("mem0 add", n) if progress else None
                out["mem0"] = _mem0(texts, folder, session, shown)
            except ImportError as exc:
                out["mem0"] = {"skipped": str(exc)}
        if isinstance(out.get("mem0"), dict) and "ack_per_s" in out["mem0"]:
            out["ack_ratio_remem_over_mem0"] = round(
                out["remem"]["ack_per_s"] / out["mem0"]["ack_per_s"], 1)
    return out
