"""Coding-agent integrations: Claude Code, Cursor and Codex set-up, hooks, code anchors,
instruction-file import and AGENTS.md export.

- :mod:`.agent`: :class:`AgentMemory`, what an agent asks of its memory, as text;
- :mod:`.scope`: the user and project an agent works in;
- :mod:`.anchors`: the files a memory cites and whether they changed;
- :mod:`.hooks`: ``remem hook EVENT``, fail-open answers to agent hooks;
- :mod:`.claude_code`, :mod:`.cursor`, :mod:`.codex`: ``remem install`` / ``uninstall``;
- :mod:`.importers`, :mod:`.exporter`: CLAUDE.md, AGENTS.md, Cursor rules in; AGENTS.md out.
"""
