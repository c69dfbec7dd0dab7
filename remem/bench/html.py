"""A self-contained HTML benchmark report: the Markdown report's headings, lists and
tables as HTML, and the plots embedded as PNG data URIs, so the one file opens anywhere
with nothing fetched."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from pathlib import Path

from .plots import MISSING, Plot

__all__ = ["render_html", "write_html"]

_STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;margin:.6em 0 1.2em;display:block;overflow-x:auto}
td,th{border:1px solid #ccc;padding:.25em .6em}
th{background:#f3f3f3}td{text-align:right}td:first-child{text-align:left}
figure{display:inline-block;margin:.5em 1em 1em 0}figcaption{color:#555;font-size:90%}
code{background:#f3f3f3;padding:0 .2em}.note{color:#a40}"""


def _inline(text: str) -> str:
    parts = re.split(r"`([^`]*)`", text)  # odd indexes were inside backticks
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p)
                   for i, p in enumerate(parts))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _markdown(md: str) -> list[str]:
    """The subset of Markdown the benchmark reports write, as HTML lines."""
    out: list[str] = []
    table: list[list[str]] = []
    items: list[str] = []

    def close() -> None:
        if table:
            head, *rows = table
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>"
                       for r in rows)
            out.append("</table>")
            table.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            if not re.fullmatch(r"\|(-+\|)+", line.strip()):
                table.append(_cells(line))
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        close()
        if line.startswith("!["):  # image links of the Markdown file: embedded below instead
            continue
        heading = re.match(r"(#{1,3}) (.*)", line)
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    close()
    return out


def render_html(title: str, markdown: str, plots: Sequence[Plot], *,
                plot_note: str | None = None) -> str:
    """The report page: ``markdown`` as HTML, then ``plots`` embedded, or ``plot_note``."""
    body = [line for line in _markdown(markdown) if line != "<h2>Plots</h2>"
            and not (plot_note and line == f"<p>{_inline(plot_note)}</p>")]
    body.append("<h2>Plots</h2>")
    for plot in plots:
        data = base64.b64encode(plot.png).decode("ascii")
        body.append(f'<figure><img alt="{html.escape(plot.caption)}" '
                    f'src="data:image/png;base64,{data}">'
                    f"<figcaption>{html.escape(plot.caption)}</figcaption></figure>")
    if not plots:
        body.append(f'<p class="note">{html.escape(plot_note or f"No plots: {MISSING}.")}</p>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_html(path: str | Path, title: str, markdown: str, plots: Sequence[Plot], *,
               plot_note: str | None = None) -> Path:
    """Write :func:`render_html` to ``path`` (its folder is made); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(title, markdown, plots, plot_note=plot_note), encoding="utf-8")
    return target
