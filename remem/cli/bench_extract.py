"""``remem bench extract``: precision and recall of the default extractor on a labelled corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .app import JsonOpt, bench_app, boundary
from .bench import report

_CASES = ("false_positives", "misses", "refusals")


@bench_app.command("extract")
def extract(
    corpus: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False,
        help="A corpus file in the same JSONL format (default: the one shipped with remem).")
    ] = None,
    errors: Annotated[bool, typer.Option(
        "--errors", help="Also list each false positive, miss and grounding refusal.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure the default extractor (trained heads for turns, rules for events): precision
    and recall overall, per language, kind and split.

    The bundled corpus holds English and Chinese turns and coding-agent events (its "dev"
    cases also train the kind head); benchmarks/extract/heldout.jsonl was written before
    the heads and never used to train or tune them.

    Example: remem bench extract --corpus benchmarks/extract/heldout.jsonl --errors
    """
    from ..extract.evaluate import run

    with boundary():
        result: dict[str, Any] = run(corpus)
    if not as_json and not errors:
        result = {k: v for k, v in result.items() if k not in _CASES}
    report("extraction", result, as_json)
