"""What a system costs while it runs: resident memory, sampled in a background thread."""

from __future__ import annotations

import os
import resource
import sys
import threading
from types import TracebackType

__all__ = ["RssSampler", "rss_bytes"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """This process's resident memory now (Linux ``/proc``), else its peak so far."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


class RssSampler:
    """Peak resident memory while the ``with`` block runs, sampled every ``interval`` s.

    >>> with RssSampler() as rss:
    ...     work()
    >>> rss.peak, rss.start
    """

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.start = self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_bytes())

    def __enter__(self) -> RssSampler:
        self.start = self.peak = rss_bytes()
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())
