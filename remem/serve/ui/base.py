"""What every console page shares: the Memory, who is asking, the scope they may read,
and the way errors become pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response

from ...errors import NotFoundError, RememError
from ...memory import Memory
from ..auth import Authenticator, Principal
from ..errors import ApiError
from .guard import Forbidden, LoginNeeded, StaleForm, console_principal, read_form, require
from .i18n import pick_language, translator
from .render import LANG_COOKIE, Renderer, redirect

__all__ = ["Console", "ScopeFilter"]

_FIELDS = ("org", "user", "agent", "project", "session")


@dataclass(frozen=True)
class ScopeFilter:
    """The scope fields a page was asked for (query parameters), confined to the key."""

    org: str | None = None
    user: str | None = None
    agent: str | None = None
    project: str | None = None
    session: str | None = None

    @classmethod
    def of(cls, request: Request, who: Principal) -> ScopeFilter:
        asked = {f: (request.query_params.get(f) or "").strip() or None for f in _FIELDS}
        org, user = who.confine(asked["org"], asked["user"])
        return cls(org=org, user=user, agent=asked["agent"], project=asked["project"],
                   session=asked["session"])

    def owner(self) -> dict[str, Any]:
        """Keywords for Memory calls on one memory."""
        return {"org_id": self.org, "user_id": self.user, "agent_id": self.agent,
                "project": self.project}

    def many(self) -> dict[str, Any]:
        """Keywords for Memory calls on many memories."""
        return {**self.owner(), "session_id": self.session}

    def query(self) -> dict[str, str]:
        """The fields as query parameters (those given)."""
        return {f: v for f in _FIELDS if (v := getattr(self, f))}


class Console:
    """The console's shared parts, and :meth:`page` / :meth:`action`, which run a handler
    with the request's principal and turn errors into pages."""

    def __init__(self, memory: Memory, auth: Authenticator) -> None:
        self.memory = memory
        self.auth = auth
        self.render = Renderer()

    def error(self, request: Request, message: str, status: int) -> HTMLResponse:
        return self.render(request, "error.html", code=status, message=message, who=None)

    async def page(self, request: Request,
                   handler: Callable[[Principal, ScopeFilter], Response]) -> Response:
        """A page that reads: needs the ``read`` scope."""
        try:
            who = console_principal(request, self.auth)
            require(who, "read")
            return handler(who, ScopeFilter.of(request, who))
        except LoginNeeded:
            return redirect("/ui/login", next=request.url.path)
        except Forbidden:
            return self.error(request, self.text(request, "forbidden"), 403)
        except ApiError as exc:  # asked for another org or user than the key's
            return self.error(request, exc.message, exc.status)
        except NotFoundError as exc:
            return self.error(request, str(exc), 404)
        except RememError as exc:
            return self.error(request, str(exc), 400)

    async def action(self, request: Request, scope: str,
                     handler: Callable[[Principal, dict[str, str]], Awaitable[Response] | Response]
                     ) -> Response:
        """A form post that changes something: checks its CSRF token and ``scope``."""
        try:
            who = console_principal(request, self.auth)
            form = await read_form(request)
            require(who, scope)
            out = handler(who, form)
            return await out if isinstance(out, Awaitable) else out
        except LoginNeeded:
            return redirect("/ui/login")
        except StaleForm:
            return self.error(request, self.text(request, "csrf"), 403)
        except Forbidden:
            return self.error(request, self.text(request, "forbidden"), 403)
        except ApiError as exc:
            return self.error(request, exc.message, exc.status)
        except NotFoundError as exc:
            return self.error(request, str(exc), 404)
        except RememError as exc:
            return self.error(request, str(exc), 400)

    @staticmethod
    def text(request: Request, key: str) -> str:
        """The interface text of ``key`` in the request's language."""
        return translator(pick_language(request.query_params.get("lang"),
                                        request.cookies.get(LANG_COOKIE),
                                        request.headers.get("accept-language")))(key)
