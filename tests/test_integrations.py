"""`remem install` / `remem uninstall` for Claude Code, Cursor and Codex, and code anchors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from remem.cli import app
from remem.integrations.anchors import anchor, changed, parse_file_spec, stale
from remem.model import MemoryItem, utcnow

runner = CliRunner()

# a user's own settings, formatted their way (4 spaces), with a hook of their own
USER_SETTINGS = """{
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "./check.sh"}]}
        ]
    },
    "model": "opus"
}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home, root = tmp_path / "home", tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.chdir(root / "src")  # a sub-folder: the git root is the project
    return root


def remem(*args: str) -> Result:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_claude_code_project_install_adds_server_and_hooks_and_uninstall_restores_the_bytes(
        project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(USER_SETTINGS)
    before = snapshot(project)

    remem("install", "claude-code")
    server = read(project / ".mcp.json")["mcpServers"]["remem"]
    assert server["command"] == "remem" and server["args"] == ["mcp"]
    data = read(settings)
    assert data["permissions"] == {"allow": ["Bash(npm run lint)"]} and data["model"] == "opus"
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "./check.sh"
    ours = data["hooks"]["PreToolUse"][1]
    assert ours["matcher"] == "Bash" and "remem hook PreToolUse" in ours["hooks"][0]["command"]
    assert set(data["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PostToolUse",
                                  "PostToolUseFailure", "PreCompact", "Stop", "SessionEnd"}
    assert settings.read_text().startswith('{\n    "permissions"')  # their indentation kept

    remem("install", "claude-code")  # again: nothing doubles
    assert len(read(settings)["hooks"]["PreToolUse"]) == 2

    remem("uninstall", "claude-code")
    assert snapshot(project) == before


def test_claude_code_user_install_goes_to_the_home_files_and_keeps_other_keys(project: Path) -> None:
    home = Path.home()
    state = home / ".claude.json"
    state.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {}},
                                 "mcpServers": {"github": {"command": "gh-mcp"}}}, indent=2))
    before = state.read_bytes()

    remem("install", "claude-code", "--global", "--db", str(home / "team.db"))
    servers = read(state)["mcpServers"]
    assert servers["github"] == {"command": "gh-mcp"}
    assert servers["remem"]["args"][-2:] == ["--db", str(home / "team.db")]
    commands = [g["hooks"][0]["command"] for g in read(home / ".claude" / "settings.json")["hooks"]["Stop"]]
    assert commands == [f"{sys.executable} -m remem hook Stop --db {home / 'team.db'}"]
    assert not (project / ".mcp.json").exists()

    remem("uninstall", "claude-code", "--global")
    assert state.read_bytes() == before
    assert not (home / ".claude" / "settings.json").exists()  # remem created it: gone again


def test_project_files_name_no_path_of_this_machine_and_take_a_project_name(
        project: Path) -> None:
    """.mcp.json and .claude/settings.json are committed: no absolute Python path in them."""
    remem("install", "claude-code", "--project", "web")
    for path in (project / ".mcp.json", project / ".claude" / "settings.json"):
        text = path.read_text()
        assert sys.executable not in text and str(Path.home()) not in text, text
    server = read(project / ".mcp.json")["mcpServers"]["remem"]
    assert server == {"type": "stdio", "command": "remem", "args": ["mcp", "--project", "web"]}
    stop = read(project / ".claude" / "settings.json")["hooks"]["Stop"][0]["hooks"][0]
    assert stop["command"] == "remem hook Stop --project web"

    remem("install", "cursor", "--project", "web")
    hooks = read(project / ".cursor" / "hooks.json")["hooks"]["stop"][0]["command"]
    assert hooks == "remem hook stop --agent cursor --project web"
    assert sys.executable not in (project / ".cursor" / "mcp.json").read_text()
    remem("uninstall", "claude-code")
    remem("uninstall", "cursor")
    assert not (project / ".mcp.json").exists() and not (project / ".cursor").exists()


def test_claude_code_install_refuses_what_it_cannot_edit_safely(project: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {"remem": {"command": "other-tool"}}}')
    result = runner.invoke(app, ["install", "claude-code"])
    assert result.exit_code == 1 and "already configured" in result.output
    assert read(project / ".mcp.json") == {"mcpServers": {"remem": {"command": "other-tool"}}}

    (project / ".mcp.json").unlink()
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{ not json")
    result = runner.invoke(app, ["install", "claude-code"])
    assert result.exit_code == 1 and "not valid JSON" in result.output
    assert (project / ".claude" / "settings.json").read_text() == "{ not json"


def test_uninstall_after_the_user_changed_other_settings_keeps_their_changes(project: Path) -> None:
    remem("install", "claude-code")
    settings = project / ".claude" / "settings.json"
    data = read(settings)
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data, indent=2))
    remem("uninstall", "claude-code")
    assert read(settings) == {"model": "sonnet"}


def test_cursor_gets_server_capture_hooks_and_an_always_applied_rule(project: Path) -> None:
    mcp = project / ".cursor" / "mcp.json"
    mcp.parent.mkdir()
    mcp.write_text('{\n  "mcpServers": {\n    "db": {"command": "db-mcp"}\n  }\n}\n')
    before = snapshot(project)

    remem("install", "cursor")
    assert set(read(mcp)["mcpServers"]) == {"db", "remem"}
    hooks = read(project / ".cursor" / "hooks.json")
    assert hooks["version"] == 1
    assert set(hooks["hooks"]) == {"afterShellExecution", "afterFileEdit", "stop"}
    assert "--agent cursor" in hooks["hooks"]["stop"][0]["command"]
    rule = (project / ".cursor" / "rules" / "remem.mdc").read_text()
    assert rule.startswith("---\n") and "alwaysApply: true" in rule.split("---")[1]
    assert "memory_check_command" in rule and "memory_bootstrap" in rule

    assert runner.invoke(app, ["install", "cursor", "--global"]).exit_code == 1
    remem("uninstall", "cursor")
    assert snapshot(project) == before


def test_codex_gets_a_config_block_and_an_agents_md_guide_removed_exactly(project: Path) -> None:
    tomllib = pytest.importorskip("tomllib")
    codex = Path.home() / ".codex"
    codex.mkdir()
    config = codex / "config.toml"
    config.write_text('model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nargs = []\n')
    agents = project / "AGENTS.md"
    agents.write_text("# Agents\n\nRun `make check` before pushing.\n")
    before_config, before_agents = config.read_bytes(), agents.read_bytes()

    remem("install", "codex")
    parsed = tomllib.loads(config.read_text())
    assert parsed["model"] == "o3" and parsed["mcp_servers"]["docs"]["command"] == "docs-mcp"
    assert parsed["mcp_servers"]["remem"] == {"command": sys.executable, "args": ["-m", "remem", "mcp"]}
    text = agents.read_text()
    assert text.startswith("# Agents\n\nRun `make check` before pushing.\n")
    assert "memory_recall" in text and "<!-- remem:guide:begin -->" in text
    remem("install", "codex")  # idempotent
    assert config.read_text().count("[mcp_servers.remem]") == 1

    remem("uninstall", "codex")
    assert config.read_bytes() == before_config and agents.read_bytes() == before_agents


def test_codex_install_refuses_a_remem_server_it_did_not_write(project: Path) -> None:
    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.remem]\ncommand = "elsewhere"\n')
    result = runner.invoke(app, ["install", "codex"])
    assert result.exit_code == 1 and "already has [mcp_servers.remem]" in result.output
    assert config.read_text() == '[mcp_servers.remem]\ncommand = "elsewhere"\n'


def _item(anchors: list[dict[str, Any]]) -> MemoryItem:
    now = utcnow()
    return MemoryItem(id="m_1", kind="convention", text="x", metadata={"anchors": anchors},
                      observed_at=now, created_at=now, updated_at=now)


def test_an_anchor_goes_stale_only_when_its_cited_lines_change(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".git" / "refs" / "heads").mkdir(parents=True)
    (tmp_path / ".git" / "refs" / "heads" / "main").write_text("4e1d" * 10 + "\n")
    source = tmp_path / "app.py"
    source.write_text("a = 1\nb = 2\nc = 3\n")

    cited = anchor("app.py", parse_file_spec("app.py:2-3")[1], root=tmp_path)
    assert cited["path"] == "app.py" and cited["lines"] == [2, 3] and cited["commit"] == "4e1d" * 10
    whole = anchor(source, root=tmp_path)
    item = _item([cited])
    assert not stale(item, tmp_path)

    source.write_text("a = 100\nb = 2\nc = 3\n")  # line 1 is not cited
    assert not stale(item, tmp_path) and stale(_item([whole]), tmp_path)
    source.write_text("a = 100\nb = 2\nc = 4\n")
    assert changed(item, tmp_path) == [cited]
    source.unlink()
    assert stale(item, tmp_path)
