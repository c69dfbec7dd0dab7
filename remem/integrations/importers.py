"""Existing agent instruction files -> typed memories, each citing where it came from.

Formats: ``claude-md`` (CLAUDE.md), ``agents-md`` (AGENTS.md) and ``cursor-rules`` (a
``.cursor/rules`` folder of ``.mdc`` files, one ``.mdc`` file, or a ``.cursorrules``
file). Each list item, numbered procedure or paragraph under a heading becomes one
memory; its kind comes from the heading and the wording:

- ``pitfall``: under a pitfall / gotcha / caveat / troubleshooting heading, or worded as
  a trap ("X fails ...; use Y", "does not work", "beware");
- ``preference``: under a preferences heading, or "I prefer", "the user likes";
- ``decision``: "we decided", "we chose", or under a decisions heading;
- ``procedure``: a numbered list under a setup / release / deploy / how-to heading (one
  memory for the whole list);
- ``project``: under an overview / architecture / structure / stack heading, and prose;
- ``convention``: every other instruction.

Each memory is pinned (people wrote it down; it does not decay). The episode it comes
from holds ``source`` (format, path, lines, section) and an anchor on those lines (see
:mod:`remem.integrations.anchors`) in its metadata, so a later edit of the file marks it
``stale?``. remem's own marked blocks are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import ValidationError
from ..model import MemoryItem
from .agent import AgentMemory
from .anchors import relative

__all__ = ["FORMATS", "Format", "Section", "Snippet", "import_files", "parse_file", "parse_text",
           "source_files"]

Format = Literal["claude-md", "agents-md", "cursor-rules"]
FORMATS: tuple[Format, ...] = ("claude-md", "agents-md", "cursor-rules")

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|(\d+)[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKED = re.compile(r"^<!-- remem:(?:([\w-]+):)?begin -->$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
# headings that say no more than the kind does: no need to repeat them in each memory
_GENERIC = re.compile(r"^(?:conventions?|rules?|guidelines?|notes?|general|instructions?|important|"
                      r"tips?|gotchas?|pitfalls?|caveats?|preferences?|decisions?)\W*$", re.I)

_HEAD_KIND = [
    ("pitfall", re.compile(r"pitfall|gotcha|caveat|troubleshoot|known (?:issue|problem)|"
                           r"common (?:mistake|error)|warning|watch out|don'?t|avoid", re.I)),
    ("preference", re.compile(r"preference|prefer|my style|personal|about me", re.I)),
    ("decision", re.compile(r"decision|adr\b|why we|rationale", re.I)),
    ("procedure", re.compile(r"setup|set up|install|release|deploy|how to|getting started|"
                             r"workflow|steps|procedure|run(?:ning)? locally", re.I)),
    ("project", re.compile(r"overview|about|architecture|structure|layout|stack|project|"
                           r"context|background|introduction|what is", re.I)),
]
_RULES = re.compile(r"\brules?\b|conventions?|guidelines?|standards?|style", re.I)
_TEXT_KIND = [
    ("pitfall", re.compile(r"\b(?:fails?|failing|breaks?|broken|crash\w*|does ?n[o']t work|"
                           r"won'?t work|beware|gotcha|careful|pitfall|trap|hangs?|times? out)\b|"
                           r"\binstead\b.*\b(?:not|never|don'?t)\b|\b(?:not|never|don'?t)\b.*\binstead\b",
                           re.I)),
    ("preference", re.compile(r"\b(?:i|we) (?:prefer|like|love|hate|dislike)\b|"
                              r"\buser (?:prefers|likes|wants)\b", re.I)),
    ("decision", re.compile(r"\b(?:we|i) (?:decided|chose|picked|settled on|went with)\b|"
                            r"\bdecision\b", re.I)),
]


@dataclass(frozen=True)
class Section:
    """The headings above a snippet, outermost first."""

    titles: tuple[str, ...] = ()

    def __str__(self) -> str:
        return " > ".join(self.titles)


@dataclass
class Snippet:
    """One memory read from an instruction file, with where it came from."""

    kind: str
    text: str
    start: int
    end: int
    section: Section = field(default_factory=Section)

    @property
    def lines(self) -> tuple[int, int]:
        return self.start, self.end


def _clean(text: str) -> str:
    """Markdown emphasis and spacing taken off; code spans and words kept."""
    text = re.sub(r"\*\*(.+?)\*\*|__(.+?)__", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    return " ".join(text.split())


def _kind(text: str, section: Section, numbered: bool) -> str:
    heading = section.titles[-1] if section.titles else ""
    for kind, pattern in _TEXT_KIND:
        if pattern.search(text):
            return kind
    for kind, pattern in _HEAD_KIND:
        if pattern.search(heading):
            if kind == "procedure" and not numbered:
                return "convention"
            if kind == "project" and _RULES.search(heading):  # "Project rules" are rules
                return "convention"
            return kind
    return "convention"


def _with_section(text: str, section: Section) -> str:
    """The snippet's text, led by its heading when that says what it is about."""
    title = section.titles[-1] if section.titles else ""
    if not title or _GENERIC.match(title) or len(title.split()) > 6:
        return text
    if text.lower().startswith(title.lower().rstrip(":")):
        return text
    return f"{title.rstrip(':')}: {text}"


def _blocks(lines: list[str]) -> Iterator[tuple[str, int, int, bool, int]]:
    """``(kind of block, first line, last line, numbered, indent)`` of each list item,
    paragraph, heading or code block, 1-based; ``kind`` is heading, item, para or code."""
    i = 0
    skip_until: str | None = None
    in_front = bool(lines) and lines[0].strip() == "---"
    while i < len(lines):
        line = lines[i].rstrip("\n")
        stripped = line.strip()
        if in_front:  # YAML front matter of an .mdc rule
            if i > 0 and stripped == "---":
                in_front = False
            i += 1
            continue
        if skip_until is not None:
            if stripped == skip_until:
                skip_until = None
            i += 1
            continue
        marked = _MARKED.match(stripped)
        if marked:  # remem's own blocks are not instructions to import
            name = marked.group(1)
            skip_until = f"<!-- remem:{name}:end -->" if name else "<!-- remem:end -->"
            i += 1
            continue
        if not stripped or _COMMENT.match(stripped) or stripped.startswith("@"):
            i += 1
            continue
        if _HEADING.match(line):
            yield "heading", i + 1, i + 1, False, 0
            i += 1
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            yield "code", i + 1, min(j, len(lines) - 1) + 1, False, 0
            i = j + 1
            continue
        bullet = _BULLET.match(line)
        if bullet:
            indent = len(bullet.group(1))
            j = i + 1
            while j < len(lines):
                nxt = lines[j].rstrip("\n")
                if not nxt.strip() or _HEADING.match(nxt) or _FENCE.match(nxt):
                    break
                sub = _BULLET.match(nxt)
                if sub and len(sub.group(1)) <= indent:
                    break
                if not sub and len(nxt) - len(nxt.lstrip()) <= indent and not nxt.startswith(" "):
                    break
                j += 1
            yield "item", i + 1, j, bullet.group(2) is not None, indent
            i = j
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() and not _HEADING.match(lines[j]) \
                and not _BULLET.match(lines[j]) and not _FENCE.match(lines[j]):
            j += 1
        yield "para", i + 1, j, False, 0
        i = j


def parse_text(text: str) -> list[Snippet]:
    """The snippets of one instruction file's text, in file order."""
    lines = text.splitlines()
    titles: list[tuple[int, str]] = []
    out: list[Snippet] = []
    steps: list[Snippet] = []

    def section() -> Section:
        return Section(tuple(t for _, t in titles))

    def close_steps() -> None:
        if len(steps) >= 2 and _kind(" ".join(s.text for s in steps), section(), True) == "procedure":
            body = " ".join(f"{n}) {s.text}" for n, s in enumerate(steps, 1))
            out.append(Snippet("procedure", _with_section(body, section()), steps[0].start,
                               steps[-1].end, section()))
        else:
            out.extend(steps)
        steps.clear()

    for kind, start, end, numbered, indent in _blocks(lines):
        chunk = [lines[n - 1] for n in range(start, end + 1)]
        if kind not in ("item", "code") or (kind == "item" and not numbered and not indent):
            close_steps()  # a numbered list ends at anything but its items, sub-items, code
        if kind == "heading":
            match = _HEADING.match(chunk[0])
            assert match is not None
            level = len(match.group(1))
            titles[:] = [(lv, t) for lv, t in titles if lv < level] + [(level, _clean(match.group(2)))]
            continue
        if kind == "code":
            body = "\n".join(chunk[1:-1]).strip()
            if not body:
                continue
            code = f"`{body}`" if "\n" not in body and "`" not in body else f"```\n{body}\n```"
            target = steps[-1] if steps else (
                out[-1] if out and out[-1].end >= start - 2 and out[-1].text.endswith(":") else None)
            if target is not None:  # a command shown right under the step that names it
                target.text = f"{target.text.rstrip(':')}: {code}"
                target.end = end
            else:
                out.append(Snippet("convention", _with_section(code, section()), start, end, section()))
            continue
        parts = []
        for n, line in enumerate(chunk):
            bullet = _BULLET.match(line)
            if bullet and n:  # a sub-item: its own clause
                parts.append("; " + bullet.group(3))
            else:
                parts.append(" " + (bullet.group(3) if bullet else line.strip()))
        text = _clean("".join(parts)).replace(" ;", ";").replace(".;", ";")
        if not text or len(text) < 3:
            continue
        if kind == "item" and indent and (steps or out):  # a sub-item belongs to its parent
            parent = steps[-1] if steps else out[-1]
            parent.text = f"{parent.text.rstrip('.:')}; {text}"
            parent.end = end
            continue
        snippet = Snippet(_kind(text, section(), numbered), "", start, end, section())
        if kind == "para" and snippet.kind == "convention" and not re.match(
                r"^(?:always|never|do|don'?t|use|prefer|avoid|run|make sure|keep|write|put)\b", text, re.I):
            snippet.kind = "project"
        snippet.text = text if kind == "para" and len(text.split()) > 12 else _with_section(text, section())
        if kind == "item" and numbered:
            snippet.text = text
            steps.append(snippet)
        else:
            out.append(snippet)
    close_steps()
    return out


def source_files(fmt: Format, path: Path) -> list[Path]:
    """The files to read for a format: the file itself, or a rules folder's rule files."""
    if not path.exists():
        raise ValidationError("path", f"{path} does not exist")
    if path.is_file():
        return [path]
    if fmt != "cursor-rules":
        raise ValidationError("path", f"{path} is a folder; give the {fmt.upper().replace('-', '.')} file")
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".mdc", ".md"))
    if not found:
        raise ValidationError("path", f"{path} holds no .mdc or .md rule files")
    return found


def parse_file(path: Path) -> list[Snippet]:
    """The snippets of one instruction file; a rule remem wrote itself gives none."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError("path", f"{path} is not UTF-8 text") from None
    if "<!-- remem:rule" in text:
        return []
    return parse_text(text)


def import_files(agent: AgentMemory, fmt: Format, path: Path, *,
                 dry_run: bool = False) -> list[tuple[Path, Snippet, MemoryItem | None]]:
    """Propose every snippet of the instruction file(s) at ``path`` as a memory in the
    agent's scope; with ``dry_run`` only parse. Returns each snippet with the memory it
    became (None on a dry run)."""
    root = agent.scope.root or Path.cwd()
    files = source_files(fmt, path)
    parsed = [(file, snippet) for file in files for snippet in parse_file(file)]
    out: list[tuple[Path, Snippet, MemoryItem | None]] = []
    for file, snippet in parsed:
        if dry_run:
            out.append((file, snippet, None))
            continue
        where = relative(file, root)
        meta = {"source": {"format": fmt, "path": where, "lines": list(snippet.lines),
                           "section": str(snippet.section)}}
        # a rule people wrote down is the team's word: pinned, it neither decays nor waits
        # to be confirmed before `remem export agents-md` shows it
        item = agent.remember(snippet.text, kind=snippet.kind, metadata=meta, pinned=True,
                              files=[f"{file.resolve()}:{snippet.start}-{snippet.end}"], role="import")
        out.append((file, snippet, item))
    return out
