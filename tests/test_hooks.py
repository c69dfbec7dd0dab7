"""Agent hooks end to end: installed by `remem install`, run as the agent runs them (the
command line from the settings, the documented JSON on stdin), answers checked."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

from remem import Config, Memory
from remem.cli import app
from remem.integrations.hooks import run_hook

runner = CliRunner()


class Agent:
    """A project with remem installed for one agent, and a way to fire its hooks."""

    def __init__(self, root: Path, env: dict[str, str], commands: dict[str, str]) -> None:
        self.root, self.env, self.commands = root, env, commands
        self.stderr = ""

    def fire(self, event: str, payload: dict[str, Any] | bytes) -> tuple[int, str, float]:
        """Run the installed command for ``event``: (exit code, stdout, seconds)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        start = time.monotonic()
        done = subprocess.run(self.commands[event], shell=True, input=data, cwd=self.root,
                              env=self.env, capture_output=True, timeout=20)
        self.stderr = done.stderr.decode(errors="replace")
        return done.returncode, done.stdout.decode(), time.monotonic() - start

    def answer(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        code, out, _ = self.fire(event, payload)
        assert code == 0, self.stderr
        return json.loads(out) if out.strip() else None

    def ask(self, event: str, payload: dict[str, Any] | bytes,
            agent: Literal["claude-code", "cursor"] = "claude-code") -> str:
        """The same hook answered in this process (the same code, no process start-up)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        out, finished = run_hook(event, io.BytesIO(data), agent_name=agent, deadline_s=10)
        assert finished
        return out

    def ask_json(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        out = self.ask(event, payload)
        return json.loads(out) if out else None

    def memory(self) -> Memory:
        return Memory(Path(self.env["REMEM_HOME"]) / "remem.db", config=Config(embedder="hash"))


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> tuple[Path, dict[str, str]]:
    home, root = tmp_path / "home", tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    home.mkdir()
    # a generous deadline: a loaded test machine must not make a hook give up
    env = {**os.environ, "HOME": str(home), "REMEM_HOME": str(tmp_path / "store"),
           "REMEM_EMBEDDER": "hash", "REMEM_USER": "alice", "OMP_NUM_THREADS": "1",
           "REMEM_HOOK_DEADLINE_S": "10"}
    for name in ("HOME", "REMEM_HOME", "REMEM_EMBEDDER", "REMEM_USER"):  # for hooks run in-process
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["install", target, "--project"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root, env


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Agent:
    root, env = _setup(tmp_path, monkeypatch, "claude-code")
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    commands = {}
    for event, groups in settings["hooks"].items():
        (group,) = groups
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] <= 10
        commands[event] = hook["command"]
    return Agent(root, env, commands)


def payload(agent: Agent, event: str, session: str, **fields: Any) -> dict[str, Any]:
    """A hook input as Claude Code documents it."""
    return {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
            "cwd": str(agent.root), "permission_mode": "default", "hook_event_name": event,
            **fields}


def bash(agent: Agent, event: str, session: str, command: str, **fields: Any) -> dict[str, Any]:
    return payload(agent, event, session, tool_name="Bash", tool_use_id=f"toolu_{abs(hash(command))}",
                   tool_input={"command": command, "description": "run it"}, **fields)


def test_a_failed_command_and_its_fix_become_a_warning_in_the_next_session(claude: Agent) -> None:
    assert set(claude.commands) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                                    "PostToolUseFailure", "PreCompact", "Stop", "SessionEnd"}
    # session 1: nothing known yet; python is missing, python3 works
    assert claude.answer("SessionStart", payload(claude, "SessionStart", "s1", source="startup")) is None
    assert claude.ask("PreToolUse", bash(claude, "PreToolUse", "s1", "python manage.py test")) == ""
    assert claude.answer("PostToolUseFailure", bash(
        claude, "PostToolUseFailure", "s1", "python manage.py test",
        error="Exit code 127\nbash: python: command not found", is_interrupt=False)) is None
    assert claude.answer("PostToolUse", bash(
        claude, "PostToolUse", "s1", "python3 manage.py test",
        tool_response={"stdout": "Ran 12 tests\nOK", "stderr": "", "interrupted": False,
                       "isImage": False})) is None
    assert claude.ask("Stop", payload(claude, "Stop", "s1", stop_hook_active=False,
                                      last_assistant_message="The tests pass with python3.")) == ""

    with claude.memory() as m:
        events = [e.metadata["event"] for e in m.list(kinds=["event"], user_id="alice", project="shop")]
        assert sorted((e["command"], e["exit_code"]) for e in events) == [
            ("python manage.py test", 127), ("python3 manage.py test", 0)]
        failed = next(e for e in events if e["exit_code"] == 127)
        assert "command not found" in failed["output"]
        pitfalls = m.list(kinds=["pitfall"], user_id="alice", project="shop")
        assert pitfalls, "the failure and its fix should have become a pitfall"

    # session 2: the digest has the pitfall; running python again warns, never denies
    start = claude.answer("SessionStart", payload(claude, "SessionStart", "s2", source="startup"))
    assert start is not None, claude.stderr
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "python3" in start["hookSpecificOutput"]["additionalContext"]

    warned = claude.answer("PreToolUse", bash(claude, "PreToolUse", "s2", "python -m pytest -q"))
    specific = warned["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert "python3" in specific["additionalContext"]
    assert "permissionDecision" not in specific and "decision" not in warned
    assert "python" in warned["systemMessage"]
    assert claude.ask("PreToolUse", bash(claude, "PreToolUse", "s2", "python3 -m pytest")) == ""

    asked = claude.ask_json("UserPromptSubmit", payload(
        claude, "UserPromptSubmit", "s2", prompt="Why does python fail in this repo?"))
    assert asked["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "python3" in asked["hookSpecificOutput"]["additionalContext"]
    with claude.memory() as m:
        turns = {(e.role, e.text) for e in m.list(kinds=["episode"], user_id="alice", project="shop")}
    assert ("user", "Why does python fail in this repo?") in turns
    assert ("assistant", "The tests pass with python3.") in turns


def test_garbage_input_and_a_broken_store_never_break_the_agent(claude: Agent) -> None:
    code, out, seconds = claude.fire("PostToolUse", b"\xff\xfe not json")
    assert (code, out) == (0, "") and seconds < 6
    for event, junk in [("SessionStart", b""), ("PreToolUse", b'{"tool_input": 5}'),
                        ("UserPromptSubmit", b"[1, 2]"), ("NoSuchEvent", b"{}")]:
        assert claude.ask(event, junk) == ""
    store = Path(claude.env["REMEM_HOME"])
    store.mkdir()
    (store / "remem.db").write_bytes(b"this is not a database" * 100)
    code, out, seconds = claude.fire("SessionStart", payload(claude, "SessionStart", "s1"))
    assert (code, out) == (0, "") and seconds < 6
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUseFailure", "Stop"):
        assert claude.ask(event, bash(claude, event, "s1", "python x.py", prompt="hi there you",
                                      error="Exit code 1")) == ""


def test_a_hook_gives_up_quietly_when_the_store_is_locked(claude: Agent) -> None:
    with claude.memory() as m:  # create the store
        m.add("hello", user_id="alice")
    lock = sqlite3.connect(Path(claude.env["REMEM_HOME"]) / "remem.db", isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        del claude.env["REMEM_HOOK_DEADLINE_S"]  # the default, 2 s
        code, out, seconds = claude.fire("PostToolUse", bash(
            claude, "PostToolUse", "s1", "make test", tool_response={"stdout": "ok"}))
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert (code, out) == (0, "")
    assert seconds < 5  # well under the 10 s the store itself would wait


def test_cursor_hooks_capture_commands_and_edits_and_answer_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, env = _setup(tmp_path, monkeypatch, "cursor")
    hooks = json.loads((root / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1
    cursor = Agent(root, env, {event: entries[0]["command"] for event, entries in hooks["hooks"].items()})
    common = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(root)]}
    code, out, _ = cursor.fire("afterShellExecution", {
        **common, "hook_event_name": "afterShellExecution",
        "command": "NPM_TOKEN=npm_0123456789abcdef npm test", "cwd": str(root),
        "output": "npm ERR! missing script: test\nusing key sk-proj-0123456789abcdefghij",
        "duration": 120})
    assert (code, json.loads(out)) == (0, {})
    assert cursor.ask("afterFileEdit", {
        **common, "hook_event_name": "afterFileEdit", "file_path": str(root / "src" / "app.ts"),
        "edits": [{"old_string": "a", "new_string": "b"}]}, agent="cursor") == "{}"
    assert cursor.ask("stop", b"garbage", agent="cursor") == "{}"  # Cursor wants JSON, always
    with cursor.memory() as m:
        events = [e.metadata["event"] for e in m.list(kinds=["event"], user_id="alice", project="shop")]
    assert {e["type"] for e in events} == {"tool_call", "file_edit"}
    assert any(e.get("path") == "src/app.ts" for e in events)
    (shell,) = [e for e in events if e["type"] == "tool_call"]
    assert shell["command"] == "NPM_TOKEN=*** npm test"  # credentials never reach the store
    assert "sk-proj" not in shell["output"] and "missing script" in shell["output"]
