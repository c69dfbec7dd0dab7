"""Speed of ``Memory.context()`` at scale, and how much prefetch prepares in advance.

``scale``: one scope holds N derived memories (a tenth of them of the kinds the core
block shows), one session has a warm working memory; ``context()`` is timed cold (the
first call after a write) and warm (called again), with and without a query. The hash
embedder keeps building the store fast, so a query's time here leaves out embedding it
with a real model (15-25 ms for the bundled one; see the embedder benchmark).

``prefetch``: LoCoMo is replayed turn by turn; after each turn the session's working
memory is prefetched (as the background job does). For each question, once the session
of its latest evidence turn is over, the hit rate is the share of its evidence turns
already in that session's working memory (as episodes, or cited by a memory there).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import AgentConfig, Config
from ..memory import Memory
from ..model import Scope, new_id
from ..store.base import NewMemory
from .locomo import load
from .scale import synthetic_queries, synthetic_texts
from .stats import percentile

__all__ = ["prefetch", "scale"]

_KINDS = ["fact", "event", "decision", "procedure", "files", "fact", "event", "fact", "event",
          "preference"]


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3)}


def scale(n: int = 100_000, calls: int = 500, seed: int = 0) -> dict[str, Any]:
    """Time ``context()`` with ``n`` memories in the scope."""
    rng = random.Random(seed)
    texts = synthetic_texts(n, seed)
    queries = synthetic_queries(50, seed)
    with tempfile.TemporaryDirectory(prefix="remem-bench-context-") as tmp:
        config = Config(embedder="hash", run_worker=False, agent=AgentConfig(extractor="off"))
        with Memory(Path(tmp) / "remem.db", config=config) as m:
            scope = {"user_id": "team", "project": "web"}
            episode = m.add("setting up the benchmark store", session_id="s1", **scope)
            for start in range(0, n, 1000):  # derived memories, written as the agent would
                m.store.insert([NewMemory(
                    id=new_id("m_"), kind=_KINDS[i % len(_KINDS)], text=texts[i], raw=False,
                    scope=Scope(**scope), observed_at=time.time(), source_ids=episode.episode_ids,
                ) for i in range(start, min(start + 1000, n))], None)
            m.add([{"role": "user", "content": q} for q in queries[:3]], session_id="s1", **scope)
            m.prefetch(session_id="s1", **scope)
            first = time.perf_counter()
            m.context(session_id="s1", **scope)
            cold_ms = (time.perf_counter() - first) * 1000
            warm = []
            for _ in range(calls):
                t0 = time.perf_counter()
                ctx = m.context(session_id="s1", **scope)
                warm.append((time.perf_counter() - t0) * 1000)
            with_query = []
            for q in (rng.choice(queries) for _ in range(min(calls, 100))):
                t0 = time.perf_counter()
                m.context(session_id="s1", query=q, **scope)
                with_query.append((time.perf_counter() - t0) * 1000)
            return {
                "memories": n, "calls": calls, "embedder": "hash (query embedding not timed)",
                "cold_ms": round(cold_ms, 2), "warm_ms": _ms(warm),
                "warm_with_query_ms": _ms(with_query),
                "context_tokens": ctx.tokens, "core_tokens": ctx.core_tokens,
                "working_memories": len(ctx.sections["working"]),
            }


def prefetch(data: str | Path, limit: int | None = None) -> dict[str, Any]:
    """Replay LoCoMo turn by turn with prefetch; return the evidence hit rate and the
    latency of ``context()`` with and without a warm working memory."""
    conversations = load(data)[:limit]
    hits = total = 0
    per_question: list[float] = []
    with_wm: list[float] = []
    without_wm: list[float] = []
    with tempfile.TemporaryDirectory(prefix="remem-bench-prefetch-") as tmp:
        config = Config(embedder="hash", run_worker=False, agent=AgentConfig(prefetch=False))
        with Memory(Path(tmp) / "remem.db", config=config) as m:
            for conv in conversations:
                last_session = {q.index: max(int(e.split(":")[0][1:]) for e in q.evidence)
                                for q in conv.questions}
                for session in conv.sessions:
                    sid = f"session_{session.number}"
                    for turn in session.turns:
                        m.add([{"speaker": turn.speaker, "content": turn.text,
                                "metadata": {"turn_id": turn.dia_id}}],
                              user_id=conv.sample_id, session_id=sid, timestamp=session.when)
                        m.flush()
                        m.prefetch(user_id=conv.sample_id, session_id=sid)
                    warm = m.store.working_set(Scope(user_id=conv.sample_id, session_id=sid))
                    rows = m.store.rowids([item.id for item, _ in warm])
                    ready = {s.metadata.get("turn_id") for cited in m.store.sources(rows.values()).values()
                             for s in cited}
                    for q in conv.questions:
                        if last_session[q.index] != session.number:
                            continue
                        got = sum(1 for e in q.evidence if e in ready)
                        hits += got
                        total += len(q.evidence)
                        per_question.append(got / len(q.evidence))
                        t0 = time.perf_counter()
                        m.context(user_id=conv.sample_id, session_id=sid, query=q.text)
                        with_wm.append((time.perf_counter() - t0) * 1000)
                        t0 = time.perf_counter()
                        m.context(user_id=conv.sample_id, query=q.text)
                        without_wm.append((time.perf_counter() - t0) * 1000)
    return {
        "conversations": len(conversations), "questions": len(per_question),
        "evidence_hit_rate": round(hits / total, 4) if total else None,
        "questions_fully_prepared": round(sum(1 for p in per_question if p == 1) /
                                          len(per_question), 4) if per_question else None,
        "context_ms_with_working_memory": _ms(with_wm),
        "context_ms_without": _ms(without_wm),
        "embedder": "hash (prefetch uses no embedding; query embedding not timed)",
    }
