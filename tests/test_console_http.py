"""The console over plain HTTP: `remem ui`, paging, language, errors and cross-site
protection (the browser tests in test_console.py do what a person does)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from server_support import service

from remem import Config, Memory

HASH = Config(embedder="hash")


def _csrf(client: httpx.Client, url: str) -> str:
    page = client.get(url)
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match, page.text[:500]
    return match.group(1)


def test_the_table_pages_with_a_cursor_and_filters_by_kind_and_status(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        memory.add([f"Turn number {n} of the chat" for n in range(60)], user_id="alice",
                   session_id="s1")
        memory.remember("Always use pnpm", kind="convention", user_id="alice")
        memory.flush()
        first = client.get("/ui/memories", params={"kind": "episode"})
        assert first.status_code == 200
        shown = re.findall(r"Turn number (\d+)", first.text)
        assert first.text.count('<tr class="status-') == 50  # one page
        assert '<span class="kind">convention</span>' not in first.text
        (more,) = re.findall(r'rel="next" href="([^"]+)"', first.text)
        second = client.get(more.replace("&amp;", "&"))
        rest = re.findall(r"Turn number (\d+)", second.text)
        assert sorted(map(int, shown + rest)) == list(range(60))
        assert 'rel="next"' not in second.text
        bad = client.get("/ui/memories", params={"kind": "nonsense"})
        assert bad.status_code == 400 and "is not a kind" in bad.text
        assert "no memories" in client.get("/ui/memories", params={"status": "forgotten"}).text.lower()


def test_forms_need_the_consoles_token_and_pages_follow_the_browsers_language(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        item = memory.remember("Always use pnpm", kind="convention", user_id="alice")
        url = f"/ui/memories/{item.id}"
        assert client.post(f"{url}/forget", data={}).status_code == 403
        assert memory.get(item.id).status == "active"
        token = _csrf(client, url)
        done = client.post(f"{url}/forget", data={"csrf": token})
        assert done.status_code == 303 and memory.get(item.id).status == "forgotten"
        # another site's page cannot post, even with a token it guessed right
        cross = client.post(f"{url}/restore", data={"csrf": token},
                            headers={"Origin": "http://evil.example"})
        assert cross.status_code == 403 and memory.get(item.id).status == "forgotten"
        chinese = httpx.get(f"{client.base_url}/ui/memories", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
        assert "记忆" in chinese.text and 'lang="zh-CN"' in chinese.text


def test_remem_ui_serves_the_console_on_loopback_and_refuses_a_taken_port(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, config=HASH) as m:
        m.remember("Always use pnpm", kind="convention", user_id="alice")
    env = {"REMEM_EMBEDDER": "hash", "REMEM_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([sys.executable, "-m", "remem", "ui", "--no-browser", "--port", "0",
                                "--db", str(db)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/ui", line)
        assert url, line
        page = httpx.get(url.group(0), follow_redirects=True)
        assert page.status_code == 200 and "Always use pnpm" in page.text
        port = int(url.group(0).rsplit(":", 1)[1].split("/")[0])
        taken = subprocess.run([sys.executable, "-m", "remem", "ui", "--no-browser", "--port",
                                str(port), "--db", str(db)], env=env, capture_output=True,
                               text=True, timeout=60)
        assert taken.returncode == 1 and f"port {port}" in taken.stderr and "--port" in taken.stderr
        assert len(taken.stderr.strip().splitlines()) == 1  # one line, no traceback
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
    with socket.socket() as s:  # the port is free again: nothing is left listening on it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_the_table_filters_by_maturity_subject_and_time(tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        memory.remember("Alice prefers tabs", kind="preference", subject="user", user_id="alice")
        memory.remember("CI runs on every push", kind="convention", subject="project", user_id="alice")
        by_subject = client.get("/ui/memories", params={"subject": "user"}).text
        assert "Alice prefers tabs" in by_subject and "CI runs" not in by_subject
        assert "no memories" in client.get("/ui/memories", params={"until": "2000-01-01"}).text.lower()
        assert "no memories" in client.get("/ui/memories", params={"maturity": "canonical"}).text.lower()
        bad = client.get("/ui/memories", params={"since": "soon"})
        assert bad.status_code == 400 and "since" in bad.text


def state(memory: Memory, job_id: str) -> str:
    (job,) = [j for j in memory.jobs(limit=1000) if j.id == job_id]
    return job.state


def test_a_queued_job_can_be_cancelled_and_queued_again_from_the_jobs_page(tmp_path: Path) -> None:
    config = Config(embedder="hash", run_worker=False)  # jobs wait: no worker in this process
    with service(tmp_path / "m.db", config) as (memory, client):
        (job_id, *_) = memory.add("We deploy with make ship", user_id="alice").job_ids
        page = client.get("/ui/jobs")
        assert job_id in page.text and "hash" in page.text
        token = _csrf(client, "/ui/jobs")
        assert client.post(f"/ui/jobs/{job_id}/cancel", data={"csrf": token}).status_code == 303
        assert state(memory, job_id) == "cancelled"
        assert client.post(f"/ui/jobs/{job_id}/retry", data={"csrf": token}).status_code == 303
        assert state(memory, job_id) == "queued"
        refused = client.post(f"/ui/jobs/{job_id}/explode", data={"csrf": token})
        assert refused.status_code == 400 and "retry or cancel" in refused.text


def test_the_console_bench_reports_each_page_and_its_baseline() -> None:
    import json

    from typer.testing import CliRunner

    from remem.cli import app

    out = CliRunner().invoke(app, ["bench", "console", "--n", "300", "--rounds", "2", "--no-progress",
                                   "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["n"] == 300 and set(result["baseline"]) == {"table, first page", "health route"}
    assert {"table, first page", "table, a later page (cursor)", "table, search box",
            "memory page"} <= set(result["pages"])
    assert all(v["p95_ms"] >= v["p50_ms"] > 0 for v in result["pages"].values())


def _checks(session: str, *commands: str) -> list[dict[str, object]]:
    task = "check the code before a commit"
    return [{"type": "task_start", "task": task, "session_id": session},
            *[{"type": "tool_call", "command": c, "exit_code": 0, "session_id": session}
              for c in commands],
            {"type": "task_end", "task": task, "outcome": "success", "session_id": session}]


def test_a_memory_flagged_after_a_supersession_waits_in_the_inbox_until_settled(
        tmp_path: Path) -> None:
    with service(tmp_path / "m.db") as (memory, client):
        for n in range(3):  # a procedure that worked three times: a skill derived from it
            memory.add_events(_checks(f"c{n}", "make lint", "make typecheck"), user_id="alice",
                              project="web")
            memory.flush()
        (skill,) = memory.skills(user_id="alice", project="web", status="candidate")
        changed = memory.remember("We no longer run make lint before a commit; we run make check now",
                                  kind="procedure", user_id="alice", project="web")
        memory.flush()
        (flagged,) = memory.flagged(user_id="alice", project="web")
        assert flagged.id == skill.id  # the procedure it came from was superseded
        (old,) = [i for i in memory.list(user_id="alice", project="web", statuses=["superseded"])
                  if i.kind == "procedure"]
        assert any(link.type == "supersedes" and link.memory.id == old.id
                   for link in memory.links(changed.id, user_id="alice", project="web"))
        inbox = client.get("/ui/review").text
        rows = re.findall(r'<tr class="flagged">.*?</tr>', inbox, re.S)
        assert len(rows) == 1 and "Skill: check the code before a commit" in rows[0]
        assert f"derived from {old.id}, now superseded" in rows[0]
        assert 'name="what" value="flag"' in rows[0]
        done = client.post(f"/ui/review/{skill.id}", data={
            "csrf": _csrf(client, "/ui/review"), "decision": "approve", "what": "flag"})
        assert done.status_code == 303
        kept = memory.get(skill.id)
        # kept: still the active candidate it was, its flag cleared and the decision in its history
        assert (kept.status, kept.metadata["reviewed"]) == ("active", "kept")
        assert kept.metadata["skill_status"] == "candidate"
        assert memory.history(skill.id)[-1].reason == "kept on review"
        assert memory.flagged(user_id="alice", project="web") == []
        assert '<tr class="flagged">' not in client.get("/ui/review").text
