"""PNG plots of a results file: recall@k curves, search latency, recall per category.

matplotlib is optional; without it no plot is drawn and the report says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["draw"]


def draw(results: dict[str, Any], folder: Path, stem: str) -> tuple[list[str], str | None]:
    """Draw the plots into ``folder``; returns their file names and a note if none were."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "No plots: matplotlib is not installed (pip install matplotlib)."
    systems = {n: s for n, s in results.get("systems", {}).items() if "error" not in s}
    if not systems:
        return [], "No plots: no system produced results."
    ks = results.get("settings", {}).get("ks", [1, 5, 10, 20, 50])
    files = []

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, s in systems.items():
        ax.plot(ks, [s.get(f"recall@{k}", 0) for k in ks], marker="o", label=name)
    ax.set(xscale="log", xlabel="k (turns)", ylabel="evidence recall@k", ylim=(0, 1),
           title=f"Recall@k, {results.get('dataset', {}).get('name', '')}")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.legend()
    files.append(_save(fig, plt, folder, f"{stem}-recall.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(systems)
    # a log axis cannot show 0: the fastest samples (rounded to 0.00 ms) sit at 0.001 ms
    ax.boxplot([[max(x, 1e-3) for x in systems[n].get("search_ms_samples") or [0.0]]
                for n in names], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set(yscale="log", ylabel="search latency (ms)", title="Search latency per query")
    files.append(_save(fig, plt, folder, f"{stem}-latency.png"))

    categories = list(dict.fromkeys(c for s in systems.values() for c in s.get("by_category", {})))
    if categories:
        fig, ax = plt.subplots(figsize=(max(6, len(categories) * 1.4), 4))
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            by = systems[name].get("by_category", {})
            ax.bar([c + i * width for c in range(len(categories))],
                   [by.get(c, {}).get("recall@10", 0) for c in categories], width, label=name)
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(categories))], categories,
                      rotation=20, ha="right")
        ax.set(ylabel="evidence recall@10", ylim=(0, 1), title="Recall@10 per category")
        ax.legend()
        files.append(_save(fig, plt, folder, f"{stem}-categories.png"))
    return files, None


def _save(fig: Any, plt: Any, folder: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name
