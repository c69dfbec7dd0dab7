"""Memory's sharing, cube and PAM methods.

Each one checks its arguments and hands the work to ``govern.sharing`` or ``cube``.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from .._inputs import parse_kinds, parse_scope
from ..config import cube_registry_path, signing_key_path
from ..errors import ValidationError
from ..model import Hit, Scope, Share
from .base import FacadeBase

if TYPE_CHECKING:
    from ..cube import CubeManifest, Installed, SigningKey
    from ..store import Filters

__all__ = ["SharingMethods"]


class SharingMethods(FacadeBase):
    """Grants, cubes and PAM on a :class:`~remem.memory.Memory`."""

    # --- sharing ------------------------------------------------------------------------

    def share(self, *, grantee: str, user_id: str | None = None, project: str | None = None,
              org_id: str | None = None, grantee_kind: str = "user", access: str = "read",
              created_by: str | None = None) -> Share:
        """Let ``grantee`` (a user, an agent or a team: ``grantee_kind``) read, or with
        ``access="write"`` read and write, the memories of ``user_id`` (all of them, or of
        ``project`` only). Granting again changes the access. Returns the grant.

        >>> m.share(grantee="bob", user_id="alice", project="web")
        """
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, project=project)
        return self.sharing.grant(org_id=scope.org_id, user_id=scope.user_id,
                                  project=scope.project, grantee=grantee, grantee_kind=grantee_kind,
                                  access=access, created_by=created_by or user_id)

    def unshare(self, share_id: str, *, org_id: str | None = None,
                user_id: str | None = None) -> Share:
        """Revoke a grant (with ``user_id``: only one of that user's own); the grant revoked."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id)
        return self.sharing.revoke(share_id, org_id=scope.org_id, owner=scope.user_id)

    def shares(self, *, org_id: str | None = None, user_id: str | None = None,
               grantee: str | None = None) -> builtins.list[Share]:
        """Who can see what: the grants ``user_id`` gave, and those given to ``grantee``
        (directly or through a team); with neither, every grant of the org."""
        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=grantee)
        return builtins.list(self.sharing.listing(scope.org_id, user_id=scope.user_id,
                                                  grantee=grantee))

    def _with_shared(self, hits: builtins.list[Hit], query: str, scope: Scope, filters: Filters,
                     k: int, now: datetime) -> builtins.list[Hit]:
        """``hits`` merged with what the grants to the reader find, labelled, best first."""
        readable = self.sharing.readable(scope)
        if not readable:
            return hits
        merged = builtins.list(hits)
        seen = {h.memory.id for h in hits}
        for entry in readable:
            owner = entry.share.user_id or "the org"
            label = f"shared by {owner}" + (f" (project {entry.share.project})"
                                            if entry.share.project else "")
            for hit in self.retriever(query, scope=entry.scope, filters=filters, k=k,
                                      budget_tokens=None, now=now):
                if hit.memory.id in seen:
                    continue
                seen.add(hit.memory.id)
                merged.append(hit.model_copy(update={"shared_by": entry.share.id,
                                                     "reasons": [*hit.reasons, label]}))
        merged.sort(key=lambda h: -h.score)
        return merged[:k]

    # --- cubes --------------------------------------------------------------------------

    def signing_key(self, *, create: bool = True) -> SigningKey:
        """The key that signs the cubes this user packs (created at
        ``Config.signing_key``, ``0600``, on first use when ``create``)."""
        from ..cube import load_or_create, load_signing_key

        path = signing_key_path(self.config)
        return load_or_create(path) if create else load_signing_key(path)

    def pack_cube(self, out: str | os.PathLike[str] | None = None, *, name: str,
                  user_id: str | None = None, project: str | None = None,
                  agent_id: str | None = None, org_id: str | None = None, version: str = "1.0.0",
                  description: str = "", license: str = "CC-BY-4.0",
                  kinds: Sequence[str] | None = None, include_episodes: bool = False,
                  signer_name: str | None = None) -> tuple[Path, CubeManifest]:
        """Pack the active memories of a scope into a signed cube: ``out``, or
        ``NAME-VERSION.cube`` in the registry folder. Returns the path and the manifest.

        >>> path, manifest = m.pack_cube("team.cube", name="web-conventions", user_id="alice")
        """
        from ..cube import pack, registry_path

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        if kinds is not None:
            kinds = parse_kinds(kinds)
        for field, value in (("description", description), ("license", license)):
            if not isinstance(value, str):
                raise ValidationError(field, "expected a string")
        if not license.strip():
            raise ValidationError("license", "name the licence the memories are shared under")
        target = Path(out).expanduser() if out is not None else registry_path(
            cube_registry_path(self.config), name, version)
        manifest = pack(self.store, scope, target, key=self.signing_key(), name=name,
                        version=version, description=description, license=license,
                        embedder=(self.embedder.name, self.embedder.dim),
                        created_by=f"remem/{__version__}", signer_name=signer_name,
                        kinds=kinds, include_episodes=include_episodes)
        return target, manifest

    def verify_cube(self, source: str | os.PathLike[str]) -> CubeManifest:
        """The manifest of a cube (a path, or a name in the registry) whose signature and
        checksums match; CubeVerifyError (or CubeError) otherwise."""
        from ..cube import read_cube, resolve, verify

        cube = read_cube(resolve(os.fspath(source), cube_registry_path(self.config)))
        verify(cube)
        return cube.manifest

    def install_cube(self, source: str | os.PathLike[str], *, user_id: str | None = None,
                     project: str | None = None, agent_id: str | None = None,
                     org_id: str | None = None) -> Installed:
        """Verify a cube (a path, or a name in the registry) and install its memories into
        the scope, marked with their origin, in one transaction. Text that reads as an
        instruction to the agent is installed held for review."""
        from ..cube import install, read_cube, resolve

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        cube = read_cube(resolve(os.fspath(source), cube_registry_path(self.config)))
        done = install(self.store, cube, scope, split=self._passages, screen=self.agent.screen_text,
                       max_chars=self.config.max_text_chars)
        self._jobs.track(done.job_ids)
        return done

    def uninstall_cube(self, name: str, *, user_id: str | None = None, project: str | None = None,
                       agent_id: str | None = None, org_id: str | None = None) -> builtins.list[str]:
        """Remove every memory the cube ``name`` installed in the scope, and nothing else;
        the ids removed."""
        from ..cube import uninstall

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return uninstall(self.store, scope, name)

    def installed_cubes(self, *, user_id: str | None = None, project: str | None = None,
                        agent_id: str | None = None,
                        org_id: str | None = None) -> dict[str, dict[str, Any]]:
        """The cubes installed in the scope: name -> version, signer, counts."""
        from ..cube import installed_cubes

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return installed_cubes(self.store, scope)

    # --- PAM ----------------------------------------------------------------------------

    def export_pam(self, *, user_id: str | None = None, project: str | None = None,
                   agent_id: str | None = None, org_id: str | None = None) -> dict[str, Any]:
        """The scope's memories as a Portable AI Memory (PAM 1.0) memory store document."""
        from ..cube.pam import export_pam

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        return export_pam(self.store, scope, exported_by=f"remem/{__version__}")

    def import_pam(self, document: Any, *, user_id: str | None = None, project: str | None = None,
                   agent_id: str | None = None, org_id: str | None = None) -> builtins.list[str]:
        """Check a PAM memory store document in full, then add its memories to the scope in
        one transaction; the ids of the new memories."""
        from ..cube.pam import import_pam

        self._check_open()
        scope = parse_scope(org_id=org_id, user_id=user_id, agent_id=agent_id, project=project)
        ids, _ = import_pam(self.store, document, scope, split=self._passages,
                            screen=self.agent.screen_text, max_chars=self.config.max_text_chars)
        self._jobs.track(self.store.queued("embed"))
        return ids
