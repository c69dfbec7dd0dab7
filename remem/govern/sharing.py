"""Sharing with permissions: who may read or write whose memories.

The walls between users, agents and projects stay in the store; a grant is the only way
through one, and it opens exactly one owner's scope (a user's memories, or one of their
projects, or a team's) to one grantee, for reading or for reading and writing:

- a **user** grantee reads (or writes) with their own ``user_id``;
- an **agent** grantee reads with its ``agent_id``, whoever it works for;
- a **team** grantee stands for its members: the users who hold a grant on the team's own
  scope (the scope whose ``user_id`` is the team's id). Team memory is that scope: every
  member with write access writes into it, and each memory names its writer.

Nothing else widens a read: no grant, no access. A grant's owner (or an admin of the org)
creates and revokes it; the grantee can list it. :class:`Sharing` holds these rules over
a :class:`~remem.store.base.ShareStore`; the facade and the doors call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._inputs import check_label
from ..errors import NotFoundError, PermissionDeniedError, ValidationError
from ..model import Scope, Share, new_id, utcnow
from ..store.base import ShareStore

__all__ = ["ACCESS", "GRANTEE_KINDS", "Readable", "Sharing"]

ACCESS = ("read", "write")
GRANTEE_KINDS = ("user", "agent", "team")


@dataclass(frozen=True)
class Readable:
    """One scope a reader sees through a grant, and the grant that opens it."""

    scope: Scope
    share: Share


class Sharing:
    """Grants, revocations and the scopes they open, over one store."""

    def __init__(self, store: ShareStore) -> None:
        self.store = store

    # --- changing grants ------------------------------------------------------------------

    def grant(self, *, org_id: str, user_id: str | None, project: str | None, grantee: str,
              grantee_kind: str = "user", access: str = "read",
              created_by: str | None = None) -> Share:
        """Let ``grantee`` read (``access="read"``) or read and write (``"write"``) the
        scope ``(org_id, user_id, project)``; granting again changes the access."""
        if grantee_kind not in GRANTEE_KINDS:
            raise ValidationError("grantee_kind", f"{grantee_kind!r}: use one of "
                                  f"{', '.join(GRANTEE_KINDS)}")
        if access not in ACCESS:
            raise ValidationError("access", f"{access!r}: use read or write")
        for name, value in (("grantee", grantee), ("user_id", user_id), ("project", project),
                            ("created_by", created_by)):
            check_label(value, name)
            if value is not None and not value.strip():
                raise ValidationError(name, "is empty")
        if not grantee:
            raise ValidationError("grantee", "name the user, agent or team to share with")
        if user_id is None and project is None:
            raise ValidationError("user_id", "name the user (or team) whose memories to share, "
                                  "or a project")
        if grantee_kind == "user" and grantee == user_id:
            raise ValidationError("grantee", f"{grantee!r} owns this scope already")
        share = Share(id=new_id("sh_"), org_id=org_id, user_id=user_id, project=project,
                      grantee_kind=grantee_kind,  # type: ignore[arg-type]
                      grantee=grantee, access=access,  # type: ignore[arg-type]
                      created_at=utcnow(), created_by=created_by)
        return self.store.put_share(share)

    def revoke(self, share_id: str, *, org_id: str, owner: str | None = None) -> Share:
        """Delete a grant. With ``owner``, only a grant of that user's own scope (a caller
        confined to one user cannot revoke others' grants); NotFoundError otherwise."""
        check_label(share_id, "id")
        found = self.store.shares(org_id, share_id=share_id)
        if not found or (owner is not None and found[0].user_id != owner):
            raise NotFoundError(share_id)
        dropped = self.store.drop_share(share_id, org_id)
        if dropped is None:
            raise NotFoundError(share_id)
        return dropped

    # --- reading grants -------------------------------------------------------------------

    def principals(self, scope: Scope) -> list[tuple[str, str]]:
        """Who a reader in ``scope`` is: ``(kind, id)`` for the user, the agent, and every
        team the user belongs to (holds a grant on the team's scope)."""
        out: list[tuple[str, str]] = []
        if scope.user_id is not None:
            out.append(("user", scope.user_id))
            for share in self.store.shares(scope.org_id, grantee_kind="user", grantee=scope.user_id):
                if share.project is None and share.user_id is not None:
                    out.append(("team", share.user_id))
        if scope.agent_id is not None:
            out.append(("agent", scope.agent_id))
        return list(dict.fromkeys(out))

    def granted_to(self, scope: Scope) -> list[Share]:
        """Every grant that applies to a reader in ``scope``, oldest first."""
        found: dict[str, Share] = {}
        for kind, name in self.principals(scope):
            for share in self.store.shares(scope.org_id, grantee_kind=kind, grantee=name):
                found.setdefault(share.id, share)
        return sorted(found.values(), key=lambda s: (s.created_at, s.id))

    def readable(self, scope: Scope) -> list[Readable]:
        """The other scopes a reader in ``scope`` sees through grants. A reader inside a
        project sees a grant of a whole user's memories only within that project."""
        out: list[Readable] = []
        seen: set[tuple[str | None, str | None]] = set()
        for share in self.granted_to(scope):
            if share.user_id == scope.user_id and share.user_id is not None:
                continue  # the reader's own memories: read as ever
            project = share.project
            if scope.project is not None:
                if project is not None and project != scope.project:
                    continue
                project = scope.project
            key = (share.user_id, project)
            if key in seen:
                continue
            seen.add(key)
            out.append(Readable(Scope(org_id=scope.org_id, user_id=share.user_id,
                                      project=project), share))
        return out

    def can_write(self, writer: str, target: Scope) -> Share | None:
        """The grant that lets user ``writer`` write into ``target`` (None when ``writer``
        owns it); PermissionDeniedError when no grant does."""
        if target.user_id == writer:
            return None
        for share in self.granted_to(Scope(org_id=target.org_id, user_id=writer)):
            if share.access != "write" or share.user_id != target.user_id:
                continue
            if share.project is None or share.project == target.project:
                return share
        where = f"user {target.user_id}" if target.user_id else "the org"
        if target.project:
            where += f", project {target.project}"
        raise PermissionDeniedError(f"{writer} holds no write grant on {where}; the owner can "
                                    f"grant one with `remem share grant`")

    def visible_to(self, scope: Scope) -> list[Share]:
        """Who can see what of ``scope``'s owner: the grants of that user's scope (and of its
        projects), oldest first."""
        return self.store.shares(scope.org_id, user_id=scope.user_id) if scope.user_id else \
            self.store.shares(scope.org_id, project=scope.project)

    def listing(self, org_id: str, *, user_id: str | None = None,
                grantee: str | None = None) -> Sequence[Share]:
        """Grants of the org: those ``user_id`` gave and those given to ``grantee`` (a user:
        directly or through a team); both None, all of them."""
        if user_id is None and grantee is None:
            return self.store.shares(org_id)
        found: dict[str, Share] = {}
        if user_id is not None:
            for share in self.store.shares(org_id, user_id=user_id):
                found[share.id] = share
        if grantee is not None:
            for share in self.granted_to(Scope(org_id=org_id, user_id=grantee)):
                found[share.id] = share
        return sorted(found.values(), key=lambda s: (s.created_at, s.id))
