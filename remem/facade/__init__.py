"""The parts of the facade (:class:`remem.Memory`, in :mod:`remem.memory`).

- :mod:`.wiring`: builds everything a Memory runs on from its configuration;
- :mod:`.ingest`: checks and writes what is added (turns, agent events, remembered text);
- :mod:`.base` and Memory's methods by concern, each handing its work to the layer that
  owns it: :mod:`.items` (one memory by id), :mod:`.review` (feedback, review, skills,
  decay), :mod:`.logs` (injection log, audit log, jobs), :mod:`.requests` (plain-language
  requests, reminders, team plans, sessions) and :mod:`.sharing` (grants, cubes, PAM);
- :mod:`.aio`: :class:`~remem.AsyncMemory`, the same methods awaited.
"""
