"""Careful edits of other tools' settings files: JSON documents and marked text blocks.

Edits change only what remem adds, keep the file's indentation, and are written through
a temporary file. Before the first change to an existing file its bytes are kept in
``<name>.remem.bak``; undoing the change restores those bytes exactly when nothing else
changed in between.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError

__all__ = [
    "Outcome",
    "backup_path",
    "edit_json",
    "edit_text",
    "prune_dirs",
    "remove_block",
    "undo_json",
    "upsert_block",
    "write_atomic",
]

Outcome = Literal["created", "updated", "unchanged", "removed", "absent"]


def backup_path(path: Path) -> Path:
    """Where the bytes of ``path`` before remem first changed it are kept."""
    return path.with_name(path.name + ".remem.bak")


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:  # as an ordinary new file would be, not mkstemp's owner-only mode
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _load(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8-sig")) if raw.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def _indent(raw: bytes | None) -> int | str:
    """The indentation the file uses (2 when it has none yet)."""
    if raw:
        match = re.search(rb"^[{\[]\s*\n([ \t]+)\S", raw)
        if match:
            unit = match.group(1).decode()
            return unit if "\t" in unit else len(unit)
    return 2


def _dump(data: dict[str, Any], raw: bytes | None) -> bytes:
    text = json.dumps(data, indent=_indent(raw), ensure_ascii=False)
    newline = raw is None or raw.endswith(b"\n")
    return (text + ("\n" if newline else "")).encode("utf-8")


def edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> Outcome:
    """Apply ``change`` to the JSON object in ``path`` (an absent file is ``{}``)."""
    raw = path.read_bytes() if path.exists() else None
    data = _load(path, raw) if raw is not None else {}
    before = copy.deepcopy(data)
    change(data)
    if data == before and raw is not None:
        return "unchanged"
    if raw is not None and not backup_path(path).exists():
        write_atomic(backup_path(path), raw)
    write_atomic(path, _dump(data, raw))
    return "created" if raw is None else "updated"


def undo_json(path: Path, remove: Callable[[dict[str, Any]], None], *,
              bare: Callable[[dict[str, Any]], bool] = lambda data: not data) -> Outcome:
    """Take out what ``remove`` takes out of the JSON object in ``path``.

    When the result equals the backup, the backup's bytes come back as they were; when
    remem created the file and what is left is ``bare`` (default: empty), the file is
    deleted.
    """
    if not path.exists():
        return "absent"
    raw = path.read_bytes()
    data = _load(path, raw)
    before = copy.deepcopy(data)
    remove(data)
    if data == before:
        return "unchanged"
    backup = backup_path(path)
    if backup.exists():
        saved = backup.read_bytes()
        try:
            same = _load(backup, saved) == data
        except ConfigError:
            same = False
        if same:
            write_atomic(path, saved)
            backup.unlink()
            return "removed"
    elif bare(data):
        path.unlink()
        return "removed"
    write_atomic(path, _dump(data, raw))
    return "removed"


def _block_re(begin: str, end: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(begin)}$.*?^{re.escape(end)}$\n?", re.DOTALL | re.MULTILINE)


def upsert_block(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with the block between the ``begin`` and ``end`` lines set to ``body``
    (added at the end, after a blank line, when there is none)."""
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    match = _block_re(begin, end).search(text)
    if match:
        return text[: match.start()] + block + text[match.end():]
    if not text:
        return block
    return text + ("\n" if text.endswith("\n") else "\n\n") + block


def remove_block(text: str, begin: str, end: str) -> str | None:
    """``text`` without the marked block and the blank line before it, or None when
    there is no such block."""
    match = _block_re(begin, end).search(text)
    if match is None:
        return None
    head, tail = text[: match.start()], text[match.end():]
    if head.endswith("\n\n"):
        head = head[:-1]
    return head + tail


def edit_text(path: Path, begin: str, end: str, body: str | None) -> Outcome:
    """Set (``body``) or remove (None) the marked block of a text file.

    A file remem created and that holds nothing else after the block is removed is
    deleted; a file that held text before gets its bytes back when only the block
    changed it.
    """
    raw = path.read_bytes() if path.exists() else None
    text = raw.decode("utf-8") if raw is not None else ""
    if body is not None:
        new = upsert_block(text, begin, end, body)
        if raw is not None and new == text:
            return "unchanged"
        if raw is not None and not backup_path(path).exists() and begin not in text:
            write_atomic(backup_path(path), raw)
        write_atomic(path, new.encode("utf-8"))
        return "created" if raw is None else "updated"
    if raw is None:
        return "absent"
    new_text = remove_block(text, begin, end)
    if new_text is None:
        return "unchanged"
    backup = backup_path(path)
    if backup.exists() and backup.read_bytes().decode("utf-8", errors="replace") == new_text:
        write_atomic(path, backup.read_bytes())
        backup.unlink()
    elif not new_text.strip() and not backup.exists():
        path.unlink()
    else:
        write_atomic(path, new_text.encode("utf-8"))
    return "removed"


def prune_dirs(path: Path, root: Path) -> None:
    """Remove the folders from ``path`` up to (not including) ``root`` that are empty."""
    folder = path if path.is_dir() else path.parent
    root = root.resolve()
    while folder.resolve() != root and root in folder.resolve().parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or not ours to remove)
            return
        folder = folder.parent
