"""PNG plots of benchmark results: for ``remem bench run``, recall against k and against a
token budget, search latency and recall per category; for ``remem bench scenarios``, the
pass rates per category and per language.

matplotlib is optional (the ``bench`` extra); without it no plot is drawn and the caller
says so with ``MISSING``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MISSING", "Plot", "available", "draw", "run_plots", "scenario_plots"]

MISSING = "matplotlib is not installed (pip install 'remem[bench]')"


@dataclass(frozen=True)
class Plot:
    """One drawn figure: a file name, a caption and the PNG bytes."""

    name: str
    caption: str
    png: bytes


def available() -> bool:
    """Whether matplotlib can be imported, so plots can be drawn."""
    return _pyplot() is not None


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def run_plots(results: dict[str, Any], stem: str = "results") -> list[Plot]:
    """The plots of a ``remem bench run`` results dict; none without matplotlib or results."""
    plt = _pyplot()
    systems = {n: s for n, s in results.get("systems", {}).items() if "error" not in s}
    if plt is None or not systems:
        return []
    ks = results.get("settings", {}).get("ks", [1, 5, 10, 20, 50])
    names = list(systems)
    out = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, s in systems.items():
        ax.plot(ks, [s.get(f"recall@{k}", 0) for k in ks], marker="o", label=name)
    title = f"Recall@k, {results.get('dataset', {}).get('name', '')}"
    ax.set(xscale="log", xlabel="k (turns)", ylabel="evidence recall@k", ylim=(0, 1), title=title)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.legend()
    out.append(_png(plt, fig, f"{stem}-recall.png", title))

    budgets = sorted({int(key[len("recall@"):-len("tokens")]) for s in systems.values()
                      for key in s if key.startswith("recall@") and key.endswith("tokens")})
    if budgets:
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, s in systems.items():
            ax.plot(budgets, [s.get(f"recall@{b}tokens", 0) for b in budgets], marker="o",
                    label=name)
        title = "Recall within a token budget"
        ax.set(xscale="log", xlabel="context budget (tokens)", ylabel="evidence recall",
               ylim=(0, 1), title=title)
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.legend()
        out.append(_png(plt, fig, f"{stem}-tokens.png", title))

    fig, ax = plt.subplots(figsize=(6, 4))
    # a log axis cannot show 0: the fastest samples (rounded to 0.00 ms) sit at 0.001 ms
    ax.boxplot([[max(x, 1e-3) for x in systems[n].get("search_ms_samples") or [0.0]]
                for n in names], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), names)
    title = "Search latency per query"
    ax.set(yscale="log", ylabel="search latency (ms)", title=title)
    out.append(_png(plt, fig, f"{stem}-latency.png", title))

    categories = list(dict.fromkeys(c for s in systems.values() for c in s.get("by_category", {})))
    if categories:
        series = {n: [systems[n].get("by_category", {}).get(c, {}).get("recall@10", 0)
                      for c in categories] for n in names}
        out.append(_bars(plt, categories, series, "evidence recall@10", "Recall@10 per category",
                         f"{stem}-categories.png"))
    return out


_CHECKS = ("start", "stale", "superseded", "forgotten", "leak", "precision")


def scenario_plots(result: dict[str, Any], stem: str = "scenarios") -> list[Plot]:
    """The plots of a ``remem bench scenarios`` result: each check's pass rate per category
    and per language; none without matplotlib or figures."""
    plt = _pyplot()
    figures = result.get("figures", {})
    if plt is None or not figures:
        return []
    out = []
    for prefix, title, suffix in (("category:", "Pass rate per category", "categories"),
                                  ("lang:", "Pass rate per language", "languages")):
        groups = [k for k in figures if k.startswith(prefix)]
        checks = [c for c in _CHECKS if any(figures[g].get(c) is not None for g in groups)]
        if not groups or not checks:
            continue
        series = {c: [figures[g].get(c) or 0 for g in groups] for c in checks}
        labels = [f"{g[len(prefix):]} (n={figures[g].get('n', 0)})" for g in groups]
        out.append(_bars(plt, labels, series, "share passed", title, f"{stem}-{suffix}.png"))
    return out


def draw(results: dict[str, Any], folder: Path, stem: str) -> tuple[list[str], str | None]:
    """Write the plots of a ``remem bench run`` results dict into ``folder``; returns their
    file names and, if none were drawn, why."""
    if not available():
        return [], f"No plots: {MISSING}."
    plots = run_plots(results, stem)
    if not plots:
        return [], "No plots: no system produced results."
    for plot in plots:
        (folder / plot.name).write_bytes(plot.png)
    return [p.name for p in plots], None


def _bars(plt: Any, labels: list[str], series: dict[str, list[float]], ylabel: str, title: str,
          name: str) -> Plot:
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 1.4), 4))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series.items()):
        ax.bar([c + i * width for c in range(len(labels))], values, width, label=label)
    ax.set_xticks([c + 0.4 - width / 2 for c in range(len(labels))], labels,
                  rotation=20, ha="right")
    ax.set(ylabel=ylabel, ylim=(0, 1), title=title)
    ax.legend()
    return _png(plt, fig, name, title)


def _png(plt: Any, fig: Any, name: str, caption: str) -> Plot:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return Plot(name, caption, buf.getvalue())
