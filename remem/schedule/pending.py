"""The background jobs one process queued: what ``flush`` waits for, and the callbacks to
call once an add's jobs are over."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..store.base import Store
from .worker import Worker, wait_for

__all__ = ["PendingJobs"]

log = logging.getLogger(__name__)

_UNFINISHED = ("queued", "running")


class PendingJobs:
    """Job ids to wait for, and ``on_ready`` callbacks waiting for theirs.

    ``ids`` is one set for the object's life (callers may add to it); ``run_worker``
    says whether this process runs the worker's thread, woken when work is queued.
    """

    def __init__(self, store: Store, worker: Worker, *, run_worker: bool) -> None:
        self.store = store
        self.worker = worker
        self.run_worker = run_worker
        self.ids: set[str] = set()
        self._waiters: list[tuple[set[str], Callable[[Any], object], Any]] = []
        self._lock = threading.Lock()
        # one notify at a time: a flush's must not find the list empty while the worker's
        # holds the callbacks it read as unfinished a moment before (re-entrant, as a
        # callback may add again with a callback of its own)
        self._notifying = threading.RLock()

    def track(self, job_ids: Iterable[str]) -> None:
        """Wait for these jobs too, and wake the worker (if this process runs it)."""
        self.ids.update(job_ids)
        self.wake()

    def wake(self) -> None:
        """Tell the worker there is work, if this process runs it."""
        if self.run_worker:
            self.worker.wake()

    def watch(self, job_ids: Iterable[str], on_ready: Callable[[Any], object], result: Any) -> None:
        """Call ``on_ready(result)`` once the jobs are over (done or failed for good)."""
        with self._lock:
            self._waiters.append((set(job_ids), on_ready, result))
        self.notify()  # nothing was queued, or it is all done already

    def notify(self) -> None:
        """Call the callbacks whose jobs are over; run after each step of the worker."""
        with self._notifying:
            with self._lock:
                waiting, self._waiters = self._waiters, []
            still = []
            for jobs, callback, result in waiting:
                states = self.store.job_states(sorted(jobs))
                if any(states.get(j) in _UNFINISHED for j in jobs):
                    still.append((jobs, callback, result))
                    continue
                try:
                    callback(result)
                except Exception:  # a caller's bug must not stop the worker
                    log.exception("an on_ready callback failed")
            with self._lock:
                self._waiters = still + self._waiters

    def flush(self, timeout: float | None) -> bool:
        """Wait for every tracked job; True if all of them succeeded before ``timeout``."""
        waiting = set(self.ids)  # adds from other threads may join meanwhile
        still, failed = wait_for(self.store, self.worker, waiting, timeout)
        self.ids -= waiting - still
        self.notify()
        return not still and not failed

    def wait(self, job_ids: Sequence[str], kinds: Sequence[str] | None,
             timeout: float | None) -> bool:
        """Wait for some jobs (those of ``kinds`` among them, if given); True if they all
        succeeded before ``timeout``."""
        ids = {j for j in job_ids if kinds is None or self.store.job(j).kind in kinds}
        still, failed = wait_for(self.store, self.worker, ids, timeout)
        self.notify()
        return not still and not failed
