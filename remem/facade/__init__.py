"""The parts of the facade (:class:`remem.Memory`, in :mod:`remem.memory`).

- :mod:`.wiring`: builds everything a Memory runs on from its configuration.
"""
