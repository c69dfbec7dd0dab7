"""Whose memory a coding agent works in: the user and project of the current checkout."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentScope", "default_project", "default_user", "project_root", "resolve_scope"]


class AgentScope(BaseModel):
    """The fixed scope an agent integration reads and writes in.

    ``root`` is the project's folder (its git root when there is one); code anchors are
    stored relative to it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    org_id: str = "default"
    user_id: str = Field(min_length=1)
    project: str | None = None
    agent_id: str | None = None
    root: Path | None = None

    def owner(self) -> dict[str, Any]:
        """Scope keywords for the ``Memory`` calls on one memory (get, update, forget)."""
        out: dict[str, Any] = {"org_id": self.org_id, "user_id": self.user_id}
        if self.project is not None:
            out["project"] = self.project
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        return out

    def many(self, session_id: str | None = None) -> dict[str, Any]:
        """Scope keywords for the ``Memory`` calls on many memories (add, search, list)."""
        out = self.owner()
        if session_id:
            out["session_id"] = session_id
        return out


def default_user(environ: Mapping[str, str] | None = None) -> str:
    """``$REMEM_USER``, else the name of the user running this process."""
    env = os.environ if environ is None else environ
    if env.get("REMEM_USER", "").strip():
        return env["REMEM_USER"].strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, e.g. in a container with a bare uid
        return "user"


def project_root(cwd: str | os.PathLike[str] | None = None) -> Path | None:
    """The git root (the nearest folder holding ``.git``) of ``cwd``, or None."""
    here = Path(cwd if cwd is not None else os.getcwd()).expanduser().resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def default_project(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The name of the git root folder of ``cwd`` (else of ``cwd`` itself)."""
    root = project_root(cwd)
    here = root or Path(cwd if cwd is not None else os.getcwd()).expanduser().resolve()
    return here.name or None


def resolve_scope(*, user: str | None = None, project: str | None = None,
                  org: str | None = None, agent: str | None = None,
                  cwd: str | os.PathLike[str] | None = None,
                  environ: Mapping[str, str] | None = None) -> AgentScope:
    """The scope from what was given, with the defaults for what was not."""
    where = Path(cwd if cwd is not None else os.getcwd()).expanduser()
    root = project_root(where) or (where.resolve() if where.is_dir() else None)
    return AgentScope(org_id=org or "default", user_id=user or default_user(environ),
                      project=project or default_project(where), agent_id=agent, root=root)
