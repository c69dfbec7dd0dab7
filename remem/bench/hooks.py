"""``remem bench hooks``: what each Claude Code hook costs, as Claude Code runs it.

Every hook is a fresh process (``python -m remem hook EVENT``, the command ``remem
install`` writes) given the documented JSON on stdin, in a throw-away project and store
seeded with a few sessions. Runs alternate between three ways, so a busy machine weighs
on all of them alike:

- ``python``: a bare ``python -c pass``, the floor of any hook written in Python;
- ``daemon``: the thin client with the store's daemon warm (the default);
- ``direct``: the hook answered in its own process (``REMEM_DAEMON=0``), as before the
  daemon.

Then the store is locked by another writer for ``lock_s`` seconds while the shell-command
hooks keep firing, and what was stored afterwards is counted (``locked.lost`` must be 0).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .progress import Reporter
from .stats import percentile

__all__ = ["run"]

_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")


def _payload(event: str, root: Path, n: int) -> dict[str, Any]:
    base = {"session_id": f"bench-{n % 3}", "transcript_path": "/tmp/t.jsonl", "cwd": str(root),
            "hook_event_name": event, "permission_mode": "default"}
    if event == "SessionStart":
        return {**base, "source": "startup"}
    if event == "UserPromptSubmit":
        return {**base, "prompt": f"why do the migration tests fail on the ci runner? ({n})"}
    if event == "PreToolUse":
        return {**base, "tool_name": "Bash", "tool_input": {"command": "python manage.py test"}}
    if event == "PostToolUse":
        return {**base, "tool_name": "Bash", "tool_input": {"command": f"pytest -q tests/t{n}.py"},
                "tool_response": {"stdout": f"{n} passed", "stderr": "", "interrupted": False}}
    return {**base, "stop_hook_active": False, "last_assistant_message": f"Done with step {n}."}


def _fire(argv: list[str], data: bytes, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=data, env=env, cwd=cwd, capture_output=True, timeout=120, check=False)
    return (time.perf_counter() - start) * 1000


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1),
            "n": len(values)}


def _seed(env: dict[str, str], root: Path, hook: list[str]) -> None:
    """A few sessions' worth of what hooks record: a failure and its fix, prompts, edits."""
    env = {**env, "REMEM_DAEMON": "0"}
    failed = {"session_id": "seed", "cwd": str(root), "hook_event_name": "PostToolUseFailure",
              "tool_name": "Bash", "tool_input": {"command": "python manage.py test"},
              "error": "Exit code 127\nbash: python: command not found"}
    fixed = {"session_id": "seed", "cwd": str(root), "hook_event_name": "PostToolUse",
             "tool_name": "Bash", "tool_input": {"command": "python3 manage.py test"},
             "tool_response": {"stdout": "Ran 12 tests\nOK"}}
    for event, payload in (("PostToolUseFailure", failed), ("PostToolUse", fixed)):
        _fire([*hook, event], json.dumps(payload).encode(), env, root)
    from ..memory import Memory

    with Memory(Path(env["REMEM_HOME"]) / "remem.db") as m:
        for i in range(60):
            said = f"note {i}: the staging db is reset every night at 0{i % 9}:00"
            m.add([{"role": "user", "content": said},
                   {"role": "assistant", "content": f"Noted ({i})."}], user_id="bench",
                  project=root.name, session_id=f"seed-{i % 6}")
        m.flush()


def run(*, rounds: int = 20, lock_s: float = 10.0, progress: bool = True) -> dict[str, Any]:
    """Wall time of each hook event (ms, p50 and p95) by way, and the locked-store check."""
    with tempfile.TemporaryDirectory(prefix="rb") as tmp:
        root, store, runtime = Path(tmp, "shop"), Path(tmp, "store"), Path(tmp, "run")
        (root / ".git").mkdir(parents=True)
        env = {**os.environ, "REMEM_HOME": str(store), "REMEM_USER": "bench",
               "XDG_RUNTIME_DIR": str(runtime), "REMEM_HOOK_DEADLINE_S": "30"}
        env.pop("REMEM_DAEMON", None)
        hook = [sys.executable, "-m", "remem", "hook"]
        _seed(env, root, hook)
        times: dict[str, dict[str, list[float]]] = {way: {e: [] for e in _EVENTS}
                                                    for way in ("daemon", "direct")}
        bare: list[float] = []
        _fire([*hook, "SessionStart"], json.dumps(_payload("SessionStart", root, 0)).encode(), env, root)
        _wait_for_daemon(env)
        shown = Reporter("rounds", rounds) if progress else None
        for n in range(rounds):
            bare.append(_fire([sys.executable, "-c", "pass"], b"", env, root))
            for event in _EVENTS:
                data = json.dumps(_payload(event, root, n)).encode()
                times["daemon"][event].append(_fire([*hook, event], data, env, root))
                times["direct"][event].append(
                    _fire([*hook, event], data, {**env, "REMEM_DAEMON": "0"}, root))
            if shown is not None:
                shown.advance()
        if shown is not None:
            shown.close()
        locked = _locked(env, root, hook, store / "remem.db", lock_s)
        _stop(env)
    python = _summary(bare)
    out: dict[str, Any] = {
        "python_start_ms": python,
        "hook_ms": {e: _summary(times["daemon"][e]) for e in _EVENTS},
        "direct_hook_ms": {e: _summary(times["direct"][e]) for e in _EVENTS},
        "locked": locked, "rounds": rounds,
    }
    worst = max(v["p95"] for v in out["hook_ms"].values())
    out["ratios"] = {
        "worst_hook_p95_ms": worst,
        "worst_hook_p95_over_python_p95": round(worst / max(python["p95"], 1e-9), 2),
        "direct_over_daemon_p50": {e: round(out["direct_hook_ms"][e]["p50"]
                                            / max(out["hook_ms"][e]["p50"], 1e-9), 1)
                                   for e in _EVENTS},
    }
    return out


def _endpoint(env: dict[str, str]) -> Any:
    from ..daemon.client import endpoint

    return endpoint(None, env)


def _wait_for_daemon(env: dict[str, str], limit_s: float = 120) -> dict[str, Any]:
    from ..daemon.client import ask_daemon

    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        answer = ask_daemon(_endpoint(env), {"op": "flush", "timeout": 60}, 90)
        if answer is not None:
            return answer
        time.sleep(0.1)
    raise RuntimeError("the hook daemon did not start")


def _stop(env: dict[str, str]) -> None:
    from ..daemon.client import ask_daemon

    ask_daemon(_endpoint(env), {"op": "stop"}, 10)


def _locked(env: dict[str, str], root: Path, hook: list[str], db: Path, lock_s: float) -> dict[str, Any]:
    """Fire shell-command hooks while another writer holds the store, then count."""
    from ..memory import Memory

    with Memory(db) as m:
        before = len(m.list(kinds=["event"], user_id="bench", project=root.name, limit=1000))
    lock = sqlite3.connect(db, isolation_level=None)
    fired, wall = 0, []
    lock.execute("BEGIN EXCLUSIVE")
    try:
        end = time.monotonic() + lock_s
        while time.monotonic() < end:
            data = json.dumps(_payload("PostToolUse", root, 1000 + fired)).encode()
            wall.append(_fire([*hook, "PostToolUse"], data, env, root))
            fired += 1
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    _wait_for_daemon(env)
    with Memory(db) as m:
        after = len(m.list(kinds=["event"], user_id="bench", project=root.name, limit=1000))
    stored = after - before
    return {"lock_s": lock_s, "fired": fired, "stored": stored, "lost": fired - stored,
            "hook_ms_while_locked": _summary(wall)}
