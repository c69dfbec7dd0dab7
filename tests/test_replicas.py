"""Many processes, one PostgreSQL database: two ``remem serve`` replicas and three ``remem
worker`` processes (real processes, real HTTP on loopback, API keys). Writes go through
both replicas in turn for two users; then every acknowledged write is readable through
either replica, every job ran once, and neither user sees the other's data anywhere.

Each replica also runs jobs in a thread of its own, so five processes claim from the one
queue.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from remem import Config, Memory

REMEM = [sys.executable, "-m", "remem"]
USERS = ("alice", "bob")
#: a word only each user's own turns hold: a search by the other user must never find it
WORD = {"alice": "zanzibar", "bob": "quokka"}
TURNS = 8  # per user


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``check()`` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


@dataclass
class Replica:
    process: subprocess.Popen[str]
    client: httpx.Client


@dataclass
class Deployment:
    replicas: list[Replica]
    workers: list[subprocess.Popen[str]]
    keys: dict[str, str]

    def as_user(self, user: str, replica: int) -> tuple[httpx.Client, dict[str, str]]:
        return self.replicas[replica].client, {"Authorization": f"Bearer {self.keys[user]}"}


def _serve(url: str, env: dict[str, str], log: Path) -> Replica:
    port = free_port()
    with open(log, "w", encoding="utf-8") as out:  # the child keeps its own copy
        process = subprocess.Popen([*REMEM, "serve", "--port", str(port), "--db", url], env=env,
                                   stdout=subprocess.DEVNULL, stderr=out, text=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def healthy() -> bool:
        assert process.poll() is None, log.read_text(encoding="utf-8")
        try:
            return client.get("/v1/health").status_code == 200
        except httpx.TransportError:
            return False

    wait_for(healthy, "a replica to listen")
    return Replica(process, client)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def deployment(pg_url: str, tmp_path: Path) -> Iterator[Deployment]:
    with Memory(pg_url, config=Config(embedder="hash", run_worker=False)) as setup:
        keys = {user: setup.keys.create("acme", user_id=user, scopes="read,write,admin").key
                for user in USERS}
    env = {**os.environ, "REMEM_EMBEDDER": "hash"}
    logs = [tmp_path / f"worker{n}.log" for n in range(3)]
    workers = []
    for log in logs:
        with log.open("w") as err:  # the worker writes to its own copy of the handle
            workers.append(subprocess.Popen([*REMEM, "worker", "--db", pg_url, "--json"], env=env,
                                            text=True, stdout=subprocess.PIPE, stderr=err))
    replicas: list[Replica] = []
    try:
        for w in workers:  # running its jobs: Ctrl-C from here on is a clean stop
            assert w.stdout is not None
            assert any('"worker"' in line for line in iter(w.stdout.readline, ""))
        replicas = [_serve(pg_url, env, tmp_path / f"serve{n}.log") for n in range(2)]
        yield Deployment(replicas, workers, keys)
    finally:
        for replica in replicas:
            replica.client.close()
        for process in [*(r.process for r in replicas), *workers]:
            _stop(process)
        for w in workers:
            assert w.stdout is not None
            w.stdout.close()
    assert [w.returncode for w in workers] == [0, 0, 0], [log.read_text()[-2000:] for log in logs]


def _everything(client: httpx.Client, headers: dict[str, str]) -> list[dict[str, Any]]:
    """Every memory and episode the key may list, page by page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"include_episodes": True, "include_inactive": True, "limit": 100}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/memories", params=params, headers=headers)
        assert page.status_code == 200, page.text
        items += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if not cursor:
            return items


def _jobs_over(client: httpx.Client, headers: dict[str, str]) -> list[dict[str, Any]] | None:
    """The user's jobs once none is queued or running (None until then)."""
    found = client.get("/v1/jobs", params={"limit": 1000}, headers=headers)
    assert found.status_code == 200, found.text
    jobs = found.json()["jobs"]
    return jobs if jobs and all(j["state"] not in ("queued", "running") for j in jobs) else None


def test_two_replicas_and_three_workers_share_one_database(deployment: Deployment) -> None:
    written: dict[str, dict[str, str]] = {user: {} for user in USERS}  # episode id -> text
    job_ids: dict[str, set[str]] = {user: set() for user in USERS}
    for i in range(TURNS):
        for n, user in enumerate(USERS):
            client, headers = deployment.as_user(user, (i + n) % 2)
            text = (f"{user.title()} note {i}: the {WORD[user]} service deploys from "
                    f"branch release-{i} on port {7000 + i}.")
            added = client.post("/v1/memories", headers=headers, json={
                "messages": [{"role": "user", "content": text}], "session_id": f"s{i % 3}"})
            assert added.status_code == 201, added.text
            (episode,) = added.json()["episode_ids"]
            written[user][episode] = text
            job_ids[user] |= set(added.json()["job_ids"])

    for user in USERS:
        client, headers = deployment.as_user(user, 0)
        jobs = wait_for(functools.partial(_jobs_over, client, headers), f"{user}'s jobs to finish")
        assert job_ids[user] <= {j["id"] for j in jobs}
        assert [(j["kind"], j["state"], j["attempts"]) for j in jobs
                if (j["state"], j["attempts"]) != ("done", 1)] == []  # each ran once, and ended

    for user, other in (USERS, USERS[::-1]):
        for replica in (0, 1):
            client, headers = deployment.as_user(user, replica)
            for episode, text in written[user].items():  # every acknowledged write, either door
                got = client.get(f"/v1/memories/{episode}", headers=headers)
                assert got.status_code == 200 and got.json()["text"] == text
            for episode in written[other]:
                assert client.get(f"/v1/memories/{episode}", headers=headers).status_code == 404
            listed = _everything(client, headers)
            assert {m["id"] for m in listed if m["kind"] == "episode"} == set(written[user])
            assert {m["user_id"] for m in listed} == {user}
            assert not any(WORD[other] in m["text"] for m in listed)
            for query in (WORD[other], f"{WORD[other]} service deploys from branch"):
                hits = client.post("/v1/search", headers=headers, json={"query": query, "k": 50})
                assert hits.status_code == 200
                assert {h["memory"]["user_id"] for h in hits.json()["hits"]} <= {user}
            found = client.post("/v1/search", headers=headers, json={"query": WORD[user], "k": 50})
            assert set(written[user]) <= {h["memory"]["id"] for h in found.json()["hits"]}
            refused = client.get("/v1/memories", params={"user_id": other}, headers=headers)
            assert refused.status_code == 403
