"""Every snippet of README.md runs as pasted: each ```python block in a fresh process,
and the ```bash blocks that work offline, in a temp folder with REMEM_HOME pointed into it.

A python block that needs something the test machine cannot have (a local model, a
package remem does not install) is preceded in README.md by
``<!-- readme-test: skip REASON -->``. A bash block is run when it is preceded by
``<!-- readme-test: run offline -->``: its commands in order, each in bash, leaving out
only what cannot run here (``pip install``, placeholders such as ``ID`` and
``path/to``, and the commands that serve until stopped).
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
FENCE = re.compile(r"(?:<!-- readme-test: (?:skip (?P<why>[^>]*?)|(?P<run>run offline)) -->\s*\n)?"
                   r"```(?P<lang>\w+)\n(?P<body>.*?)\n```", re.S)
# what a bash block may hold that cannot run in a test: the network, placeholders,
# commands that run until stopped
NOT_HERE = re.compile(r"^pip install|^cd path/to|\bID\b|^remem (?:serve|mcp|worker|bench|ui)\b")


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int
    skip: str | None
    run: bool = False


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text`` with their language, first line and skip mark."""
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("lang")) + 1
        found.append(Block(match["lang"], match["body"], line, match["why"], bool(match["run"])))
    return found


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(home)
    env["REMEM_DAEMON"] = "0"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


PYTHON = [b for b in blocks(README.read_text(encoding="utf-8")) if b.lang == "python"]
BASH = [b for b in blocks(README.read_text(encoding="utf-8")) if b.lang == "bash" and b.run]


def commands(block: Block) -> list[str]:
    """The commands of a bash block that can run here, in order, comments left out."""
    out = []
    for line in block.body.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        for command in (c.strip() for c in line.split(" ; ")):
            if command and not command.startswith("#") and not NOT_HERE.search(command):
                out.append(command)
    return out


def test_the_readme_has_python_snippets_and_few_are_skipped() -> None:
    assert len(PYTHON) >= 5
    assert sum(b.skip is not None for b in PYTHON) <= 2


def test_a_skip_mark_is_recognised() -> None:
    text = "x\n<!-- readme-test: skip needs a GPU -->\n```python\nboom()\n```\n```python\nok()\n```\n"
    assert [(b.body, b.skip) for b in blocks(text)] == [("boom()", "needs a GPU"), ("ok()", None)]


def test_the_bash_blocks_to_run_and_what_is_left_out_of_them() -> None:
    text = ("<!-- readme-test: run offline -->\n```bash\npip install .\ncd path/to/x\n"
            "remem add hi   # a comment\nremem show ID ; remem stats\nremem serve\n```\n"
            "```bash\nremem purge everything\n```\n")
    found = [b for b in blocks(text) if b.run]
    assert len(found) == 1 and commands(found[0]) == ["remem add hi", "remem stats"]
    assert len(BASH) >= 3


@pytest.mark.parametrize("block", PYTHON, ids=[f"line{b.line}" for b in PYTHON])
def test_python_snippet_runs_as_pasted(block: Block, tmp_path: Path) -> None:
    if block.skip:
        pytest.skip(block.skip)
    run = subprocess.run([sys.executable, "-c", block.body], cwd=tmp_path, env=_env(tmp_path / "home"),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"README.md line {block.line}:\n{run.stderr[-3000:]}"


def test_bash_snippets_run_as_pasted_in_the_order_of_the_readme(tmp_path: Path) -> None:
    """As a new user follows the README: one machine, one project, block after block."""
    project = tmp_path / "web"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# Rules\n\n- Always use pnpm, never npm.\n")
    env = {**_env(tmp_path / "home"), "HOME": str(tmp_path / "user"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run"), "REMEM_USER": "alice"}
    for block in BASH:
        for command in commands(block):
            run = subprocess.run(["bash", "-c", command], cwd=project, env=env,
                                 capture_output=True, text=True, timeout=600)
            assert run.returncode == 0, (f"README.md line {block.line}: {command}\n"
                                         f"{run.stderr[-2000:]}")
