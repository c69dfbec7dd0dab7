"""``remem doctor``: each check ok / warn / fail with a fix, JSON for scripts, exit 1 on a failure."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from remem.cli import app

runner = CliRunner()
BIN = str(Path(sys.executable).parent)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("COLUMNS", "80")
    return root


def doctor(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["doctor", *args, "--json"], catch_exceptions=False)
    report = json.loads(result.stdout)
    return result.exit_code, {c["name"]: c for c in report["checks"]} | {"ok": report["ok"]}


def test_a_healthy_set_up_passes_every_check(project: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "team.db")
    assert runner.invoke(app, ["init", "--db", db]).exit_code == 0
    assert runner.invoke(app, ["install", "claude-code"]).exit_code == 0
    code, checks = doctor("--db", db)
    assert code == 0 and checks["ok"] is True
    assert checks["install"]["status"] == "ok" and "remem 0." in checks["install"]["detail"]
    assert checks["store"]["status"] == "ok" and "schema" in checks["store"]["detail"]
    assert checks["embedder"]["status"] == "ok" and "embedded one text" in checks["embedder"]["detail"]
    assert checks["extractor"]["detail"].startswith("rules")
    assert checks["hook daemon"]["status"] == "ok"
    assert checks["claude-code in shop"]["status"] == "ok"
    assert "set up: .mcp.json" in checks["claude-code in shop"]["detail"]
    assert checks["cursor in shop"]["detail"] == "not set up"
    assert "remem install cursor" in checks["cursor in shop"]["hint"]


def test_a_missing_store_given_with_db_fails_with_a_fix(project: Path, tmp_path: Path) -> None:
    code, checks = doctor("--db", str(tmp_path / "nope.db"))
    assert code == 1 and checks["ok"] is False
    assert checks["store"]["status"] == "fail" and "remem init" in checks["store"]["hint"]
    assert not (tmp_path / "nope.db").exists()


def test_a_half_removed_set_up_warns_and_one_whose_command_is_gone_fails(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert runner.invoke(app, ["install", "claude-code"]).exit_code == 0
    assert runner.invoke(app, ["install", "cursor"]).exit_code == 0
    (project / ".cursor" / "hooks.json").unlink()
    code, checks = doctor()
    assert checks["cursor in shop"]["status"] == "warn"
    assert ".cursor/hooks.json" in checks["cursor in shop"]["detail"]
    assert code == 0  # the default store not made yet is a warning, not a failure
    assert checks["store"]["status"] == "warn"

    monkeypatch.setenv("PATH", f"/usr/bin{os.pathsep}/bin")  # remem is not installed for the agent
    code, checks = doctor()
    assert code == 1
    assert checks["claude-code in shop"]["status"] == "fail"
    assert checks["remem on PATH"]["status"] == "warn"


def test_an_llm_extractor_without_an_endpoint_fails(project: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EXTRACTOR", "llm")
    code, checks = doctor()
    assert code == 1 and checks["extractor"]["status"] == "fail"
    assert "REMEM_LLM_BASE_URL" in checks["extractor"]["hint"]


def test_the_table_shows_each_check_with_its_fix(project: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["doctor", "--db", str(tmp_path / "nope.db")])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    store = next(i for i, line in enumerate(lines) if "store" in line and "fail" in line)
    assert "remem init" in " ".join(lines[store:store + 6])
