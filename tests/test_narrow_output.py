"""At 80 columns the tables stay readable: no cell cut into `supersed…`, no word a line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from remem import Config, Memory
from remem.cli import app

runner = CliRunner()
REASON = ("replaced after the platform team moved every service to PostgreSQL 16 on the "
          "night of the thirtieth")
WEB = ["--user", "alice", "--project", "web"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")
    monkeypatch.setenv("COLUMNS", "80")
    db = str(tmp_path / "narrow.db")
    with Memory(db, config=Config(embedder="hash", agent={"extractor": "off"})) as m:
        item = m.remember("The database is Postgres 14, run in the staging cluster",
                          kind="convention", user_id="alice", project="web")
        m.update(item.id, text="The database is Postgres 16, run in the staging cluster",
                 user_id="alice", project="web")
        m.forget(item.id, reason=REASON, user_id="alice", project="web")
        m.remember("Always use pnpm, never npm", kind="convention", user_id="alice",
                   project="web")
        m.flush()
    return db, item.id


def run(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def assert_readable(out: str) -> None:
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and all(len(line) <= 80 for line in lines), out
    assert "…" not in out, out
    assert all(len(line.split()) > 1 for line in lines), out  # no word left alone on a line


def test_history_is_readable_at_80_columns(store: tuple[str, str]) -> None:
    db, memory_id = store
    out = run("history", memory_id, "--db", db, *WEB)
    assert_readable(out)
    flat = " ".join(out.split())
    assert REASON in flat  # the reason whole, in order
    assert "Postgres 14" in flat and "Postgres 16" in flat and "forgotten" in flat


def test_list_and_jobs_keep_whole_words_at_80_columns(store: tuple[str, str]) -> None:
    db, memory_id = store
    listed = run("list", "--all", "--db", db, *WEB)
    assert memory_id in listed and "forgotten" in listed and "convention" in listed
    assert all(len(line) <= 80 for line in listed.splitlines())
    assert "…" not in listed
    jobs = run("jobs", "--db", db)
    assert_readable(jobs)
    assert "embed · done" in jobs


def test_keys_list_is_readable_at_80_columns(store: tuple[str, str]) -> None:
    db, _ = store
    run("keys", "create", "--org", "acme", "--user", "alice", "--name", "a laptop", "--db", db)
    out = run("keys", "list", "--db", db)
    assert_readable(out)
    assert "org acme · user alice · scopes read, write · name a laptop" in " ".join(out.split())
