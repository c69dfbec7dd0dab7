"""Jobs survive crashes and concurrency: a worker process killed in the middle of a job,
and two processes adding at once, each with its own worker (real processes, one file)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from standin_chat import Reply, StandInChatServer, answer

from remem import Config, Memory
from remem.config import AgentConfig

pytestmark = pytest.mark.backends

WORKER = [sys.executable, "-c", "from remem.cli import main; main()", "worker"]

CLASSIFIED = answer({"topic": "tooling", "kinds": ["preference"]})
EXTRACTED = answer({"memories": [{"kind": "preference", "text": "User prefers pnpm over npm",
                                  "subject": "user", "sources": [1], "confidence": 0.9}]})
VERIFIED = answer({"verdicts": [{"candidate": 1, "supported": True, "subject_ok": True,
                                 "reason": ""}]})


def wait_until(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_worker_killed_in_the_middle_of_a_job_is_taken_over_once(store_target: str | Path) -> None:
    db = store_target
    # the first request hangs (the model is "thinking") until the worker is killed
    server = StandInChatServer([Reply(content="{}", delay_s=30), CLASSIFIED, EXTRACTED, VERIFIED])
    env = {**os.environ, "REMEM_EMBEDDER": "hash", "REMEM_EXTRACTOR": "llm",
           "REMEM_LLM_BASE_URL": server.base_url, "REMEM_JOB_LEASE_S": "1"}
    config = Config(embedder="hash", run_worker=False,
                    agent=AgentConfig(extractor="llm", llm_base_url=server.base_url))
    try:
        with Memory(db, config=config) as m:
            added = m.add([{"role": "user", "content": "I prefer pnpm over npm."}],
                          user_id="alice", session_id="s1")
        first = subprocess.Popen([*WORKER, "--db", str(db)], env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        wait_until(lambda: len(server.requests) == 1)  # mid-job: the extract call is out
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = subprocess.Popen([*WORKER, "--db", str(db)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            with Memory(db, config=config) as m:
                wait_until(lambda: {j.state for j in m.jobs(kind="extract")} == {"done"})
                (job,) = m.jobs(kind="extract")
                memories = m.list(user_id="alice")
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(timeout=10) == 0
    finally:
        server.close()

    assert job.attempts == 2  # the killed attempt, then the one that finished
    assert [(x.text, x.sources) for x in memories] == [("User prefers pnpm over npm",
                                                         added.episode_ids)]


ADDER = """
import sys
from remem import Config, Memory
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Memory(path, config=Config(embedder="hash")) as m:
    for i in range(n):
        m.add([{"role": "user", "content": f"I prefer tool{tag}{i}x."}], user_id="u",
              session_id=f"{tag}{i % 7}")
    assert m.flush(timeout=600)
"""


def test_two_processes_adding_at_once_extract_every_episode_exactly_once(
        store_target: str | Path) -> None:
    db = store_target
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(db), tag, "150"])
             for tag in ("a", "b")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]

    with Memory(db, config=Config(embedder="hash")) as m:
        assert m.flush(timeout=60)
        jobs = m.jobs(kind="extract", limit=1000)
        memories = list(m.export(user_id="u", include_episodes=False))
        stats = m.stats()

    assert stats.episodes == 300
    assert len(jobs) == 300 and {j.state for j in jobs} == {"done"}
    # no episode was read twice: none is cited by two memories (a merge keeps its sources)
    cited = Counter(s for x in memories for s in x.sources)
    assert memories and set(cited.values()) == {1}


def test_flush_in_a_new_process_waits_for_what_a_dead_one_left_queued(
        store_target: str | Path) -> None:
    db = store_target
    quiet = Config(embedder="hash", run_worker=False)
    with Memory(db, config=quiet) as m:  # a process that queued work and died before it ran
        m.add([{"role": "user", "content": "I prefer pnpm over npm."}], user_id="alice")
        assert {j.state for j in m.jobs()} == {"queued"}
    with Memory(db, config=Config(embedder="hash")) as m:
        assert m.flush(timeout=60)
        assert {j.state for j in m.jobs()} == {"done"}
        assert [x.text for x in m.list(user_id="alice")] == ["User prefers pnpm over npm"]


def test_three_workers_share_one_queue_and_run_each_job_once(store_target: str | Path) -> None:
    quiet = Config(embedder="hash", run_worker=False)
    with Memory(store_target, config=quiet) as m:  # the turns of 40 sessions, nothing run yet
        for i in range(40):
            m.add([{"role": "user", "content": f"I prefer tool{i}x for the build."}],
                  user_id="u", session_id=f"s{i}")
        queued = {j.id for j in m.jobs(limit=1000)}
    env = {**os.environ, "REMEM_EMBEDDER": "hash"}
    workers = [subprocess.Popen([*WORKER, "--db", str(store_target)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
    try:
        with Memory(store_target, config=quiet) as m:
            wait_until(lambda: {j.state for j in m.jobs(limit=1000)} == {"done"}, timeout=120)
            jobs = m.jobs(limit=1000)
            memories = list(m.export(user_id="u", include_episodes=False))
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        codes = [w.wait(timeout=30) for w in workers]

    assert codes == [0, 0, 0]
    assert queued <= {j.id for j in jobs}
    assert all(j.attempts == 1 for j in jobs)  # no job was run twice
    cited = Counter(s for x in memories for s in x.sources)
    assert len(cited) > 20 and set(cited.values()) == {1}  # no turn was extracted twice
