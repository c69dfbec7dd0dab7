"""Secrets masked out of what hooks capture without anyone choosing it.

Commands, their output and prompts are stored as they happened; the credentials that
commonly appear in them (API keys and tokens of well-known shapes, ``password=...``,
``Authorization: Bearer ...``, a URL's ``user:password@``) are replaced by ``***`` first.
"""

from __future__ import annotations

import re

__all__ = ["redact"]

_SHAPES = re.compile(
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"          # OpenAI, Anthropic
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"                   # GitHub
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"                     # GitLab
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"                # Slack
    r"|\bAKIA[0-9A-Z]{16}\b"                           # AWS access key id
    r"|\bAIza[0-9A-Za-z_-]{30,}"                       # Google API key
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # a JWT
)
_ASSIGNED = re.compile(
    r"(?i)\b([\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credentials?)[\w.-]*)(\s*[=:]\s*)(['\"]?)([^\s'\"]{4,})\3")
_FLAG = re.compile(r"(?i)(\s--?[\w-]*(?:password|passwd|secret|token|api-?key)[\w-]*)\s+([^\s<>|&;-]\S*)")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the credentials it seems to hold replaced by ``***``."""
    text = _SHAPES.sub("***", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} ***", text)
    text = _URL_PASSWORD.sub(r"\1***@", text)
    text = _FLAG.sub(lambda m: f"{m.group(1)} ***", text)
    return _ASSIGNED.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}***{m.group(3)}", text)
