"""``remem bench orchestrate`` and ``remem bench team``: plain-language requests, team skills."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .app import JsonOpt, bench_app, boundary
from .bench import report


@bench_app.command("orchestrate")
def orchestrate(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False,
        help="Labelled requests, JSON lines (benchmarks/orchestrate/requests.jsonl).")],
    errors: Annotated[bool, typer.Option(
        "--errors", help="Also list each request whose plan was not exact.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure the rules planner of ``remem do``: exact-plan accuracy and per-operator
    precision and recall, overall, on the held-out and dev splits, per language.

    Example: remem bench orchestrate --data benchmarks/orchestrate/requests.jsonl --json
    """
    from ..bench.orchestrate import run

    with boundary():
        result: dict[str, Any] = run(data)
    if not errors:
        result = {k: v for k, v in result.items() if k != "not_exact"}
    report("orchestration", result, as_json)


@bench_app.command("team")
def team(
    data: Annotated[Path, typer.Option(
        exists=True, dir_okay=False,
        help="Labelled teams, JSON lines (benchmarks/team/dev.jsonl).")],
    errors: Annotated[bool, typer.Option(
        "--errors", help="Also list each requirement that was not split right.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure the expert-team mode: lessons told once to the leader (roles, order, checks
    read right) and later requirements (the right skill applied, none where none should),
    with a sweep of ``agent.team_applies_at``.

    Example: remem bench team --data benchmarks/team/dev.jsonl --json
    """
    from ..bench.team import run

    with boundary():
        result: dict[str, Any] = run(data)
    if not errors:
        result = {k: v for k, v in result.items() if k != "not_right"}
    report("team", result, as_json)
