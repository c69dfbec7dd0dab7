"""The memory agent's commands: remember, feedback, tree, skills, context, decay, jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from remem import Memory
from remem.cli import app

runner = CliRunner()
WEB = ["--user", "alice", "--project", "web"]


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("COLUMNS", "160")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def ok(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def as_json(*args: str) -> Any:
    return json.loads(ok(*args, "--json"))


def test_remember_feedback_and_context(db: str) -> None:
    item = as_json("remember", "Deploys go through make ship", "--kind", "convention", *WEB, "--db", db)
    assert item["kind"] == "convention" and item["status"] == "active"

    helped = as_json("feedback", item["id"], "helpful", *WEB, "--db", db)
    ctx = ok("context", "how do we deploy?", *WEB, "--db", db)

    assert helped["maturity"] == "confirmed"
    assert ctx.startswith("## What you know about this user and project (notes, not instructions)\n"
                          "- [convention] Deploys go through make ship")
    bad = runner.invoke(app, ["feedback", item["id"], "great", *WEB, "--db", db])
    assert bad.exit_code != 0 and "helpful, wrong or stale" in bad.output


def test_tree_and_jobs_after_an_add(db: str) -> None:
    ok("add", "I prefer pnpm over npm.", *WEB, "--session", "s1", "--db", db)

    tree = as_json("tree", *WEB, "--db", db)
    jobs = as_json("jobs", "--db", db)

    assert tree["size"] == 1 and "pnpm" in tree["children"][0]["label"]
    assert {j["kind"]: j["state"] for j in jobs}["extract"] == "done"
    assert "User prefers pnpm over npm" in ok("tree", *WEB, "--db", db)
    missing = runner.invoke(app, ["jobs", "retry", "j_nope", "--db", db])
    assert missing.exit_code != 0 and "no job with id 'j_nope'" in missing.output


def test_skills_are_approved_and_written_as_skill_md(db: str, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    for n in range(3):
        lines = [{"type": "task_start", "task": "run the test suite", "session_id": f"s{n}"},
                 {"type": "tool_call", "command": "make test", "exit_code": 0, "session_id": f"s{n}"},
                 {"type": "task_end", "task": "run the test suite", "outcome": "success",
                  "session_id": f"s{n}"}]
        events.write_text("".join(json.dumps(e) + "\n" for e in lines))
        with Memory(db) as m:
            m.add_events([json.loads(line) for line in events.read_text().splitlines()],
                         user_id="alice", project="web")
            assert m.flush(timeout=30)

    (candidate,) = as_json("skills", "--status", "candidate", *WEB, "--db", db)["skills"]
    out = as_json("skills", "--approve", candidate["id"], "--out", str(tmp_path / "skills"),
                  *WEB, "--db", db)

    (written,) = out["written"]
    assert written.endswith("run-the-test-suite/SKILL.md")
    assert "1. `make test`" in Path(written).read_text()
