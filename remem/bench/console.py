"""Server-side time of the console's pages over a large store.

The store gets ``n`` derived memories in one org (several users and projects, a mix of
kinds), written through the store in batches as the memory agent writes them, without
vectors (the table pages use none). Each page is requested ``rounds`` times through the
real ASGI application; the time is measured around the application itself, from the
request's arrival to the last byte of the answer. The baseline in the same run is the
same first page over a store of ``baseline_n`` memories, and the health route.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from ..config import Config
from ..memory import Memory
from ..model import Scope, new_id
from ..store.base import NewMemory
from .progress import Reporter
from .scale import synthetic_texts
from .stats import percentile

__all__ = ["run"]

_KINDS = ("fact", "convention", "pitfall", "decision", "preference", "project", "procedure")
_USERS = ("alice", "bob", "chen", "dana")
_PROJECTS = ("web", "api", None)
_BATCH = 2000

Asgi = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Any]],
                 Callable[[MutableMapping[str, Any]], Awaitable[None]]], Awaitable[None]]


class _Timed:
    """An ASGI wrapper that records how long the application takes per request (ms)."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.last_ms = 0.0

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        start = time.perf_counter()
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            self.last_ms = (time.perf_counter() - start) * 1000


def _fill(memory: Memory, n: int, progress: bool) -> None:
    texts = synthetic_texts(n)
    rng = random.Random(5)
    now = time.time() - n

    def batch(start: int) -> list[NewMemory]:
        return [NewMemory(id=new_id("m_"), kind=rng.choice(_KINDS), text=texts[i], raw=False,
                          scope=Scope(user_id=rng.choice(_USERS), project=rng.choice(_PROJECTS)),
                          observed_at=now + i, subject="project")
                for i in range(start, min(start + _BATCH, n))]

    shown = Reporter(f"fill {n}", n) if progress else None
    for start in range(0, n, _BATCH):
        memory.store.insert(batch(start), None)
        if shown is not None:
            shown.advance(min(_BATCH, n - start))
    if shown is not None:
        shown.close()


def _time(client: Any, timed: _Timed, url: str, rounds: int) -> dict[str, float]:
    for _ in range(10):  # warm up: templates compiled, pages cached by SQLite
        client.get(url)
    samples = []
    for _ in range(rounds):
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}: {response.text[:300]}")
        samples.append(timed.last_ms)
    return {"p50_ms": round(percentile(samples, 50), 2), "p95_ms": round(percentile(samples, 95), 2)}


def _pages(memory: Memory, rounds: int, full: bool) -> dict[str, dict[str, float]]:
    from starlette.testclient import TestClient

    from ..serve.app import create_app

    timed = _Timed(create_app(memory))
    with TestClient(timed, base_url="http://127.0.0.1") as client:  # type: ignore[arg-type]
        out = {"table, first page": _time(client, timed, "/ui/memories", rounds)}
        if not full:
            out["health route"] = _time(client, timed, "/v1/health", rounds)
            return out
        # a cursor well into the store (1,000 of alice's memories back, at 100k)
        later = memory.list(limit=max(1, min(1000, memory.stats().memories // 20)), user_id="alice")
        cursor = f"?cursor={later.next_cursor}" if later.next_cursor else ""
        out["table, a later page (cursor)"] = _time(client, timed, f"/ui/memories{cursor}", rounds)
        out["table, one kind and user"] = _time(client, timed, "/ui/memories?kind=decision&user=bob", rounds)
        out["table, search box"] = _time(client, timed, "/ui/memories?q=billing+pipeline", rounds)
        one = memory.list(limit=1, user_id="alice")[0]
        out["memory page"] = _time(client, timed, f"/ui/memories/{one.id}", rounds)
    return out


def run(n: int = 100_000, rounds: int = 50, baseline_n: int = 1000,
        progress: bool = True) -> dict[str, Any]:
    """Fill a store with ``n`` memories and time the console's pages over it."""
    config = Config(embedder="hash", run_worker=False)
    with tempfile.TemporaryDirectory(prefix="remem-console-") as tmp:
        results: dict[str, Any] = {"n": n, "rounds": rounds, "baseline_n": baseline_n}
        with Memory(Path(tmp) / "small.db", config=config) as small:
            _fill(small, baseline_n, progress=False)
            results["baseline"] = _pages(small, rounds, full=False)
        with Memory(Path(tmp) / "large.db", config=config) as large:
            start = time.perf_counter()
            _fill(large, n, progress)
            results["fill_s"] = round(time.perf_counter() - start, 1)
            results["pages"] = _pages(large, rounds, full=True)
            results["size_bytes"] = large.stats().size_bytes
    first = results["pages"]["table, first page"]["p95_ms"]
    results["first_page_p95_over_baseline"] = round(
        first / max(results["baseline"]["table, first page"]["p95_ms"], 1e-9), 2)
    results["embedder"] = "hash (the table pages embed nothing; the search box embeds its query)"
    return results
