"""Reading a labelled benchmark file: JSON lines, each checked, a bad one named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ValidationError

__all__ = ["read_labelled"]


def read_labelled(path: str | Path, check: Callable[[dict[str, Any]], object] = lambda row: None,
                  ) -> list[dict[str, Any]]:
    """Each non-blank line of ``path`` as a JSON object, passed to ``check`` (which raises
    ValueError, KeyError or TypeError for a bad one, and may fill in fields); a
    :class:`~remem.errors.ValidationError` naming the file and line of a bad one."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("expected a JSON object")
            check(row)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValidationError("data", f"{path}, line {n}: {exc}") from None
        out.append(row)
    return out
