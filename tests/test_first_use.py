"""What a new user meets in the first hour: a wrong --db path, --json everywhere,
--version, the org of single-user memories, bad kinds, `remem serve` and its port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from remem.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    monkeypatch.setenv("REMEM_EXTRACTOR", "off")
    monkeypatch.setenv("COLUMNS", "120")


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args), catch_exceptions=False)


def ok(*args: str) -> Result:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


def json_error(result: Result) -> dict[str, Any]:
    """The one JSON error line a failing ``--json`` command prints on stderr."""
    assert result.exit_code != 0 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    error: dict[str, Any] = json.loads(line)["error"]
    assert set(error) == {"type", "message", "hint"}
    return error


READERS = [["list"], ["search", "deploy"], ["show", "e_x"], ["history", "e_x"], ["export"],
           ["export", "agents-md"], ["stats"], ["tree"], ["context", "deploy"], ["jobs"],
           ["skills"], ["review"], ["forget", "e_x"], ["decay"], ["keys", "list"]]


@pytest.mark.parametrize("args", READERS, ids=[" ".join(a) for a in READERS])
def test_a_read_command_on_a_wrong_path_fails_and_creates_nothing(tmp_path: Path,
                                                                   args: list[str]) -> None:
    db = tmp_path / "no" / "such" / "dir" / "x.db"
    result = invoke(*args, "--db", str(db))
    assert result.exit_code == 1 and result.stdout == ""
    assert f"no remem store at {db}" in result.stderr and "remem init" in result.stderr
    assert not (tmp_path / "no").exists()


def test_a_read_command_under_json_fails_in_json(tmp_path: Path) -> None:
    db = tmp_path / "missing.db"
    error = json_error(invoke("list", "--db", str(db), "--json"))
    assert error["type"] == "StoreNotFoundError" and str(db) in error["message"]
    assert "remem init" in error["hint"]
    assert not db.exists()


def test_write_commands_and_init_create_the_store(tmp_path: Path) -> None:
    fresh = tmp_path / "a" / "b.db"
    assert json.loads(ok("init", "--db", str(fresh), "--json").stdout)["path"] == str(fresh)
    assert fresh.is_file()
    assert json.loads(ok("list", "--db", str(fresh), "--json").stdout)["items"] == []
    added = tmp_path / "c" / "d.db"
    ok("add", "We deploy with make ship", "--db", str(added))
    ok("remember", "Use pnpm", "--kind", "convention", "--db", str(tmp_path / "e.db"))
    assert added.is_file() and (tmp_path / "e.db").is_file()


def test_errors_of_the_command_line_itself_are_json_under_json(tmp_path: Path) -> None:
    ok("init", "--db", str(tmp_path / "x.db"))
    error = json_error(invoke("list", "--limit", "many", "--db", str(tmp_path / "x.db"), "--json"))
    assert error["type"] == "BadParameter" and "--limit" in error["message"]
    assert error["hint"] == "see `remem list --help` for the options"
    error = json_error(invoke("show", "e_nope", "--db", str(tmp_path / "x.db"), "--json"))
    assert error["type"] == "NotFoundError" and "e_nope" in error["message"]
    plain = invoke("show", "e_nope", "--db", str(tmp_path / "x.db"))
    assert plain.stderr.startswith("Error: no memory with id 'e_nope'")


def test_export_takes_json(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    ok("add", "We deploy with make ship", "--user", "alice", "--db", db)
    items = json.loads(ok("export", "--user", "alice", "--db", db, "--json").stdout)
    assert [i["text"] for i in items] == ["We deploy with make ship"]
    out = tmp_path / "alice.jsonl"
    written = json.loads(ok("export", "--user", "alice", "--out", str(out), "--db", db,
                            "--json").stdout)
    assert written == {"exported": 1, "path": str(out)}
    assert len(out.read_text().splitlines()) == 1
    block = json.loads(ok("export", "agents-md", "--project", "web", "--db", db, "--json").stdout)
    assert block["block"].startswith("<!-- remem:begin -->") and block["memories"] == 0


# their stdout is not theirs to use: the MCP protocol, the hook's answer to the agent, a tour
NO_JSON = {"mcp", "hook", "demo"}


def test_every_command_takes_json() -> None:
    import typer.main

    def walk(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
        found = []
        for name, command in group.commands.items():
            found += walk(command, f"{prefix}{name} ") if hasattr(command, "commands") \
                else [(f"{prefix}{name}", command)]
        return found

    commands = walk(typer.main.get_command(app))
    assert len(commands) > 30
    lacking = {name for name, command in commands
               if not any("--json" in p.opts for p in command.params)}
    assert lacking == NO_JSON


def test_install_and_uninstall_report_in_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    done = json.loads(ok("install", "claude-code", "--json").stdout)
    assert [(Path(c["path"]).name, c["outcome"]) for c in done] == [
        (".mcp.json", "created"), ("settings.json", "created")]
    undone = json.loads(ok("uninstall", "claude-code", "--json").stdout)
    assert {c["outcome"] for c in undone} == {"removed"}


def test_version() -> None:
    from remem import __version__

    assert ok("--version").stdout == f"remem {__version__}\n"


def test_list_refuses_a_kind_that_does_not_exist_as_remember_does(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    ok("init", "--db", db)
    listed = invoke("list", "--kind", "nonsense", "--db", db)
    remembered = invoke("remember", "x", "--kind", "nonsense", "--db", db)
    for result in (listed, remembered):
        assert result.exit_code == 1
        assert "'nonsense' is not a kind of memory; use one of" in result.stderr
        assert "convention" in result.stderr
    assert invoke("search", "x", "--kind", "nonsense", "--db", db).exit_code == 1
    assert ok("list", "--kind", "convention", "--db", db).exit_code == 0


def test_the_first_key_of_an_org_says_where_single_user_memories_are(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    ok("add", "We deploy with make ship", "--db", db)
    created = ok("keys", "create", "--org", "acme", "--db", db)
    assert created.stdout.strip().count("\n") == 0  # the key alone on stdout
    assert "org 'default'" in created.stderr and "remem list --org default" in created.stderr
    listed = ok("list", "--episodes", "--db", db)
    assert "in org default" in listed.stderr
    empty = ok("list", "--episodes", "--org", "acme", "--db", db)
    assert "no memories in org acme" in empty.stderr
    assert "org 'default'" in ok("stats", "--db", db).stderr
    same_org = ok("keys", "create", "--org", "default", "--db", db)
    assert "not 'default'" not in same_org.stderr


# --- remem serve, in its own process ------------------------------------------------

def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    return {**env, "REMEM_HOME": str(tmp_path / "home"), "REMEM_EMBEDDER": "hash",
            "REMEM_EXTRACTOR": "off", "COLUMNS": "200"}


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "remem", "serve", "--port", str(port),
                              "--db", str(tmp_path / "s.db")], env=_env(tmp_path),
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        f"Error: port {port} on 127.0.0.1 is already in use (another remem serve, or another "
        "program); stop it, or pass another --port"]
    assert "serving" not in run.stdout + run.stderr


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_serve_says_serving_only_once_the_port_is_open(tmp_path: Path, as_json: bool) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--port", str(port),
                             "--db", str(tmp_path / "s.db"), *(["--json"] if as_json else [])],
                            env=_env(tmp_path), stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        if as_json:
            ready = json.loads(proc.stdout.readline())
            assert ready["serving"] == f"http://127.0.0.1:{port}" and ready["api_keys"] == 0
        else:
            first = proc.stderr.readline()
            assert first.startswith("remem: serving ") and f":{port}" in first
        # at once, no retry: the port accepts a connection as soon as the line is out
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            reply = conn.makefile("rb").readline()
        assert reply.startswith(b"HTTP/1.1 200")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for stream in (proc.stderr, proc.stdout):
            if stream is not None:
                stream.close()


def test_a_long_import_shows_progress_off_a_terminal(tmp_path: Path) -> None:
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps({"role": "user", "content": f"note number {n}"}) + "\n"
                              for n in range(600)))
    result = ok("import", str(source), "--db", str(tmp_path / "x.db"), "--no-wait")
    lines = [line for line in result.stderr.splitlines() if line.startswith("importing: ")]
    counts = [int(line.split()[1].split("/")[0]) for line in lines]
    assert counts and counts == sorted(counts) and lines[-1].startswith("importing: 600/600 (100%)")
