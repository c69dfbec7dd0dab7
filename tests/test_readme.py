"""Every snippet of README.md runs as pasted: each ```python block in a fresh process,
the offline ```bash lines too, in a temp folder with REMEM_HOME pointed into it.

A block that needs something the test machine cannot have (a local model, a running
service) is preceded in README.md by ``<!-- readme-test: skip REASON -->``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"(?P<mark><!-- readme-test: skip (?P<why>[^>]*?) -->\s*\n)?"
                   r"```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int
    skip: str | None


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text`` with their language, first line and skip mark."""
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("lang")) + 1
        found.append(Block(match["lang"], match["body"], line, match["why"]))
    return found


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(home)
    env["REMEM_DAEMON"] = "0"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


PYTHON = [b for b in blocks(README.read_text(encoding="utf-8")) if b.lang == "python"]


def test_the_readme_has_python_snippets_and_few_are_skipped() -> None:
    assert len(PYTHON) >= 5
    assert sum(b.skip is not None for b in PYTHON) <= 2


def test_a_skip_mark_is_recognised() -> None:
    text = "x\n<!-- readme-test: skip needs a GPU -->\n```python\nboom()\n```\n```python\nok()\n```\n"
    assert [(b.body, b.skip) for b in blocks(text)] == [("boom()", "needs a GPU"), ("ok()", None)]


@pytest.mark.parametrize("block", PYTHON, ids=[f"line{b.line}" for b in PYTHON])
def test_python_snippet_runs_as_pasted(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(block.skip)
    run = subprocess.run([sys.executable, "-c", block.body], cwd=tmp_path, env=_env(tmp_path / "home"),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"README.md line {block.line}:\n{run.stderr[-3000:]}"
