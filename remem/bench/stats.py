"""Small helpers for benchmark figures and progress display."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["percentile", "progress_bar"]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile by linear interpolation (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def progress_bar() -> Progress:
    """A progress bar on stderr, so stdout stays clean for ``--json``."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(stderr=True), transient=True)
