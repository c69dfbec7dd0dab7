"""The MCP server, driven by the official MCP client over stdio (and once over HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from remem import Config, Memory

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

pytestmark = pytest.mark.backends

TOOLS = {"memory_bootstrap", "memory_recall", "memory_remember", "memory_update", "memory_forget",
         "memory_feedback", "memory_for_files", "memory_check_command", "memory_list", "memory_get",
         "skill_list", "skill_get", "memory_do", "team_plan"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git checkout named 'shop' with one source file."""
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n\nprint(main())\n")
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {"REMEM_EMBEDDER": "hash", "REMEM_HOME": str(tmp_path / "home"),
            "OMP_NUM_THREADS": "1", "REMEM_USER": "alice"}


@asynccontextmanager
async def connect(tmp_path: Path, cwd: Path, *args: str,
                  db: str | Path | None = None) -> AsyncIterator[ClientSession]:
    """A client session with ``remem mcp ARGS`` on the store ``db`` started in ``cwd``."""
    db = db if db is not None else tmp_path / "m.db"
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "remem", "mcp", "--db", str(db), *args],
                                   env=_env(tmp_path), cwd=str(cwd))
    with open(tmp_path / "server.log", "w") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text a tool answers; fails the test on a tool error."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if c.type == "text")
    assert not result.is_error, text
    return text


async def fails(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return "\n".join(c.text for c in result.content if c.type == "text")


async def tools_resources_and_prompts_are_described(s: ClientSession) -> None:
    """An agent sees every tool with its description and typed parameters."""
    tools = {t.name: t for t in (await s.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 40, tool.name
    recall = tools["memory_recall"].input_schema
    assert recall["required"] == ["query"]
    assert recall["properties"]["budget_tokens"]["type"] == "integer"
    kind = tools["memory_remember"].input_schema["properties"]["kind"]
    assert "pitfall" in str(kind) and "convention" in str(kind)
    assert tools["memory_recall"].annotations.read_only_hint is True
    assert tools["memory_forget"].annotations.destructive_hint is True

    uris = {str(r.uri) for r in (await s.list_resources()).resources}
    templates = {t.uri_template for t in (await s.list_resource_templates()).resource_templates}
    assert "memory://core" in uris
    assert any(t.startswith("memory://file/") for t in templates)
    assert {p.name for p in (await s.list_prompts()).prompts} == {"remember", "recall"}


def test_remembered_conventions_come_back_in_bootstrap_recall_and_file_views_and_go_stale(
        tmp_path: Path, project: Path, store_target: str | Path) -> None:
    async def run() -> None:
        async with connect(tmp_path, project, db=store_target) as s:
            await tools_resources_and_prompts_are_described(s)
            stored = await call(s, "memory_remember", kind="convention",
                                text="main() in src/app.py must stay free of side effects",
                                files=["src/app.py:1-2"])
            memory_id = stored.split()[2]
            assert memory_id.startswith("m_")
            await call(s, "memory_remember", kind="preference",
                       text="Alice prefers small commits with imperative messages")

            digest = await call(s, "memory_bootstrap")
            assert "project shop" in digest and "user alice" in digest
            assert "side effects" in digest and "small commits" in digest

            found = await call(s, "memory_recall", query="what must main do?", files=["src/app.py"])
            assert "side effects" in found and "stale?" not in found

            page = await s.read_resource("memory://file/src/app.py")
            assert "side effects" in page.contents[0].text
            core = await s.read_resource("memory://core")
            assert "small commits" in core.contents[0].text

            # lines outside the cited range change: still fresh; inside: stale
            source = project / "src" / "app.py"
            source.write_text(source.read_text() + "# trailing note\n")
            assert "stale?" not in await call(s, "memory_for_files", files=["src/app.py"])
            source.write_text("def main():\n    print('side effect')\n")
            assert "stale?" in await call(s, "memory_for_files", files=[str(source)])
            assert "stale?" in await call(s, "memory_recall", query="main side effects",
                                          files=["src/app.py"])
            assert "changed since" in await call(s, "memory_get", memory_id=memory_id)

            prompt = await s.get_prompt("recall", {"query": "commits"})
            assert "small commits" in prompt.messages[0].content.text
    anyio.run(run)
    # the scope came from the command line defaults: $REMEM_USER and the git root's name
    with Memory(store_target, config=Config(embedder="hash")) as m:
        conventions = m.list(user_id="alice", project="shop", kinds=["convention"])
        assert len(conventions) == 1
        # what came in through the MCP server says so, as the user's word
        assert conventions[0].provenance.model_dump() == {"door": "mcp", "source": "user",
                                                          "trust": "user"}


def test_check_command_gives_the_known_fix_and_corrections_keep_their_history(
        tmp_path: Path, project: Path, store_target: str | Path) -> None:
    async def run() -> None:
        async with connect(tmp_path, project, "--user", "bob", "--project", "web",
                           db=store_target) as s:
            assert "No known pitfalls" in await call(s, "memory_check_command",
                                                     command="python manage.py test")
            stored = await call(s, "memory_remember", kind="pitfall",
                                text="`python` is not installed here; use `python3` instead")
            memory_id = stored.split()[2]
            warning = await call(s, "memory_check_command", command="python manage.py test")
            assert "python3" in warning and memory_id in warning
            # python3 is another program; ls has nothing known
            assert "No known pitfalls" in await call(s, "memory_check_command", command="ls -la")

            await call(s, "memory_update", memory_id=memory_id, reason="3.12 only",
                       text="`python` is not installed here; use `python3.12` instead")
            shown = await call(s, "memory_get", memory_id=memory_id)
            assert "python3.12" in shown and "v1" in shown and "v2" in shown

            listed = await call(s, "memory_list", kinds=["pitfall"])
            assert memory_id in listed
            assert "noted" in await call(s, "memory_feedback", memory_id=memory_id, verdict="helpful")
            await call(s, "memory_forget", memory_id=memory_id, reason="python is installed now")
            assert "No known pitfalls" in await call(s, "memory_check_command", command="python x.py")
            assert "forgotten" in await call(s, "memory_get", memory_id=memory_id)

            missing = await fails(s, "memory_get", memory_id="m_nope")
            assert "no memory with id 'm_nope'" in missing
            for bad in (await fails(s, "memory_remember", text="x", kind="gossip"),
                        await fails(s, "memory_list", kinds=["gossip"]),
                        await fails(s, "memory_recall", query="deploy", kinds=["gossip"])):
                # short and clear: what was wrong and the choices, no validation dump
                assert "'gossip' is not a kind of memory; use one of" in bad and "convention" in bad
                assert "pydantic" not in bad and "http" not in bad and len(bad.splitlines()) == 1
            assert "query" in await fails(s, "memory_recall", query="")
            assert "No skills" in await call(s, "skill_list")
            assert "no memory" in await fails(s, "skill_get", name="release")
            # a procedure that worked three times becomes a skill candidate
            for _ in range(3):
                await call(s, "memory_remember", kind="procedure",
                           text="To release: run `make build`, then `make release`. Outcome: success")
            listed = await call(s, "skill_list")
            assert "release (candidate)" in listed
            assert "make release" in await call(s, "skill_get", name="release")
            with Memory(store_target, config=Config(embedder="hash")) as m:  # a person approves it
                (skill,) = m.skills(user_id="bob", project="web")
                m.approve_skill(skill.id, user_id="bob", project="web")
            assert "release (approved)" in await call(s, "skill_list")
            assert (await call(s, "skill_get", name="release")).startswith("---\nname: release")
    anyio.run(run)
    with Memory(store_target, config=Config(embedder="hash")) as m:
        assert m.list(user_id="bob", project="web", kinds=["pitfall"], include_inactive=True)
        assert not m.list(user_id="alice", kinds=["pitfall"], include_inactive=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_server_also_speaks_streamable_http(tmp_path: Path, project: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    env = {**os.environ, **_env(tmp_path)}
    server = subprocess.Popen([sys.executable, "-m", "remem", "mcp", "--transport", "http",
                               "--port", str(port), "--db", str(tmp_path / "m.db")],
                              cwd=project, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)

        async def run() -> None:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    await call(s, "memory_remember", kind="convention", text="Deploy with `make ship`")
                    assert "make ship" in await call(s, "memory_recall", query="how do we deploy?")
        anyio.run(run)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_without_the_mcp_sdk_remem_still_works_and_says_what_to_install(tmp_path: Path) -> None:
    script = ("import sys; sys.modules['mcp'] = None\n"  # as if the server extra were not installed
              "import remem.cli, remem.integrations.hooks\n"
              "sys.argv = ['remem', 'mcp', '--db', 'm.db']\n"
              "remem.cli.main()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, **_env(tmp_path)}, timeout=60)
    assert done.returncode == 1
    assert 'pip install "remem[server]"' in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_http_on_a_reachable_address_needs_an_explicit_yes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from remem.cli import app

    result = CliRunner().invoke(app, ["mcp", "--transport", "http", "--host", "0.0.0.0",
                                      "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 1 and "no authentication" in result.output
    assert not (tmp_path / "m.db").exists()


def test_bootstrap_and_recall_log_exactly_the_memories_they_answered_with(
        tmp_path: Path, project: Path) -> None:
    import re

    texts: dict[str, str] = {}

    async def run() -> None:
        async with connect(tmp_path, project) as s:
            await call(s, "memory_remember", kind="convention", text="Run the tests with make test")
            await call(s, "memory_remember", kind="pitfall",
                       text="pytest alone misses the fixtures: run make test instead")
            await call(s, "memory_remember", kind="preference", text="Alice likes short answers")
            texts["mcp:memory_bootstrap"] = await call(s, "memory_bootstrap")
            texts["mcp:memory_recall"] = await call(s, "memory_recall", query="how to run the tests?",
                                                    budget_tokens=60)
    anyio.run(run)
    with Memory(tmp_path / "m.db", config=Config(embedder="hash")) as m:
        log = m.injections(user_id="alice", project="shop")
        assert [e.door for e in log] == ["mcp:memory_recall", "mcp:memory_bootstrap"]
        for entry in log:
            shown = re.findall(r"\(id ([a-z]_[0-9a-f]+)", texts[entry.door])
            assert [i.memory_id for i in entry.items] == shown and shown, entry.door
            assert entry.text == texts[entry.door]
        recall = log[0]
        assert recall.query == "how to run the tests?"
        assert all(i.channels for i in recall.items)


def test_memory_do_plans_and_runs_a_request_and_team_plan_answers(tmp_path: Path,
                                                                  project: Path) -> None:
    async def run() -> None:
        async with connect(tmp_path, project) as s:
            shown = json.loads(await call(s, "memory_do", dry_run=True,
                                          text="Remember that we deploy with make ship and pin it"))
            assert [st["operator"] for st in shown["steps"]] == ["remember", "pin"]
            assert shown["results"] == []
            done = json.loads(await call(s, "memory_do",
                                         text="Remember that we deploy with make ship and pin it"))
            assert [r["ok"] for r in done["results"]] == [True, True]
            listed = await call(s, "memory_list")
            assert "make ship" in listed
            plan = json.loads(await call(s, "team_plan", request="a login page with its API"))
            assert plan["skills"] == [] and plan["agent_id"] == "leader"

    anyio.run(run)
