"""Agent hooks end to end: installed by `remem install`, run as the agent runs them (the
command line from the settings, the documented JSON on stdin), answers checked."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

from remem import Config, Memory
from remem.cli import app
from remem.daemon.client import ask_daemon, endpoint
from remem.integrations.hooks import run_hook

runner = CliRunner()


class Agent:
    """A project with remem installed for one agent, and a way to fire its hooks."""

    def __init__(self, root: Path, env: dict[str, str], commands: dict[str, str]) -> None:
        self.root, self.env, self.commands = root, env, commands
        self.stderr = ""

    def fire(self, event: str, payload: dict[str, Any] | bytes) -> tuple[int, str]:
        """Run the installed command for ``event``: (exit code, stdout)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        done = subprocess.run(self.commands[event], shell=True, input=data, cwd=self.root,
                              env=self.env, capture_output=True, timeout=60)
        self.stderr = done.stderr.decode(errors="replace")
        return done.returncode, done.stdout.decode()

    def settle(self) -> None:
        """Wait until the daemon has stored what the hooks recorded and digested it."""
        ep, answer = endpoint(None, self.env), None
        for _ in range(600):  # a daemon a hook just started may still be loading
            answer = ask_daemon(ep, {"op": "flush", "timeout": 60}, 90)
            if answer is not None:
                break
            threading.Event().wait(0.1)
        assert answer is not None and answer["done"], answer

    def answer(self, event: str, payload: dict[str, Any]) -> dict[str, Any] | None:
        code, out = self.fire(event, payload)
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


@pytest.fixture
def runtime() -> Iterator[str]:
    """A short private folder for the daemon's socket (a socket path holds 107 bytes)."""
    folder = tempfile.mkdtemp(prefix="rr")
    yield folder
    for sock in Path(folder, "remem").glob("*.sock"):  # stop the daemons the hooks started
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(str(sock))
                s.sendall(b'{"op": "stop"}\n')
                s.recv(100)
            except OSError:
                pass
    shutil.rmtree(folder, ignore_errors=True)


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
           runtime: str) -> tuple[Path, dict[str, str]]:
    home, root = tmp_path / "home", tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    home.mkdir()
    # a generous deadline: a loaded test machine must not make a hook give up
    env = {**os.environ, "HOME": str(home), "REMEM_HOME": str(tmp_path / "store"),
           "REMEM_EMBEDDER": "hash", "REMEM_USER": "alice", "OMP_NUM_THREADS": "1",
           "REMEM_HOOK_DEADLINE_S": "30", "XDG_RUNTIME_DIR": runtime,
           "REMEM_DAEMON_IDLE_S": "120",
           # the installed hooks run `remem` from PATH, as on a machine where it is installed
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("HOME", "REMEM_HOME", "REMEM_EMBEDDER", "REMEM_USER"):  # for hooks run in-process
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["install", target], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root, env


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str) -> Agent:
    root, env = _setup(tmp_path, monkeypatch, "claude-code", runtime)
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
    claude.settle()
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
    assert claude.fire("PostToolUse", b"\xff\xfe not json") == (0, "")
    assert "expected a JSON object" in claude.stderr
    for event, junk in [("SessionStart", b""), ("PreToolUse", b'{"tool_input": 5}'),
                        ("UserPromptSubmit", b"[1, 2]"), ("NoSuchEvent", b"{}")]:
        assert claude.ask(event, junk) == ""
    store = Path(claude.env["REMEM_HOME"])
    store.mkdir()
    (store / "remem.db").write_bytes(b"this is not a database" * 100)
    assert claude.fire("SessionStart", payload(claude, "SessionStart", "s1")) == (0, "")
    assert "remem hook SessionStart" in claude.stderr  # said why, on stderr only
    for event in ("UserPromptSubmit", "PreToolUse", "PostToolUseFailure", "Stop"):
        assert claude.ask(event, bash(claude, event, "s1", "python x.py", prompt="hi there you",
                                      error="Exit code 1")) == ""


def test_a_broken_hook_command_line_says_why_and_never_breaks_the_agent(claude: Agent) -> None:
    command = claude.commands["SessionStart"]
    for broken, why in [(" --colour red", "unknown option --colour"),
                        (" --project", "--project needs a value"),
                        (" --agent vim", "--agent must be one of")]:
        claude.commands["SessionStart"] = command + broken
        assert claude.fire("SessionStart", payload(claude, "SessionStart", "s1")) == (0, "")
        assert why in claude.stderr
    claude.commands["SessionStart"] = command + " --project=shop"  # both spellings of an option
    assert claude.fire("SessionStart", payload(claude, "SessionStart", "s1"))[0] == 0
    assert "remem hook" not in claude.stderr


def test_no_hook_event_is_lost_while_another_process_holds_the_store(claude: Agent) -> None:
    with claude.memory() as m:  # create the store
        m.add("hello", user_id="alice")
    assert claude.fire("SessionStart", payload(claude, "SessionStart", "s1"))[0] == 0  # a warm daemon
    lock = sqlite3.connect(Path(claude.env["REMEM_HOME"]) / "remem.db", isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        for n in range(5):
            assert claude.fire("PostToolUse", bash(
                claude, "PostToolUse", "s1", f"make test-{n}", tool_response={"stdout": "ok"})) == (0, "")
        spooled = ask_daemon(endpoint(None, claude.env), {"op": "status"}, 10)
        assert spooled is not None and spooled["spooled"] >= 1  # kept, waiting for the store
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    claude.settle()
    with claude.memory() as m:
        events = [e.metadata["event"]["command"]
                  for e in m.list(kinds=["event"], user_id="alice", project="shop")]
    assert sorted(events) == [f"make test-{n}" for n in range(5)]


def test_without_a_daemon_a_hook_records_to_the_spool_and_the_next_daemon_stores_it(
        claude: Agent) -> None:
    ep = endpoint(None, claude.env)
    claude.env["REMEM_DAEMON"] = "0"  # the direct path for the first hook: no daemon yet
    assert claude.answer("SessionStart", payload(claude, "SessionStart", "s1")) is None
    assert ask_daemon(ep, {"op": "status"}, 5) is None
    from remem.daemon.client import spool

    message = {"op": "hook", "event": "PostToolUse", "agent": "claude-code", "user": None,
               "project": None, "cwd": str(claude.root), "record": True,
               "payload": bash(claude, "PostToolUse", "s1", "deploy --token ghp_abcdefghijklmnopqrstuvwx",
                               tool_response={"stdout": "deployed"})}
    path = Path(spool(ep, message))
    assert path.stat().st_mode & 0o777 == 0o600
    assert "ghp_abcdefghijklmnopqrstuvwx" not in path.read_text()  # masked before the disk
    del claude.env["REMEM_DAEMON"]
    assert claude.fire("SessionStart", payload(claude, "SessionStart", "s2"))[0] == 0  # starts one
    claude.settle()
    with claude.memory() as m:
        (event,) = m.list(kinds=["event"], user_id="alice", project="shop")
    assert event.metadata["event"]["command"] == "deploy --token ***"
    assert not list(Path(ep.spool).glob("*.json"))


def test_cursor_hooks_capture_commands_and_edits_and_answer_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str) -> None:
    root, env = _setup(tmp_path, monkeypatch, "cursor", runtime)
    hooks = json.loads((root / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1
    cursor = Agent(root, env, {event: entries[0]["command"] for event, entries in hooks["hooks"].items()})
    common = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(root)]}
    code, out = cursor.fire("afterShellExecution", {
        **common, "hook_event_name": "afterShellExecution",
        "command": "NPM_TOKEN=npm_0123456789abcdef npm test", "cwd": str(root),
        "output": "npm ERR! missing script: test\nusing key sk-proj-0123456789abcdefghij",
        "duration": 120})
    assert (code, json.loads(out)) == (0, {})
    assert cursor.ask("afterFileEdit", {
        **common, "hook_event_name": "afterFileEdit", "file_path": str(root / "src" / "app.ts"),
        "edits": [{"old_string": "a", "new_string": "b"}]}, agent="cursor") == "{}"
    assert cursor.ask("stop", b"garbage", agent="cursor") == "{}"  # Cursor wants JSON, always
    cursor.settle()
    with cursor.memory() as m:
        events = [e.metadata["event"] for e in m.list(kinds=["event"], user_id="alice", project="shop")]
    assert {e["type"] for e in events} == {"tool_call", "file_edit"}
    assert any(e.get("path") == "src/app.ts" for e in events)
    (shell,) = [e for e in events if e["type"] == "tool_call"]
    assert shell["command"] == "NPM_TOKEN=*** npm test"  # credentials never reach the store
    assert "sk-proj" not in shell["output"] and "missing script" in shell["output"]


_ID = re.compile(r"\(id ([a-z]_[0-9a-f]+)")


def test_each_hook_logs_exactly_the_memories_its_answer_gave(claude: Agent) -> None:
    with claude.memory() as m:
        m.remember("Always use pnpm, never npm, in this repo", kind="convention", user_id="alice",
                   project="shop")
        m.remember("npm install breaks the lockfile here: run pnpm install instead",
                   kind="pitfall", user_id="alice", project="shop")
        m.remember("Alice writes commit messages in the imperative", kind="preference",
                   user_id="alice")
        m.flush()
    # through the installed commands (answered by the daemon), and once in this process
    start = claude.answer("SessionStart", payload(claude, "SessionStart", "s7", source="startup"))
    warned = claude.answer("PreToolUse", bash(claude, "PreToolUse", "s7", "npm install lodash"))
    asked = claude.ask_json("UserPromptSubmit", payload(
        claude, "UserPromptSubmit", "s7", prompt="how do I install lodash with pnpm here?"))
    texts = {}
    for event, out in (("SessionStart", start), ("PreToolUse", warned), ("UserPromptSubmit", asked)):
        assert out is not None, (event, claude.stderr)
        texts[f"hook:{event}"] = out["hookSpecificOutput"]["additionalContext"]
    with claude.memory() as m:
        log = {entry.door: entry for entry in m.injections(session_id="s7")}
        assert set(log) == set(texts)
        for door, text in texts.items():
            assert [i.memory_id for i in log[door].items] == _ID.findall(text), door
            assert log[door].text == text
            assert (log[door].user_id, log[door].project) == ("alice", "shop")
        assert len(log["hook:SessionStart"].items) == 3
        assert "pitfall" in {i.kind for i in log["hook:PreToolUse"].items}
        assert log["hook:PreToolUse"].query == "npm install lodash"
        # a session start with nothing to say logs nothing
        assert m.injections(session_id="nothing") == []
