"""``remem bench``: run the benchmarks of ``remem.bench`` and print their results."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import typer

from .app import JsonOpt, bench_app, boundary, fail
from .output import out_console, render_dict

ProgressOpt = Annotated[bool, typer.Option(help="Show progress on stderr.")]


class System(str, Enum):
    """The retrieval systems LoCoMo can be run with."""

    remem = "remem"
    bm25 = "bm25"
    dense = "dense"


def load_runner(module: str) -> Callable[..., dict[str, Any]]:
    """``run`` of ``remem.bench.<module>``, imported only when a benchmark is asked for."""
    try:
        runner: Callable[..., dict[str, Any]] = import_module(f"remem.bench.{module}").run
    except ImportError as exc:
        fail(f"the {module} benchmark cannot be loaded: {exc}")
    except AttributeError:
        fail(f"remem.bench.{module} has no run() function")
    return runner


def report(title: str, result: dict[str, Any], as_json: bool) -> None:
    """Print a benchmark result as JSON, or as a tree of its keys and values."""
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, default=str))
    else:
        render_dict(title, result, out_console())


@bench_app.command()
def locomo(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False, help="The LoCoMo data file (locomo10.json).")],
    system: Annotated[System, typer.Option(help="Which retrieval to measure.")] = System.remem,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions.")] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure retrieval quality on the LoCoMo long-conversation benchmark.

    Example: remem bench locomo --data locomo10.json --system bm25 --limit 200
    """
    run = load_runner("locomo")
    with boundary():
        result = run(str(data), system=system.value, limit=limit, progress=progress)
    report(f"LoCoMo ({system.value})", result, as_json)


@bench_app.command()
def scale(
    n: Annotated[int, typer.Option("--n", min=1, help="How many memories to store.")] = 100_000,
    queries: Annotated[int, typer.Option(min=1, help="How many searches to time.")] = 200,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
) -> None:
    """Measure write and search speed with N memories in one store.

    Example: remem bench scale --n 10000 --json
    """
    run = load_runner("scale")
    with boundary():
        result = run(n=n, queries=queries, progress=progress)
    report(f"scale (n={n})", result, as_json)
