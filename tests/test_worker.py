"""The background worker shares its time between kinds of job: a slow memory agent does
not hold back the embedding of new turns, and embedding does not starve the agent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from remem import Config, Memory
from remem.embed.hashing import HashEmbedder
from remem.errors import ConfigError
from remem.schedule.worker import Worker
from remem.store.base import Job


class Clock:
    """Time that passes only when the slow parts below say so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SlowEmbedder(HashEmbedder):
    """The hashing embedder, taking ``per_call`` seconds of the fake clock per batch."""

    def __init__(self, clock: Clock, per_call: float) -> None:
        super().__init__()
        self.clock, self.per_call = clock, per_call

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.clock.now += self.per_call
        return super().embed_passages(texts)


def _turns(tmp_path: Path, n: int) -> Memory:
    m = Memory(tmp_path / "w.db", config=Config(embedder="hash", run_worker=False))
    for i in range(n):
        m.add([{"role": "user", "content": f"turn {i}: the billing job {i} retries on 503"}],
              user_id="u", session_id=f"s{i // 10}")
    return m


def test_a_slow_memory_agent_does_not_hold_back_the_embedding_of_new_turns(tmp_path: Path) -> None:
    clock = Clock()
    m = _turns(tmp_path, 200)
    extracted: list[str] = []

    def slow_extract(job: Job) -> None:  # the memory agent, half a second a turn
        clock.now += 0.5
        extracted.append(job.id)
        m.store.finish_job(job, {})

    worker = Worker(m.store, SlowEmbedder(clock, 0.25), batch=8, slice_s=1.0, clock=clock,
                    handlers={"extract": slow_extract})
    assert m.embed_backlog() == 200
    worker.run_once()
    # one second of embedding (four batches of eight), then one second of extraction (two)
    assert m.embed_backlog() == 200 - 32
    assert len(extracted) == 2
    while worker.run_once():
        pass
    assert m.embed_backlog() == 0
    assert len(extracted) == 200  # every turn read by the agent, once
    assert len(set(extracted)) == 200
    m.close()


def test_a_failing_job_is_tried_once_per_step_however_much_time_is_left(tmp_path: Path) -> None:
    clock = Clock()
    m = _turns(tmp_path, 3)
    calls: list[int] = []

    def failing(job: Job) -> None:
        calls.append(job.attempts)
        raise RuntimeError("the model is unreachable")

    worker = Worker(m.store, SlowEmbedder(clock, 0.0), backoff_s=0.0, slice_s=1.0, clock=clock,
                    handlers={"extract": failing})
    worker.run_once()
    assert calls == [1]  # not retried at once until its attempts run out
    m.close()



def test_the_worker_slice_is_a_setting_and_a_bad_one_is_refused() -> None:
    assert Config.from_env({"REMEM_WORKER_SLICE_S": "0.25"}).worker_slice_s == 0.25
    with pytest.raises(ConfigError, match="worker_slice_s"):
        Config.from_env({"REMEM_WORKER_SLICE_S": "0"})


def test_on_ready_is_called_by_flush_while_the_worker_is_still_reading_an_old_state(
        tmp_path: Path) -> None:
    import threading

    m = Memory(tmp_path / "r.db", config=Config(embedder="hash", run_worker=False))
    ready: list[object] = []
    result = m.add("I prefer pnpm over npm.", user_id="u", session_id="s1", on_ready=ready.append)
    # the worker's thread reads the job states just before the jobs finish, and is slow
    # to put its callbacks back: the flush that follows must still call on_ready
    real, reading, go_on = m.store.job_states, threading.Event(), threading.Event()
    late = threading.Thread(target=lambda: m._jobs.notify())

    def stale_states(ids: list[str]) -> dict[str, str]:
        states = real(ids)
        if threading.current_thread() is late:
            reading.set()
            go_on.wait(2)  # until the flush has returned, or (when flush waits for it) 2 s
        return states

    m.store.job_states = stale_states  # type: ignore[method-assign]
    late.start()
    assert reading.wait(60)  # the thread has started: no deadline is being tested
    assert m.flush(timeout=30)
    called_by_flush = list(ready)
    go_on.set()
    late.join()
    assert called_by_flush == [result]
    assert ready == [result]  # and only once
    m.close()
