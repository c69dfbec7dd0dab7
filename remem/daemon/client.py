"""``remem hook EVENT``, the thin client: the standard library only, answered by a daemon.

An agent runs a hook on every prompt and on every shell command, as a fresh process, so
a hook that loads numpy, the store and the embedding model costs seconds each time. This
client loads none of them. It sends the hook's JSON over a Unix socket to the warm
daemon of its store (:mod:`remem.daemon.server`) and prints the answer.

- **No daemon yet**: the client starts one (one per store and configuration, stopped when
  idle). What the hook records is written to the daemon's spool first, a folder the
  daemon drains in order, so nothing is lost while it starts or while another process
  holds the store; a hook that must answer (session start, a prompt, a command about to
  run) waits for the new daemon until its deadline.
- **Fail open**: garbage on stdin, no daemon in time or any error prints nothing (``{}``
  for Cursor) and exits 0; the agent goes on as if there were no hook.
- ``REMEM_DAEMON=0`` answers in this process instead (the direct path: slower, no daemon).

The spool and the socket live in private folders (mode 0700): the spool under
``$REMEM_HOME/spool`` (default ``~/.remem``), the socket under ``$XDG_RUNTIME_DIR/remem``
(else ``/tmp/remem-UID``). Credentials are masked before anything is spooled.
"""

from __future__ import annotations

import _socket  # socket's C module: socket itself loads enum and selectors
import fcntl
import io
import json
import os
import select
import stat
import sys
import time
from collections import namedtuple
from collections.abc import Mapping

from ..integrations.hook_events import (
    CLAUDE_EVENTS,
    CURSOR_EVENTS,
    READ_EVENTS,
    WRITE_EVENTS,
    deadline_from_env,
)

# Only what a hook needs is imported here: every module costs each hook its import time
# (argparse, dataclasses, pathlib, subprocess, threading and typing together cost more
# than Python's own start). The credential masking is loaded by the hooks that spool.

# hashlib loads OpenSSL for this one digest, which costs a hook more than the rest of
# its imports; the built-in module gives the same digest
try:
    from _sha256 import sha256  # type: ignore[import-not-found]  # Python 3.11
except ImportError:  # pragma: no cover - other versions
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]  # 3.12 on
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment]

#: Characters of a command's output (and of an error or a message) a record keeps.
_TAIL = 4000

__all__ = ["Endpoint", "ask_daemon", "endpoint", "main", "private_folder", "run", "spool", "start_daemon"]

class Endpoint(namedtuple("Endpoint", "key socket spool lock log db")):
    """Where the daemon of one store and configuration listens and spools: the key of
    the store and settings, the paths of its socket, spool folder, lock and log, and the
    store (None: the default store)."""

    __slots__ = ()


def private_folder(folder: str | os.PathLike[str]) -> str:
    """``folder``, created for this user only; one that someone else owns or can write to
    (a folder planted in /tmp) is refused."""
    folder = os.fspath(folder)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)  # a symlink planted in its place is refused too
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} must belong to this user alone (mode 0700)")
    return folder


def endpoint(db: str | os.PathLike[str] | None = None,
             environ: Mapping[str, str] | None = None) -> Endpoint:
    """The daemon endpoint for a store file (None: the default store) under the
    ``REMEM_*`` settings of ``environ``: the same settings always meet the same daemon."""
    env = os.environ if environ is None else environ
    # a store URL names a server; a path is made absolute (standard library only here)
    store = None if db is None else str(db) if "://" in str(db) else os.path.realpath(os.path.expanduser(db))
    settings = sorted((k, v) for k, v in env.items()
                      if k.startswith("REMEM_") and k not in ("REMEM_HOOK_DEADLINE_S", "REMEM_DAEMON"))
    from .. import __version__

    key = sha256(json.dumps([__version__, store, settings]).encode()).hexdigest()[:16]
    runtime = env.get("XDG_RUNTIME_DIR")
    run = os.path.join(runtime, "remem") if runtime else f"/tmp/remem-{os.getuid()}"
    home = env.get("REMEM_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".remem")
    # records are the store's, whatever the settings: one spool per store file
    spool_key = sha256(json.dumps(store).encode()).hexdigest()[:16]
    return Endpoint(key=key, socket=os.path.join(run, f"{key}.sock"),
                    spool=os.path.join(home, "spool", spool_key), lock=os.path.join(run, f"{key}.lock"),
                    log=os.path.join(run, f"{key}.log"), db=store)


def ask_daemon(ep: Endpoint, message: dict[str, object], timeout: float) -> dict[str, object] | None:
    """Send one message to the daemon and return its answer; None when no daemon listens."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.01, timeout))
        try:
            private_folder(os.path.dirname(ep.socket))
            sock.connect(ep.socket)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        sock.sendall(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    answer = json.loads(data.decode()) if data.strip() else None
    return answer if isinstance(answer, dict) else None


def _masked(value: object) -> object:
    from ..integrations.redact import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def spool(ep: Endpoint, message: dict[str, object]) -> str:
    """Write a hook's record to the daemon's spool, durably and atomically, credentials
    masked; the daemon stores it, in order, when it can."""
    folder = private_folder(ep.spool)
    name = f"{time.time_ns():020d}-{os.urandom(6).hex()}"
    tmp = os.path.join(folder, f".{name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(_masked(message), f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    path = os.path.join(folder, f"{name}.json")
    os.replace(tmp, path)
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def _kept(payload: dict[str, object]) -> dict[str, object]:
    """What a record needs of a hook's payload: never a whole file written by an edit,
    only the tail of a command's output."""
    out = dict(payload)
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        out["tool_input"] = {k: v for k, v in tool_input.items()
                             if k in ("command", "file_path", "notebook_path")}
    response = payload.get("tool_response")
    if isinstance(response, str):
        out["tool_response"] = response[-_TAIL:]
    elif isinstance(response, dict):
        out["tool_response"] = {k: (v[-_TAIL:] if isinstance(v, str) else v)
                                for k, v in response.items() if not isinstance(v, (dict, list))}
    for key in ("output", "error", "last_assistant_message", "prompt"):
        if isinstance(out.get(key), str):
            out[key] = out[key][-_TAIL * 10:] if key == "prompt" else out[key][-_TAIL:]
    return out


def starting(ep: Endpoint) -> bool:
    """True while a daemon holds the endpoint's lock (serving, or still loading)."""
    try:
        fd = os.open(ep.lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def start_daemon(ep: Endpoint) -> None:
    """Start the daemon for this endpoint in the background, unless one is already
    starting (a second one would exit at once anyway)."""
    import subprocess

    private_folder(os.path.dirname(ep.socket))
    if starting(ep):
        return
    argv = [sys.executable, "-m", "remem.daemon", "--key", ep.key]
    if ep.db is not None:
        argv += ["--db", ep.db]
    with open(ep.log, "ab") as log:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True)


class HookArgs(namedtuple("HookArgs", "event agent db user project")):
    """The command line of ``remem hook``."""

    __slots__ = ()


_AGENTS = ("claude-code", "cursor")


def _parse(argv: list[str]) -> HookArgs:
    """``EVENT [--agent A] [--db PATH] [--user U] [--project P]`` (``--name=value`` too);
    ValueError says what is wrong."""
    options: dict[str, str] = {}
    events: list[str] = []
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if not word.startswith("--"):
            events.append(word)
            continue
        name, has_value, value = word[2:].partition("=")
        if name not in ("agent", "db", "user", "project"):
            raise ValueError(f"unknown option --{name}")
        if not has_value:
            if not rest:
                raise ValueError(f"--{name} needs a value")
            value = rest.pop(0)
        options[name] = value
    if len(events) != 1:
        raise ValueError("expected one event name, such as SessionStart")
    agent = options.get("agent", "claude-code")
    if agent not in _AGENTS:
        raise ValueError(f"--agent must be one of {', '.join(_AGENTS)}, not {agent!r}")
    return HookArgs(events[0], agent, options.get("db"), options.get("user"), options.get("project"))


def _direct(args: HookArgs, raw: bytes, deadline: float) -> int:
    from ..integrations.hooks import run_hook

    out, finished = run_hook(args.event, io.BytesIO(raw), agent_name=args.agent, db=args.db,
                             user=args.user, project=args.project, deadline_s=deadline)
    _print(out)
    if not finished:
        os._exit(0)  # the cut-off work must not hold the agent up at exit
    return 0


def _print(text: str) -> None:
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run(args: HookArgs, raw: bytes, *, deadline: float,
        environ: Mapping[str, str] | None = None) -> str:
    """The text to print for one hook: asked of the daemon, which is started when needed."""
    start = time.monotonic()
    fallback = "{}" if args.agent == "cursor" else ""
    known = CURSOR_EVENTS if args.agent == "cursor" else CLAUDE_EVENTS
    if args.event not in known:
        return fallback
    try:
        payload = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        print(f"remem hook {args.event}: expected a JSON object on stdin", file=sys.stderr)
        return fallback
    ep = endpoint(args.db, environ)
    message = {"op": "hook", "event": args.event, "agent": args.agent, "user": args.user,
               "project": args.project, "cwd": os.getcwd(), "payload": payload, "record": False}
    if args.event in WRITE_EVENTS:  # kept before anything can fail; the daemon stores it
        spool(ep, {**message, "payload": _kept(payload), "record": True})

    def left() -> float:
        return deadline - (time.monotonic() - start)

    answer = ask_daemon(ep, message, left())
    if answer is None:  # no daemon: start one, and wait for it if an answer is due
        start_daemon(ep)
        if args.event not in READ_EVENTS:
            return fallback
        while answer is None and left() > 0.05:
            time.sleep(0.02)
            answer = ask_daemon(ep, message, left())
    if answer is None:
        print(f"remem hook {args.event}: no daemon answered within {deadline:.1f}s", file=sys.stderr)
        return fallback
    if answer.get("error"):
        print(f"remem hook {args.event}: {answer['error']}", file=sys.stderr)
    out = answer.get("out")
    return json.dumps(out, ensure_ascii=False) if out is not None else fallback


def _read(stream: io.TextIOWrapper, deadline: float) -> bytes | None:
    """All of ``stream`` (stdin), or None when it does not end within ``deadline`` seconds."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # in memory (a test runner's): it never waits
        return stream.buffer.read()
    end = time.monotonic() + deadline
    chunks: list[bytes] = []
    while True:
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # no stdin at all: nothing was sent
            chunk = b""
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def main(argv: list[str] | None = None) -> int:
    """``remem hook EVENT [--agent A] [--db PATH] [--user U] [--project P]``; always 0."""
    try:
        args = _parse(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:  # a broken command line must not break the agent either
        print(f"remem hook: {exc}", file=sys.stderr)
        return 0
    deadline = deadline_from_env()
    start = time.monotonic()
    raw = _read(sys.stdin, deadline)
    if raw is None:
        print(f"remem hook {args.event}: no input within {deadline:.1f}s", file=sys.stderr)
        _print("{}" if args.agent == "cursor" else "")
        return 0
    deadline = max(0.1, deadline - (time.monotonic() - start))
    if os.environ.get("REMEM_DAEMON", "1").strip().lower() in ("0", "false", "no", "off"):
        return _direct(args, raw, deadline)
    try:
        _print(run(args, raw, deadline=deadline))
    except Exception as exc:  # fail open: the agent goes on as if there were no hook
        print(f"remem hook {args.event}: {type(exc).__name__}: {exc}", file=sys.stderr)
        _print("{}" if args.agent == "cursor" else "")
    return 0
