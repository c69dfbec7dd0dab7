"""Code anchors: the files (and lines) a memory cites, and whether they changed since.

A memory cites code in ``metadata["anchors"]``, a list of dicts::

    {"path": "src/app.py", "lines": [10, 24], "sha256": "9f2c...", "commit": "4e1d..."}

``path`` is relative to the project root (posix separators), ``lines`` is an inclusive,
1-based range (absent: the whole file), ``sha256`` the digest of those bytes when the
memory was written and ``commit`` the git HEAD then (absent outside git). A memory whose
cited content changed may be out of date: :func:`stale` says so.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..model import MemoryItem

__all__ = ["anchor", "anchors_of", "changed", "git_head", "parse_file_spec", "relative", "stale"]

_SPEC = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")


def parse_file_spec(spec: str) -> tuple[str, tuple[int, int] | None]:
    """``("src/a.py", (10, 20))`` from ``"src/a.py:10-20"``; a bare path has no lines."""
    match = _SPEC.match(spec.strip())
    if match is None or not match.group("path"):
        raise ValidationError("files", f"{spec!r} is not a path or path:START-END")
    if match.group("start") is None:
        return match.group("path"), None
    start = int(match.group("start"))
    end = int(match.group("end") or start)
    return match.group("path"), (start, end)


def _digest(data: bytes, lines: tuple[int, int] | None) -> str:
    if lines is not None:
        data = b"".join(data.splitlines(keepends=True)[lines[0] - 1: lines[1]])
    return hashlib.sha256(data).hexdigest()


def relative(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` in posix form; as given (made absolute) when outside it."""
    base = Path(root).expanduser().resolve()
    target = Path(path).expanduser()
    target = (target if target.is_absolute() else base / target).resolve()
    try:
        return target.relative_to(base).as_posix()
    except ValueError:
        return target.as_posix()


def git_head(root: str | os.PathLike[str]) -> str | None:
    """The commit checked out in the git repository at ``root``, or None."""
    git = Path(root) / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            pointer = git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
            git = (Path(root) / pointer).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.removeprefix("ref:").strip()
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text(encoding="utf-8").strip()).resolve()
        for folder in (git, common):
            if (folder / ref).is_file():
                return (folder / ref).read_text(encoding="utf-8").strip() or None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    except OSError:
        return None
    return None


def anchor(path: str | os.PathLike[str], lines: tuple[int, int] | list[int] | None = None, *,
           root: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The anchor of a file (or of lines ``start``-``end`` of it) as it is now.

    ``root`` (default: the current folder) is what the stored path is relative to.
    Raises ``ValidationError`` when the file cannot be read or the range is not one.
    """
    base = Path(root) if root is not None else Path.cwd()
    target = Path(path).expanduser()
    target = target if target.is_absolute() else base / target
    span: tuple[int, int] | None = None
    if lines is not None:
        if len(lines) != 2 or not all(isinstance(n, int) and n >= 1 for n in lines) \
                or lines[0] > lines[1]:
            raise ValidationError("lines", f"expected [start, end] with 1 <= start <= end, got {lines!r}")
        span = (lines[0], lines[1])
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise ValidationError("files", f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    out: dict[str, Any] = {"path": relative(target, base), "sha256": _digest(data, span)}
    if span is not None:
        out["lines"] = list(span)
    commit = git_head(base)
    if commit:
        out["commit"] = commit
    return out


def anchors_of(item: MemoryItem | dict[str, Any]) -> list[dict[str, Any]]:
    """The well-formed anchors a memory (or a metadata dict) cites; malformed entries are
    ignored."""
    metadata = item if isinstance(item, dict) else item.metadata
    raw = metadata.get("anchors")
    if not isinstance(raw, list):
        return []
    return [a for a in raw if isinstance(a, dict) and isinstance(a.get("path"), str)
            and isinstance(a.get("sha256"), str)]


def changed(item: MemoryItem | list[dict[str, Any]], root: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The anchors of ``item`` (or the anchors given) whose content is gone or differs
    from when they were taken."""
    out = []
    for cited in anchors_of(item) if isinstance(item, MemoryItem) else item:
        target = Path(cited["path"])
        target = target if target.is_absolute() else Path(root) / target
        lines = cited.get("lines")
        span = (lines[0], lines[1]) if isinstance(lines, list) and len(lines) == 2 else None
        try:
            now = _digest(target.read_bytes(), span)
        except OSError:
            now = None
        if now != cited["sha256"]:
            out.append(cited)
    return out


def stale(item: MemoryItem, root: str | os.PathLike[str]) -> bool:
    """True when a file the memory cites changed (or is gone) since it was written."""
    return bool(changed(item, root))
