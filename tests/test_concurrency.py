"""Several writers on one file, threads in one process, and a writer killed mid-add.

These test mechanics, not meaning, so they use the fast hashing embedder.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from remem import Config, Memory

pytestmark = pytest.mark.backends

HASH = Config(embedder="hash")
#: episodes only: these tests count the rows that writers add, not what is derived from them
EPISODES = Config(embedder="hash", agent={"extractor": "off"})

WRITER = textwrap.dedent("""
    import sys
    from remem import Config, Memory

    path, name = sys.argv[1], sys.argv[2]
    m = Memory(path, config=Config(embedder="hash", agent={"extractor": "off"}))
    print("ready", flush=True)
    sys.stdin.readline()  # wait until every writer is ready
    for i in range(200):
        m.add({"role": "user", "content": f"{name} says message {i}"}, user_id="u",
              session_id=name)
    m.flush()
    print(m.stats().episodes, flush=True)
    m.close()
""")

KILLED = textwrap.dedent("""
    import sys
    from remem import Config, Memory

    m = Memory(sys.argv[1], config=Config(embedder="hash", agent={"extractor": "off"}))
    i = 0
    while True:
        batch = [{"role": "user", "content": f"message {i + j}: " + "lorem ipsum dolor " * 40}
                 for j in range(25)]
        for eid in m.add(batch, user_id="u", session_id="big").episode_ids:
            print(eid, flush=True)
        i += 25
""")


def python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_write_at_the_same_time(store_target: str | Path,
                                              open_memory: Callable[..., Memory]) -> None:
    writers = [python(WRITER, str(store_target), name) for name in ("a", "b")]
    try:
        for w in writers:  # both opened (and created) the same new file at once
            assert w.stdout is not None
            assert w.stdout.readline().strip() == "ready", w.stderr.read() if w.stderr else ""
        for w in writers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        results = [w.communicate(timeout=120) for w in writers]
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
                w.wait()
            for stream in (w.stdin, w.stdout, w.stderr):
                if stream is not None:
                    stream.close()

    for w, (out, err) in zip(writers, results, strict=True):
        assert w.returncode == 0, err
        assert "locked" not in err.lower()
        assert 200 <= int(out.strip().splitlines()[-1]) <= 400

    m = open_memory(config=EPISODES)
    stats = m.stats()
    assert stats.episodes == 400
    assert stats.vectors == stats.passages == 400
    for name in ("a", "b"):
        page = m.list(user_id="u", session_id=name, include_episodes=True, limit=1000)
        assert sorted(i.text for i in page) == sorted(f"{name} says message {i}"
                                                      for i in range(200))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_mid_add_loses_nothing_it_confirmed(
    store_target: str | Path, open_memory: Callable[..., Memory]
) -> None:
    child = python(KILLED, str(store_target))
    assert child.stdout is not None
    confirmed: list[str] = []
    try:
        while len(confirmed) < 150:
            line = child.stdout.readline()
            assert line, child.stderr.read() if child.stderr else "child exited"
            confirmed.append(line.strip())
    finally:
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    # ids printed between our last read and the kill were confirmed too; a torn last
    # line was not
    lines = rest.split("\n")
    confirmed += [line for line in lines[:-1] if line]
    assert child.returncode == -signal.SIGKILL

    m = open_memory(config=EPISODES)

    for eid in confirmed:
        assert m.get(eid, user_id="u").session_id == "big"
    assert m.stats().episodes >= len(confirmed)
    assert m.stats().episodes % 25 == 0  # each add is all or nothing
    if isinstance(store_target, Path):
        conn = sqlite3.connect(store_target)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    # and it is writable and searchable again
    eid = m.add("after the crash", user_id="u").episode_ids[0]
    assert m.flush(timeout=30)
    assert eid in [h.memory.id for h in m.search("after the crash", user_id="u")]


def workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "remem-worker" and t.is_alive()}


def test_threads_sharing_one_memory_start_one_worker(open_memory: Callable[..., Memory]) -> None:
    already = workers()
    m = open_memory(config=EPISODES)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            barrier.wait()
            for i in range(10):
                m.add(f"thread {n} note {i}", user_id="u")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    mine = workers() - already
    assert len(mine) == 1
    assert m.flush(timeout=30)
    assert m.stats().episodes == 80
    assert m.stats().vectors == 80
    m.close()
    assert not mine.pop().is_alive()


def test_searching_while_another_thread_writes(open_memory: Callable[..., Memory]) -> None:
    m = open_memory(config=HASH)
    m.add("seed note about deploys", user_id="u")
    m.flush()
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            i = 0
            while not stop.is_set():
                m.add(f"deploy note {i}", user_id="u")
                i += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(50):
            assert m.search("deploy", user_id="u", k=5)
    finally:
        stop.set()
        t.join()
    assert errors == []


def test_a_new_file_another_process_is_creating_is_opened_once_it_is_free(tmp_path: Path) -> None:
    # another connection holds the write lock of the new file (as a second process creating
    # the same store does): switching it to WAL fails at once with "database is locked",
    # which SQLite does not wait for by itself; the store waits, then opens it
    path = tmp_path / "new.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, other.execute, ("COMMIT",))
    release.start()
    try:
        with Memory(path, config=Config(embedder="hash")) as m:
            m.add("We deploy with make ship", user_id="alice")
            assert m.list(user_id="alice", include_episodes=True)
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        release.join()
        other.close()
