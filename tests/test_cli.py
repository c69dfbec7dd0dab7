"""The ``remem`` command line, run with CliRunner on real store files and the bundled embedder."""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from remem import Memory
from remem.cli import app

# these tests are about the commands over episodes: the memory agent stays off
pytestmark = pytest.mark.usefixtures("episodes_only")

runner = CliRunner()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No REMEM_* setting of the caller leaks in; the default store lives in tmp_path."""
    for name in ("REMEM_EMBEDDER", "REMEM_EMBED_IN_BACKGROUND", "REMEM_OPENAI_BASE_URL",
                 "REMEM_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "test.db")


def invoke(*args: str, input: str | None = None) -> Result:
    """Run ``remem ARGS``; exceptions other than exits fail the test."""
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def ok(*args: str, input: str | None = None) -> Result:
    """Run ``remem ARGS`` and check it exits 0."""
    result = invoke(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def as_json(*args: str) -> Any:
    """Run ``remem ARGS --json`` and parse stdout."""
    return json.loads(ok(*args, "--json").stdout)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def episodes(db: str, *extra: str) -> list[dict[str, Any]]:
    """Every episode in ``db`` (active ones unless --all is given), newest first."""
    page: list[dict[str, Any]] = as_json("list", "--episodes", "--db", db, *extra)["items"]
    return page


def assert_one_error_line(result: Result, *needles: str) -> None:
    """Exit 1, nothing on stdout, and exactly one ``Error: ...`` line on stderr."""
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0]


# --- add and search -------------------------------------------------------------------

def test_add_then_search_finds_it(db: str) -> None:
    added = as_json("add", "We deploy the web app with [make ship] on Fridays", "--user", "alice",
                    "--project", "web", "--meta", "source=chat", "--meta", "url=a=b", "--db", db)
    (episode_id,) = added["episode_ids"]
    assert episode_id.startswith("e_") and len(added["job_ids"]) == 1

    hits = as_json("search", "how do we deploy?", "--user", "alice", "--db", db)
    assert hits[0]["memory"]["id"] == episode_id
    assert hits[0]["memory"]["metadata"] == {"source": "chat", "url": "a=b"}
    assert hits[0]["memory"]["project"] == "web"
    assert {"fulltext", "vector"} <= set(hits[0]["channels"])  # --wait embedded it

    assert as_json("search", "how do we deploy?", "--user", "bob", "--db", db) == []

    table = ok("search", "deploy", "--user", "alice", "--db", db).stdout
    assert "[make ship]" in table  # user text is not read as Rich markup
    assert episode_id in table and "fulltext #1" in table


def test_add_plain_output_is_the_id_and_options_reach_the_store(db: str) -> None:
    out = ok("add", "I moved to pnpm", "--role", "Caroline", "--timestamp",
             "2024-05-08T13:56:00Z", "--session", "s1", "--db", db).stdout
    (item,) = episodes(db)
    assert out == item["id"] + "\n"
    assert item["role"] == "Caroline" and item["session_id"] == "s1"
    assert item["event_time"] == "2024-05-08T13:56:00Z"


def test_search_options_are_passed_on(db: str) -> None:
    ok("add", "We deploy with make ship", "--timestamp", "2024-01-10T00:00:00Z", "--db", db)
    assert as_json("search", "deploy", "--since", "2024-02-01", "--db", db) == []
    assert len(as_json("search", "deploy", "--until", "2024-02-01", "--db", db)) == 1
    assert as_json("search", "deploy", "--kind", "event", "--db", db) == []
    assert len(as_json("search", "deploy", "-k", "1", "--kind", "episode", "--db", db)) == 1


# --- the life of a memory -------------------------------------------------------------

def test_list_show_history_forget_purge(db: str, tmp_path: Path) -> None:
    ok("import", str(write_jsonl(tmp_path / "in.jsonl", [
        {"role": "user", "content": "Our staging server is called [bold]kiwi[/bold]"},
        {"role": "assistant", "content": "Noted, staging is kiwi."},
    ])), "--user", "alice", "--db", db)

    plain = ok("list", "--db", db)
    assert plain.stdout == "" and "--episodes" in plain.stderr  # derived memories only

    newest, oldest = episodes(db)
    assert newest["text"] == "Noted, staging is kiwi."
    page = as_json("list", "--episodes", "--limit", "1", "--db", db)
    assert [i["id"] for i in page["items"]] == [newest["id"]]
    following = as_json("list", "--episodes", "--cursor", page["next_cursor"], "--db", db)
    assert [i["id"] for i in following["items"]] == [oldest["id"]]
    assert following["next_cursor"] is None

    shown = ok("show", oldest["id"], "--db", db).stdout
    assert "[bold]kiwi[/bold]" in shown and "user=alice" in shown
    assert as_json("show", oldest["id"], "--db", db)["text"] == oldest["text"]

    assert ok("forget", oldest["id"], "--reason", "renamed", "--db", db).stdout == (
        f"forgot {oldest['id']}\n")
    history = as_json("history", oldest["id"], "--db", db)
    assert [(h["action"], h["status"], h["reason"]) for h in history] == [
        ("created", "active", None), ("forgotten", "forgotten", "renamed")]
    assert [i["id"] for i in episodes(db)] == [newest["id"]]
    assert len(episodes(db, "--all")) == 2
    assert oldest["id"] not in ok("search", "staging server", "--db", db).stdout

    refused = invoke("purge", oldest["id"], "--db", db, input="n\n")
    assert refused.exit_code == 1
    assert as_json("show", oldest["id"], "--db", db)["status"] == "forgotten"
    assert as_json("purge", oldest["id"], "--yes", "--db", db) == {"deleted": [oldest["id"]]}
    assert_one_error_line(invoke("show", oldest["id"], "--db", db), "no memory", oldest["id"])
    assert_one_error_line(invoke("history", oldest["id"], "--db", db), "no memory")

    stats = as_json("stats", "--db", db)
    assert stats["episodes"] == 1 and stats["vectors"] == stats["passages"] == 1


def test_scope_options_guard_show_and_forget(db: str) -> None:
    episode_id = ok("add", "alice's secret", "--user", "alice", "--db", db).stdout.strip()
    assert_one_error_line(invoke("show", episode_id, "--user", "bob", "--db", db), "no memory")
    assert_one_error_line(invoke("forget", episode_id, "--org", "other", "--db", db), "no memory")
    assert as_json("show", episode_id, "--user", "alice", "--db", db)["status"] == "active"


# --- import and export ----------------------------------------------------------------

GOOD = {"role": "user", "content": "We use pnpm"}


@pytest.mark.parametrize(("bad_line", "problem"), [
    ('{"role": "user", "content": ', "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"role": "user"}', "content: is missing"),
    ('{"content": "hi", "colour": "red"}', "colour: is not a known field"),
    ('{"content": "hi", "timestamp": "yesterday"}', "timestamp:"),
    ('{"content": "hi", "user_id": 7}', "user_id:"),
    ('{"type": "tool_call", "exit_code": "boom"}', "exit_code"),
])
def test_import_bad_line_names_it_and_writes_nothing(db: str, tmp_path: Path, bad_line: str,
                                                     problem: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(f"{json.dumps(GOOD)}\n\n{bad_line}\n{json.dumps(GOOD)}\n", encoding="utf-8")
    result = invoke("import", str(source), "--db", db)
    assert_one_error_line(result, "line 3", problem, "nothing was imported")
    assert not Path(db).exists()  # checked before the store is even opened


def test_import_from_stdin_with_scope_per_line(db: str) -> None:
    lines = [
        {"speaker": "Caroline", "text": "I went to the support group", "session_id": "s1",
         "timestamp": "2023-05-08T13:56:00Z", "metadata": {"lang": "en"}},
        {"role": "user", "content": "Bob likes tea", "user_id": "bob"},
        {"type": "tool_call", "command": "pytest -q", "exit_code": 1, "output": "1 failed"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    result = as_json("import", "-", "--user", "alice", "--db", db)
    assert result == {"episode_ids": [], "job_ids": [], "skipped": 0}  # stdin was empty
    out = ok("import", "-", "--user", "alice", "--db", db, input=stdin)
    assert out.stdout == "imported 3 episodes from stdin\n"

    alice = episodes(db, "--user", "alice")  # --user wins over the line's user_id
    assert [(i["kind"], i["role"]) for i in alice] == [
        ("event", "tool"), ("episode", "user"), ("episode", "Caroline")]
    assert alice[2]["session_id"] == "s1" and alice[2]["metadata"] == {"lang": "en"}
    assert episodes(db, "--user", "bob") == []
    ok("import", "-", "--db", db, input=stdin)  # with no --user, each line's own scope
    assert [i["text"] for i in episodes(db, "--user", "bob")] == ["Bob likes tea"]
    assert as_json("stats", "--db", db)["vectors"] == 6  # --wait is the default


def test_export_then_import_round_trip(db: str, tmp_path: Path) -> None:
    ok("import", str(write_jsonl(tmp_path / "in.jsonl", [
        {"role": "user", "content": "We deploy with make ship", "user_id": "alice",
         "metadata": {"source": "chat"}, "timestamp": "2024-01-01T10:00:00Z"},
        {"speaker": "Caroline", "role": "user", "text": "我搬到了柏林", "user_id": "alice"},
        {"role": "assistant", "content": "Old note", "user_id": "bob", "project": "web"},
    ])), "--db", db)
    with Memory(db) as m:
        m.add_events({"type": "file_edit", "path": "src/app.py", "change": "fix login"},
                     user_id="alice", session_id="s9")
        m.flush()
    old_note = next(i for i in episodes(db, "--user", "bob"))
    ok("forget", old_note["id"], "--db", db)

    out = tmp_path / "export.jsonl"
    done = ok("export", "--out", str(out), "--db", db)
    assert "exported 4 memories" in done.stderr and done.stdout == ""
    assert ok("export", "--db", db).stdout == out.read_text(encoding="utf-8")
    assert ok("export", "--no-episodes", "--db", db).stdout == ""

    copy = str(tmp_path / "copy.db")
    assert len(as_json("import", str(out), "--db", copy)["episode_ids"]) == 4

    def summary(path: str) -> list[tuple[Any, ...]]:
        rows = [json.loads(line) for line in ok("export", "--db", path).stdout.splitlines()]
        return [(r["kind"], r["text"], r["role"], r["status"], r["user_id"], r["project"],
                 r["session_id"], r["event_time"], r["metadata"]) for r in rows]

    assert summary(copy) == summary(db)
    assert as_json("stats", "--db", copy)["episodes"] == as_json("stats", "--db", db)["episodes"]


def test_import_skips_derived_memories_of_an_export(db: str) -> None:
    derived = {"id": "m_1", "kind": "fact", "text": "Alice uses pnpm", "status": "active"}
    episode = {"id": "e_1", "kind": "episode", "text": "I use pnpm", "role": "user",
               "status": "active", "user_id": "alice", "event_time": "2024-03-01T08:00:00Z"}
    stdin = f"{json.dumps(derived)}\n{json.dumps(episode)}\n"
    out = ok("import", "-", "--db", db, input=stdin).stdout
    assert out == "imported 1 episode from stdin (1 derived memory skipped)\n"
    (item,) = episodes(db, "--user", "alice")
    assert (item["text"], item["event_time"]) == ("I use pnpm", "2024-03-01T08:00:00Z")


def test_export_scope_and_stdout(db: str) -> None:
    ok("add", "alice note", "--user", "alice", "--db", db)
    ok("add", "bob note", "--user", "bob", "--db", db)
    lines = ok("export", "--user", "bob", "--db", db).stdout.splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["bob note"]


# --- errors, output, help -------------------------------------------------------------

@pytest.mark.parametrize(("args", "needle"), [
    (["show", "e_nope"], "no memory with id 'e_nope'"),
    (["forget", "e_nope"], "no memory"),
    (["purge", "e_nope", "--yes"], "no memory"),
    (["search", "x", "--since", "yesterday"], "since:"),
    (["search", "x", "-k", "0"], "k:"),
    (["list", "--limit", "0"], "limit:"),
    (["list", "--cursor", "abc"], "cursor:"),
    (["add", " "], "is empty"),
    (["import", "no-such-file.jsonl"], "No such file"),
])
def test_errors_are_one_line_and_exit_1(db: str, args: list[str], needle: str) -> None:
    ok("init", "--db", db)
    assert_one_error_line(invoke(*args, "--db", db), needle)


def test_bad_store_file_and_bad_setting_are_one_line(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    assert_one_error_line(invoke("stats", "--db", str(junk)), "not a remem store")
    monkeypatch.setenv("REMEM_EMBEDDER", "bogus")
    assert_one_error_line(invoke("init", "--db", str(tmp_path / "x.db")), "unknown embedder")


def test_bad_meta_is_a_usage_error(db: str) -> None:
    result = invoke("add", "x", "--meta", "novalue", "--db", db)
    assert result.exit_code == 2 and "key=value" in result.stderr
    assert not Path(db).exists()


def test_default_store_is_under_remem_home(tmp_path: Path) -> None:
    assert as_json("init")["path"] == str(tmp_path / "home" / "remem.db")
    assert as_json("stats")["path"] == str(tmp_path / "home" / "remem.db")


def test_stats_json_and_table(db: str) -> None:
    ok("init", "--db", db)
    stats = as_json("stats", "--db", db)
    assert stats["episodes"] == 0 and stats["schema_version"] >= 1
    table = ok("stats", "--db", db).stdout
    assert "episodes" in table and stats["embedder"] in table


def test_demo_runs_in_a_temporary_store(tmp_path: Path) -> None:
    result = ok("demo")
    assert "what is our database?" in result.stdout
    assert "PostgreSQL" in result.stdout and "found by" in result.stdout
    assert not (tmp_path / "home").exists()  # nothing written to the user's store


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, command in group.commands.items():
        yield (*path, name), command
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))


def test_every_command_and_option_has_help() -> None:
    root = typer.main.get_command(app)
    found = dict(_commands(root))
    assert {("add",), ("search",), ("show",), ("history",), ("forget",), ("purge",), ("list",),
            ("stats",), ("import",), ("export",), ("demo",), ("bench",), ("bench", "locomo"),
            ("bench", "scale")} <= set(found)
    for path, command in found.items():
        assert command.help, path
        for param in command.params:
            assert getattr(param, "help", None) or param.name == "help", (path, param.name)
        assert "Usage: remem " + " ".join(path) in ok(*path, "-h").stdout
    assert ok("--help").stdout == ok("-h").stdout
    assert ok("search", "--help").stdout == ok("search", "-h").stdout


def test_python_dash_m_remem(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["python -m remem", "-h"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("remem", run_name="__main__")
    assert exit_info.value.code == 0
    assert "Usage: remem" in capsys.readouterr().out


def test_import_options_win_over_the_scope_in_the_lines(db: str, tmp_path: Path) -> None:
    ok("add", "we deploy with make ship", "--db", db, "--user", "alice", "--session", "s1")
    exported = tmp_path / "alice.jsonl"
    exported.write_text(ok("export", "--db", db, "--user", "alice").stdout)
    ok("import", str(exported), "--db", db, "--user", "bob")
    bob = as_json("list", "--db", db, "--user", "bob", "--episodes")["items"]
    assert [m["text"] for m in bob] == ["we deploy with make ship"]
    assert bob[0]["session_id"] == "s1"  # what the option leaves out comes from the line
    assert len(as_json("list", "--db", db, "--user", "alice", "--episodes")["items"]) == 1
