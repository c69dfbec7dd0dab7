"""Reports of benchmark results: Markdown (with PNG plots beside it) and a self-contained
HTML page with the plots inside, from a results JSON file, so a report can be rebuilt from
saved results (``remem bench report results.json``); and the same for a scenarios run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["build_report", "render_markdown", "render_scenarios_markdown", "scenarios_html"]

_RETRIEVAL = ["recall@5", "recall@10", "recall@20", "recall_any@10", "recall_all@10",
              "ndcg@10", "session_recall@10", "session_recall_all@10",
              "recall@500tokens", "recall@1000tokens", "recall@2000tokens"]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return "–" if value is None else str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines + [""]


def _size(n: int | None) -> str:
    if n is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render_markdown(results: dict[str, Any], plots: list[str] | None = None,
                    plot_note: str | None = None) -> str:
    """The report text for ``results``; ``plots`` are image file names to link."""
    ds, settings = results.get("dataset", {}), results.get("settings", {})
    systems = results.get("systems", {})
    ok = {n: s for n, s in systems.items() if "error" not in s}
    out = [f"# Retrieval benchmark: {ds.get('name', '?')}", ""]
    sha = str(settings.get("data_sha256"))[:12]
    out += [f"- Data: `{settings.get('data_file')}` (sha256 {sha}…), "
            f"{ds.get('conversations')} conversation(s), {ds.get('scored_questions')} scored of "
            f"{ds.get('questions')} question(s), {ds.get('turns')} turns indexed",
            f"- Protocol: {ds.get('protocol')}",
            f"- Ingestion: {settings.get('ingestion')}; search depth {settings.get('depth')}, "
            f"k counts {settings.get('k_counts')}; context = top {settings.get('context_k')} turns "
            "(every turn for full-context)",
            "- Categories: " + "; ".join(c if d in c else f"{c} = {d}"
                                         for c, d in ds.get("categories", {}).items()),
            f"- Headline figures average: {', '.join(ds.get('main_categories', []))}", ""]
    notes, skipped = ds.get("notes", {}), ds.get("skipped_in_run", {})
    if notes:
        out += ["Counted while loading the whole file (before any limit):", ""]
        out += [f"- {k}: {v}" for k, v in notes.items()] + [""]
    if skipped:
        out += ["Questions of this run left out of the metrics:", ""]
        out += [f"- {k}: {v}" for k, v in skipped.items()] + [""]
    out += ["## Retrieval (headline categories)", ""]
    out += _table(["system", *_RETRIEVAL, "questions"],
                  [[n, *[s.get(m) for m in _RETRIEVAL], s.get("questions")] for n, s in ok.items()])
    out += ["## Cost and speed", ""]
    out += _table(
        ["system", "ingest ms/turn p50", "p95", "flush ms/session p50", "search ms p50", "p95",
         "context tokens mean", "p95", "store", "peak RSS MiB", "RSS growth MiB"],
        [[n, s["ingest_ms_per_turn"]["p50"], s["ingest_ms_per_turn"]["p95"],
          s["flush_ms_per_session"]["p50"], s["search_ms"]["p50"], s["search_ms"]["p95"],
          s["context_tokens"]["mean"], s["context_tokens"]["p95"], _size(s.get("store_bytes")),
          s.get("peak_rss_mb"), s.get("rss_growth_mb")] for n, s in ok.items()])
    categories = list(dict.fromkeys(c for s in ok.values() for c in s.get("by_category", {})))
    if categories:
        out += ["## Recall@10 per category", ""]
        out += _table(["category", *ok],
                      [[c, *[s.get("by_category", {}).get(c, {}).get("recall@10")
                             for s in ok.values()]] for c in categories])
        out += _table(["category", "questions"],
                      [[c, next((s["by_category"][c]["questions"] for s in ok.values()
                                 if c in s.get("by_category", {})), 0)] for c in categories])
    llm = {n: s["llm"] for n, s in ok.items() if "llm" in s}
    if llm:
        cfg = settings.get("llm") or {}
        out += ["## Answers (LLM)", "",
                f"Model `{cfg.get('model')}`, {cfg.get('judge')} judge, {cfg.get('judge_runs')} "
                f"judge runs at temperature {cfg.get('judge_temperature')}.", ""]
        out += _table(["system", "judge accuracy (mean)", "std over runs", "token F1", "questions",
                       "unparsed verdicts"],
                      [[n, v["judge_accuracy"]["mean"], v["judge_accuracy"]["std"], v["f1"],
                        v["questions"], v["unparsed_verdicts"]] if "error" not in v
                       else [n, v["error"], "", "", "", ""] for n, v in llm.items()])
    notes = {n: s["notes"] for n, s in ok.items() if s.get("notes")}
    errors = {n: s["error"] for n, s in systems.items() if "error" in s}
    if notes or errors:
        out += ["## Notes", ""] + [f"- {n}: {t}" for n, t in notes.items()]
        out += [f"- {n} did not run: {e}" for n, e in errors.items()] + [""]
    if "full-context" in ok:
        out += ["full-context ranks nothing (it returns every turn, oldest first); its recall "
                "figures only show where evidence sits in time, its token cost is the point.", ""]
    if plots:
        out += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    elif plot_note:
        out += ["## Plots", "", plot_note, ""]
    return "\n".join(out)


def build_report(results_path: str | Path, *, plots: bool = True,
                 html: str | Path | None = None) -> Path:
    """Write ``<name>.md`` (and ``<name>-*.png`` plots) and ``html`` (default
    ``<name>.html``) beside ``results_path``; returns the Markdown file."""
    from .html import write_html
    from .plots import MISSING, available, run_plots

    path = Path(results_path)
    results = json.loads(path.read_text())
    drawn = run_plots(results, path.stem) if plots else []
    note = None
    if plots and not drawn:
        note = (f"No plots: {MISSING}." if not available()
                else "No plots: no system produced results.")
    for plot in drawn:
        (path.parent / plot.name).write_bytes(plot.png)
    text = render_markdown(results, [p.name for p in drawn], note)
    md = path.with_suffix(".md")
    md.write_text(text)
    title = f"Retrieval benchmark: {results.get('dataset', {}).get('name', '?')}"
    write_html(html if html is not None else path.with_suffix(".html"), title, text, drawn,
               plot_note=note or ("Plots were not asked for." if not plots else None))
    return md


def render_scenarios_markdown(result: dict[str, Any]) -> str:
    """The report text of a ``remem bench scenarios`` result."""
    out = [f"# Scenarios: {Path(str(result.get('data', '?'))).name}", "",
           f"- Data: `{result.get('data')}`, {result.get('scenarios')} scenario(s)", ""]
    out += ["## Headline", ""]
    out += _table(["figure", "value"], [[k, v] for k, v in result.get("headline", {}).items()])
    figures = result.get("figures", {})
    checks = [c for c in ("start", "stale", "superseded", "forgotten", "leak", "precision")
              if any(c in f for f in figures.values())]
    out += ["## Pass rate per group", ""]
    out += _table(["group", *checks, "n"],
                  [[g, *[f.get(c) for c in checks], f.get("n")] for g, f in figures.items()])
    failures = result.get("failures", [])
    if failures:
        out += ["## Failures", ""]
        out += [f"- `{f.get('id')}`: {', '.join(f.get('failed', []))}" for f in failures] + [""]
    return "\n".join(out)


def scenarios_html(result: dict[str, Any], path: str | Path) -> Path:
    """Write the HTML report of a ``remem bench scenarios`` result, its plots inside."""
    from .html import write_html
    from .plots import MISSING, available, scenario_plots

    drawn = scenario_plots(result, Path(path).stem)
    note = None if drawn else (f"No plots: {MISSING}." if not available()
                               else "No plots: no scenario produced figures.")
    return write_html(path, f"Scenarios: {Path(str(result.get('data', '?'))).name}",
                      render_scenarios_markdown(result), drawn, plot_note=note)
