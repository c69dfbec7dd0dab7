"""Rendering for the CLI: JSON for scripts, Rich tables and trees for people.

Data goes to stdout, diagnostics to stderr. User text is passed to Rich as ``Text``
(never parsed as markup) or through ``escape``, since memories hold ``[brackets]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..model import HistoryEntry, Hit, MemoryItem, Stats

__all__ = [
    "err_console",
    "out_console",
    "WIDE",
    "print_json",
    "records",
    "render_dict",
    "render_hits",
    "render_history",
    "render_item",
    "render_items",
    "render_stats",
    "trim",
]


#: Below this many columns, a table of many columns is printed as records instead, one
#: after the other: cells squeezed under 80 columns break into a word a line.
WIDE = 100


def records(rows: Iterable[tuple[Text, Sequence[Text]]], console: Console) -> None:
    """Rows as records: a first line, then indented lines that wrap on whole words."""
    for head, lines in rows:
        console.print(head)
        for line in lines:
            console.print(Padding(line, (0, 0, 0, 4), expand=False))


def out_console() -> Console:
    """A console on stdout, for data."""
    return Console()


def err_console() -> Console:
    """A console on stderr, for diagnostics and progress."""
    return Console(stderr=True)


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, non-ASCII kept as is."""
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))


def trim(text: str, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def when(value: datetime | None) -> str:
    """A time in local time to the minute, or an empty string."""
    return value.astimezone().strftime("%Y-%m-%d %H:%M") if value is not None else ""


def channels(hit: Hit) -> list[str]:
    """The recall channels that found a hit, best rank first: ``["fulltext #1", ...]``."""
    ranked = sorted(hit.channels.items(), key=lambda kv: kv[1])
    return [f"{name} #{rank}" for name, rank in ranked]


def _two_lines(main: str, detail: str) -> Text:
    """A cell with ``main`` (trimmed) and a dim second line of ``detail``."""
    text = Text(trim(main))
    text.append(f"\n{detail}", style="dim")
    return text


def render_hits(hits: list[Hit], console: Console) -> None:
    """A table of search hits: rank, score, kind, text (and id), channels."""
    if not hits:
        err_console().print("no memories matched", style="yellow")
        return
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("kind")
    table.add_column("text", ratio=1)
    table.add_column("channels", no_wrap=True)
    for rank, hit in enumerate(hits, 1):
        table.add_row(str(rank), f"{hit.score:.4f}", hit.memory.kind,
                      _two_lines(hit.memory.text, hit.memory.id), "\n".join(channels(hit)))
    console.print(table)


def render_items(items: Iterable[MemoryItem], console: Console) -> int:
    """A table of memories (id, kind, text with status and time); returns how many rows."""
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("kind")
    table.add_column("text", ratio=1)
    rows = 0
    for item in items:
        detail = f"{item.status} · {when(item.event_time or item.created_at)}"
        table.add_row(Text(item.id), item.kind, _two_lines(item.text, detail))
        rows += 1
    if rows:
        console.print(table)
    return rows


def _scope_line(item: MemoryItem) -> str:
    parts = [("org", item.org_id), ("user", item.user_id), ("agent", item.agent_id),
             ("project", item.project), ("session", item.session_id)]
    return "  ".join(f"{name}={value}" for name, value in parts if value is not None)


def render_item(item: MemoryItem, console: Console) -> None:
    """One memory in full: its fields, then its text."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    fields: list[tuple[str, str]] = [
        ("id", item.id), ("kind", item.kind), ("status", item.status),
        ("version", str(item.version)), ("role", item.role or ""),
        ("scope", _scope_line(item)), ("event time", when(item.event_time)),
        ("created", when(item.created_at)), ("updated", when(item.updated_at)),
        ("provenance", f"{item.provenance.door} door · said by {item.provenance.source} · "
                       f"trust {item.provenance.trust}"),
    ]
    if item.subject:
        fields.append(("subject", item.subject))
    if item.metadata:
        fields.append(("metadata", json.dumps(item.metadata, ensure_ascii=False)))
    if item.sources and item.sources != [item.id]:
        fields.append(("sources", ", ".join(item.sources)))
    for name, value in fields:
        if value:
            grid.add_row(name, Text(value))
    console.print(grid)
    console.print()
    console.print(Text(item.text))


def render_history(entries: list[HistoryEntry], console: Console) -> None:
    """A memory's versions and status changes, oldest first: a table on a wide terminal,
    records on a narrow one."""
    if console.width < WIDE:
        rows = []
        for entry in entries:
            head = Text(f"v{entry.version} {entry.action}", style="bold")
            head.append(f"  {entry.status} · {when(entry.at)}")
            lines = [Text(f"reason: {' '.join(entry.reason.split())}", style="dim")] \
                if entry.reason else []
            rows.append((head, [*lines, Text(trim(entry.text, 400))]))
        records(rows, console)
        return
    table = Table(box=box.SIMPLE_HEAD)
    for name in ("version", "action", "status", "at", "reason"):
        table.add_column(name, no_wrap=name == "at")
    table.add_column("text", ratio=1)
    for entry in entries:
        table.add_row(str(entry.version), entry.action, entry.status, when(entry.at),
                      Text(entry.reason or ""), Text(trim(entry.text)))
    console.print(table)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{key}={value}" for key, value in sorted(counts.items())) or "none"


def render_stats(stats: Stats, console: Console) -> None:
    """The counts of a store as a two-column table."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows = [
        ("path", stats.path), ("episodes", str(stats.episodes)),
        ("memories", str(stats.memories)), ("by kind", _counts(stats.by_kind)),
        ("by status", _counts(stats.by_status)), ("passages", str(stats.passages)),
        ("vectors", str(stats.vectors)), ("embed backlog", str(stats.embed_backlog)),
        ("jobs", _counts(stats.jobs)),
        ("embedder", stats.embedder), ("schema version", str(stats.schema_version)),
        ("size", f"{stats.size_bytes / 1e6:.2f} MB"),
    ]
    for name, value in rows:
        grid.add_row(name, Text(value))
    console.print(grid)


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def _grow(tree: Tree, value: Any) -> None:
    """Add ``value`` under ``tree``: dict keys and list items as branches, scalars as leaves."""
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    else:
        items = enumerate(value)
    for key, child in items:
        label = Text(f"{key}", style="bold")
        if isinstance(child, Mapping | list) and any(isinstance(c, Mapping | list)
                                                     for c in _children(child)):
            _grow(tree.add(label), child)
        elif isinstance(child, Mapping):
            tree.add(label + Text(": ") + Text(", ".join(f"{k}={_scalar(v)}"
                                                         for k, v in child.items())))
        elif isinstance(child, list):
            tree.add(label + Text(": ") + Text(", ".join(_scalar(v) for v in child)))
        else:
            tree.add(label + Text(": ") + Text(_scalar(child)))


def _children(value: Mapping[str, Any] | list[Any]) -> Iterable[Any]:
    return value.values() if isinstance(value, Mapping) else value


def render_dict(title: str, value: Mapping[str, Any], console: Console) -> None:
    """A nested dict (a benchmark result) as a tree of keys and values."""
    tree = Tree(Text(title, style="bold"))
    _grow(tree, value)
    console.print(tree)
