"""Progress of long benchmark work, on stderr so stdout stays clean for ``--json``, and
partial results saved as they come, so a run that is stopped leaves what it did.

On a terminal progress is a Rich bar. Anywhere else (a pipe, a log file, CI) a bar would
print nothing useful, so it is plain lines: one every ``every`` items or every
``interval_s`` seconds, whichever comes first, and one at the end. Time comes from an
injected clock.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["Reporter", "save_json"]


def save_json(path: str | os.PathLike[str], value: Any) -> None:
    """Write ``value`` as JSON to ``path`` through a temporary file: a reader (or a run
    killed midway) sees the previous version whole or the new one, never half of one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=2, default=str)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


class Reporter:
    """Counts items done out of ``total`` and shows it until :meth:`close` (or the end
    of a ``with`` block).

    >>> with Reporter("LoCoMo", 10) as progress:
    ...     for conversation in conversations:
    ...         ...
    ...         progress.advance(note=conversation.sample_id)
    """

    def __init__(self, label: str, total: int, *, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, every: int | None = None,
                 interval_s: float = 10.0, terminal: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._every = every if every is not None else max(1, total // 20)
        self._interval_s = interval_s
        tty = terminal if terminal is not None else self._stream.isatty()
        self._bar: Progress | None = None
        self._closed = False
        if tty:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(file=self._stream), transient=True)
            self._task = self._bar.add_task(label, total=total)
            self._bar.start()
        self._start = self._last = clock()
        self._shown = 0

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def advance(self, n: int = 1, *, note: str = "") -> None:
        """Count ``n`` more items done; ``note`` (e.g. the item's id) goes on the line."""
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
            return
        now = self._clock()
        if (self.done - self._shown >= self._every or now - self._last >= self._interval_s
                or self.done >= self.total):
            self._line(now, note)

    def _line(self, now: float, note: str) -> None:
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        tail = f" - {note}" if note else ""
        print(f"{self.label}: {self.done}/{self.total}{share}, {now - self._start:.0f} s{tail}",
              file=self._stream, flush=True)
        self._shown, self._last = self.done, now

    def close(self) -> None:
        """Stop the bar, or print the last count if it has not been printed."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.stop()
        elif self._shown != self.done:
            self._line(self._clock(), "")
