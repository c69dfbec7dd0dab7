"""The warm daemon that answers agent hooks over a Unix socket.

One daemon per store and configuration (:func:`remem.daemon.client.endpoint`), started
on demand by the hook client and stopped when idle. It keeps the store open, the
embedding model loaded and the memory agent's worker running, so a hook costs a socket
round trip instead of a process that loads everything.

What a hook reads (the session-start block, the memory for a prompt, the check of a
command) is answered at once. What a hook records is written to the spool first and
acknowledged; one thread stores the spooled records in the order they came, and keeps
them while the store is busy (another process holding its write lock), so none is lost.

Protocol: one JSON object per line each way. ``{"op": "hook", "event": ..., "agent":
..., "user": ..., "project": ..., "cwd": ..., "payload": {...}, "record": true}`` is
answered with ``{"out": <hook answer or null>}``; ``{"op": "status"}`` with the daemon's
pid, store and spool backlog; ``{"op": "flush", "timeout": S}`` stores what is spooled
and waits up to S seconds for the memory agent; ``{"op": "stop"}`` stops it. Errors come
back as ``{"error": "..."}``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socketserver
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import Config
from ..integrations.agent import AgentMemory
from ..integrations.hook_events import WRITE_EVENTS
from ..integrations.hooks import HookInput, record, reply
from ..integrations.scope import resolve_scope
from ..memory import Memory
from .client import Endpoint, ask_daemon, private_folder, spool

__all__ = ["HookDaemon"]

log = logging.getLogger(__name__)

#: Seconds without a request (and with nothing spooled) after which the daemon stops
#: (``$REMEM_DAEMON_IDLE_S``).
IDLE_S = 900.0


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    owner: HookDaemon


class _Handler(socketserver.StreamRequestHandler):
    timeout = 30  # a client that connects and says nothing does not hold a thread for ever

    def handle(self) -> None:
        line = self.rfile.readline(16 * 1024 * 1024)
        try:
            message = json.loads(line)
            answer = self.server.owner.handle(message)  # type: ignore[attr-defined]
        except Exception as exc:  # one bad request must not stop the daemon
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        self.wfile.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")


class HookDaemon:
    """Answers hooks for one store from a warm process.

    Parameters:
        ep: where to listen and spool (:func:`remem.daemon.client.endpoint`).
        memory: the store to serve (default: opened from ``ep.db`` with the configuration
            of the environment).
        idle_s: stop after this many seconds without a request.
        clock: seconds, for the idle timer.
    """

    def __init__(self, ep: Endpoint, *, memory: Memory | None = None, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ep = ep
        self._memory = memory
        self.idle_s = idle_s
        self.clock = clock
        self.last_request = self.last_progress = clock()
        self.started = time.time()
        self._wake = threading.Event()
        self._draining = threading.Lock()  # one drain at a time: each record stored once
        self._stopping = threading.Event()
        self._server: _Server | None = None

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            self._memory = Memory(self.ep.db or None, config=Config.from_env())
        return self._memory

    # --- requests ---------------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """The answer to one request (see the module's protocol)."""
        self.last_request = self.clock()
        op = message.get("op")
        if op == "status":
            return {"pid": os.getpid(), "store": str(self.memory.path), "spooled": len(self.spooled()),
                    "since": self.started}
        if op == "flush":  # store what is spooled and let the memory agent finish
            timeout = float(message.get("timeout", 30))
            self.drain()
            done = self.memory.flush(timeout=timeout)
            return {"spooled": len(self.spooled()), "done": done and not self.spooled()}
        if op == "stop":
            self.stop()
            return {"stopping": True}
        if op != "hook":
            return {"error": f"unknown op {op!r}: use hook, status, flush or stop"}
        event, agent_name = str(message.get("event")), message.get("agent") or "claude-code"
        payload = self._payload(message)
        agent = AgentMemory(self.memory, self._scope(message, payload), door="hook")
        out = reply(event, payload, agent, agent_name=agent_name)
        if event in WRITE_EVENTS:
            if message.get("record"):  # a client that did not spool it itself
                spool(self.ep, message)
            self._wake.set()  # the client spooled what happened: store it now
        return {"out": out}

    @staticmethod
    def _payload(message: dict[str, Any]) -> HookInput:
        data = message.get("payload")
        if not isinstance(data, dict):
            raise ValueError("payload: expected the hook's JSON object")
        if not data.get("cwd") and not data.get("workspace_roots") and message.get("cwd"):
            data = {**data, "cwd": message["cwd"]}  # where the hook ran, not the daemon
        return HookInput.model_validate(data)

    @staticmethod
    def _scope(message: dict[str, Any], payload: HookInput) -> Any:
        return resolve_scope(user=message.get("user"), project=message.get("project"),
                             cwd=payload.where)

    # --- the spool --------------------------------------------------------------------

    def spooled(self) -> list[Path]:
        """The records waiting to be stored, oldest first."""
        spool = Path(self.ep.spool)
        return sorted(spool.glob("*.json")) if spool.is_dir() else []

    def drain(self) -> int:
        """Store what is spooled, in order; stops at the first record the store cannot
        take yet (busy, or any other failure), which stays for the next try; a record
        that can never be stored (malformed) is set aside in ``failed/``. Returns how
        many were stored. Daemons of other settings sharing the store's spool take
        turns (a file lock), so each record is stored once."""
        with self._draining, open(Path(self.ep.spool) / ".drain.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return self._drain()

    def _drain(self) -> int:
        done = 0
        for path in self.spooled():
            try:
                message = json.loads(path.read_text(encoding="utf-8"))
                payload = self._payload(message)
            except (OSError, ValueError) as exc:  # malformed: it will never be stored
                failed = Path(self.ep.spool) / "failed"
                failed.mkdir(exist_ok=True, mode=0o700)
                os.replace(path, failed / path.name)
                log.error("record %s set aside: %s: %s", path.name, type(exc).__name__, exc)
                continue
            try:
                agent = AgentMemory(self.memory, self._scope(message, payload), door="hook")
                record(str(message.get("event")), payload, agent,
                       agent_name=message.get("agent") or "claude-code")
            except Exception as exc:  # the store is busy or failing: kept for the next try
                log.warning("%d record(s) wait: %s: %s", len(self.spooled()), type(exc).__name__, exc)
                return done
            path.unlink()
            done += 1
            self.last_progress = self.clock()
        return done

    def _drain_loop(self) -> None:
        pause = 0.5
        while not self._stopping.is_set():
            self._wake.wait(pause)
            self._wake.clear()
            before = len(self.spooled())
            stored = self.drain()
            pause = 0.5 if stored == before else min(5.0, pause * 2)

    # --- life -------------------------------------------------------------------------

    def idle(self) -> bool:
        """True when no request came for ``idle_s`` seconds and nothing waits (or what
        waits has not moved for as long: the next daemon tries again)."""
        now = self.clock()
        return now - self.last_request >= self.idle_s and (
            not self.spooled() or now - self.last_progress >= self.idle_s)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._server is not None:
            threading.Thread(target=self._server.shutdown, daemon=True).start()

    def _watch(self) -> None:
        while not self._stopping.wait(1.0):
            if self.idle():
                log.info("idle for %.0f s: stopping", self.idle_s)
                self.stop()

    def _warm(self) -> None:
        try:
            self.memory.embed(["warm up"], query=True)
        except Exception as exc:  # pragma: no cover - the first real query reports it
            log.warning("warming the embedder failed: %s", exc)

    def _lock(self, lock: Any) -> bool:
        """Take the endpoint's lock: False when another daemon serves it; a daemon that
        is stopping is waited for."""
        give_up = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                try:
                    serving = ask_daemon(self.ep, {"op": "status"}, 5.0) is not None
                except OSError:  # one that is loading: it serves soon
                    serving = True
                if serving or time.monotonic() > give_up:
                    return False
                time.sleep(0.1)

    def run(self) -> int:
        """Serve until stopped or idle. Returns 0, also when another daemon already serves
        this endpoint (it keeps serving)."""
        private_folder(os.path.dirname(self.ep.socket))
        with open(self.ep.lock, "a") as lock:
            if not self._lock(lock):
                return 0
            Path(self.ep.socket).unlink(missing_ok=True)  # left by a daemon that was killed
            private_folder(self.ep.spool)
            _ = self.memory  # opened once, before any thread can race to open it
            server = _Server(self.ep.socket, _Handler)
            server.owner = self
            os.chmod(self.ep.socket, 0o600)
            self._server = server
            threads = [threading.Thread(target=t, name=f"remem-daemon-{t.__name__}", daemon=True)
                       for t in (self._drain_loop, self._watch, self._warm)]
            for t in threads:
                t.start()
            try:
                server.serve_forever(poll_interval=0.2)
            finally:
                self._stopping.set()
                server.server_close()
                Path(self.ep.socket).unlink(missing_ok=True)
                threads[0].join(timeout=30)
                self.drain()
                if self._memory is not None:
                    self._memory.close()
        return 0
