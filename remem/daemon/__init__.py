"""The local daemon: a warm process per store that answers agent hooks over a Unix socket.

- :mod:`.client`: what ``remem hook EVENT`` runs, the standard library only;
- :mod:`.server`: :class:`~.server.HookDaemon`, started on demand, stopped when idle.

``python -m remem.daemon [--db PATH]`` runs the daemon in the foreground.
"""
