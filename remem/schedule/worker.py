"""The background worker: runs queued jobs (embed, extract, decay, prefetch) in a thread.

Jobs live in the store, in the same transaction as the data they concern. A worker
claims a batch of one kind with a lease, runs it, and marks it done in the transaction
that writes its results; a failure queues it again with backoff, and after its last
attempt it stays ``failed`` and visible (``remem jobs``). A crashed worker's lease runs
out and another worker takes the job over; a job whose lease was lost is rolled back
rather than finished twice. Each kind of job runs for up to a slice of time in turn, so
that a slow kind (the memory agent) does not starve a fast one (embedding new turns).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..embed import Embedder
from ..errors import EmbeddingError
from ..store.base import Job, Store

__all__ = ["Handler", "Worker", "wait_for"]

log = logging.getLogger(__name__)

#: Runs one claimed job of a kind and records its result; raises to fail it.
Handler = Callable[[Job], None]

#: Kinds of job that wait while jobs of other kinds are pending, because they read what
#: those write.
WAITS_FOR = {"prefetch": ("extract",), "kv-build": ("extract",), "lora-train": ("extract",)}


class Worker:
    """Runs the store's queued jobs: ``embed`` built in, other kinds by ``handlers``.

    ``run_once`` does one step and can be called inline; ``start`` runs steps in a
    daemon thread until ``stop``. Several workers, in several processes, can share one
    store.
    """

    def __init__(self, store: Store, embedder: Embedder, *, batch: int = 32,
                 lease_s: float = 60.0, backoff_s: float = 2.0, slice_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic,
                 handlers: dict[str, Handler] | None = None,
                 tick: Callable[[], object] | None = None, tick_every_s: float = 30.0,
                 after_step: Callable[[], object] | None = None) -> None:
        self.store = store
        self.after_step = after_step
        self.tick = tick
        self.tick_every_s = tick_every_s
        self._last_tick = time.monotonic()  # timers first look after tick_every_s
        self.backoff_s = backoff_s
        self.slice_s = slice_s
        self.clock = clock
        self.embedder = embedder
        self.batch = batch
        self.lease_s = lease_s
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.idle = threading.Condition()

    # --- embedding --------------------------------------------------------------------

    def _embed(self, jobs: list[Job]) -> bool:
        """Embed the jobs' passages chunk by chunk; False if asked to stop half way."""
        wanted = [p for job in jobs for p in job.payload.get("passages", [])]
        todo = self.store.unembedded(wanted)
        for i in range(0, len(todo), self.batch):
            if i and self._stop.is_set():
                return False
            chunk = todo[i : i + self.batch]
            vectors = self.embedder.embed_passages([text for _, text in chunk])
            if len(vectors) != len(chunk):
                raise EmbeddingError(f"the embedder returned {len(vectors)} vectors for "
                                     f"{len(chunk)} passages")
            last = i + self.batch >= len(todo)
            self.store.put_vectors([(r, v) for (r, _), v in zip(chunk, vectors, strict=True)],
                                   jobs, renew_s=None if last else self.lease_s)
        if not todo:
            self.store.put_vectors([], jobs)
        return True

    def _run_embed(self) -> int:
        """Embed batches of jobs until none is left or the step's slice of time is used
        (at least one batch, even when asked to stop: a flush after a stop still ends)."""
        start, done = self.clock(), 0
        while not done or (not self._stop.is_set() and self.clock() - start < self.slice_s):
            jobs = self.store.claim_jobs("embed", self.batch, self.lease_s)
            if not jobs:
                break
            done += len(jobs)
            try:
                if not self._embed(jobs):
                    self.store.release_jobs(jobs)  # what is embedded stays; the rest waits
            except Exception as exc:  # a failed batch is retried later, never dropped
                log.warning("embedding %d jobs failed: %s", len(jobs), exc)
                for job in jobs:
                    self.store.fail_job(job, f"{type(exc).__name__}: {exc}", retry_in=self._backoff(job))
                break
        return done

    def _backoff(self, job: Job) -> float:
        return self.backoff_s * 2.0 ** (job.attempts - 1)

    # --- other kinds ------------------------------------------------------------------

    def _run_kind(self, kind: str, handler: Handler) -> int:
        """Run jobs of ``kind`` one by one until none is left or the step's slice of
        time is used (at least one)."""
        if WAITS_FOR.get(kind) and self.store.has_pending(WAITS_FOR[kind]):
            return 0  # e.g. a prefetch waits until the memories of the last turns exist
        start, done = self.clock(), 0
        while not self._stop.is_set() and (not done or self.clock() - start < self.slice_s):
            jobs = self.store.claim_jobs(kind, 1, self.lease_s)
            if not jobs:
                break
            done += 1
            try:
                handler(jobs[0])
            except Exception as exc:  # retried with backoff, then failed and visible
                log.warning("%s job %s failed (attempt %d): %s", kind, jobs[0].id,
                            jobs[0].attempts, exc)
                self.store.fail_job(jobs[0], f"{type(exc).__name__}: {exc}",
                                    retry_in=self._backoff(jobs[0]))
                break  # a failed job is not tried again within one step
        return done

    def run_once(self) -> int:
        """Run each kind of job in turn, each for up to ``slice_s`` (so that slow
        extraction never starves the embedding of new turns, nor the other way round);
        return how many jobs were handled. Every ``tick_every_s`` it first lets ``tick``
        queue due work (timers, idle)."""
        if self.tick is not None and time.monotonic() - self._last_tick >= self.tick_every_s:
            self._last_tick = time.monotonic()
            self.tick()
        done = self._run_embed()
        for kind, handler in self.handlers.items():
            done += self._run_kind(kind, handler)
        return done

    # --- the thread -------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread if it is not running."""
        with self._start_lock:  # callers in several threads must not start several workers
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._loop, name="remem-worker",
                                                daemon=True)
                self._thread.start()

    def wake(self) -> None:
        """Tell the thread there is new work."""
        self.start()
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Finish the current step and stop the thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_forever(self, poll_s: float = 1.0) -> None:
        """Run jobs in this thread until ``stop`` (for ``remem worker``)."""
        self._stop.clear()
        self._loop(poll_s)

    def _loop(self, poll_s: float = 1.0) -> None:
        while not self._stop.is_set():
            try:
                done = self.run_once()
            except Exception:  # the store was closed under us, or is unreadable
                log.exception("worker step failed")
                done = 0
            if done and self.after_step is not None:
                self.after_step()
            with self.idle:
                self.idle.notify_all()
            if not done:
                self._wake.wait(poll_s)
                self._wake.clear()
        with self.idle:
            self.idle.notify_all()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def wait_for(store: Store, worker: Worker, job_ids: set[str],
             timeout: float | None) -> tuple[set[str], set[str]]:
    """Block until none of ``job_ids`` is queued or running; return the ids still pending
    (at the timeout) and those that failed for good."""
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = set(job_ids)
    failed: set[str] = set()
    while pending:
        states = store.job_states(sorted(pending))
        failed |= {j for j in pending if states.get(j) == "failed"}
        pending = {j for j in pending if states.get(j) in ("queued", "running")}
        if not pending or (deadline is not None and time.monotonic() > deadline):
            return pending, failed
        if worker.running:
            with worker.idle:
                worker.idle.wait(0.05)
        elif not worker.run_once():
            time.sleep(0.05)
    return pending, failed
