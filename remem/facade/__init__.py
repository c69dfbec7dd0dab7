"""The parts of the facade (:class:`remem.Memory`, in :mod:`remem.memory`).

- :mod:`.wiring`: builds everything a Memory runs on from its configuration;
- :mod:`.ingest`: checks and writes what is added (turns, agent events, remembered text).
"""
