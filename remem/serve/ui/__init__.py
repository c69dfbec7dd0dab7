"""The web console at ``/ui``: server-rendered pages over the public ``Memory`` API.

Pages: memories (table, search, a memory's page and its actions), the review inbox,
sessions (the injection log per session), the timeline with ``as_of``, the mind map and
jobs with health. Templates and static files ship in this package; nothing is fetched
from the network. Security: see :mod:`.guard`.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from ...memory import Memory
from ..auth import Authenticator, Principal
from .base import Console
from .guard import KEY_COOKIE, StaleForm, read_form
from .inbox import inbox_routes
from .memories import memory_routes
from .render import redirect
from .sessions import session_routes
from .views import view_routes

__all__ = ["install_console"]


def _login_routes(app: FastAPI, console: Console) -> None:
    auth = console.auth

    @app.get("/ui", include_in_schema=False)
    async def index() -> Response:
        return redirect("/ui/memories")

    @app.get("/ui/login", include_in_schema=False)
    async def login_page(request: Request) -> Response:
        if not auth.keys.any():
            return redirect("/ui/memories")
        return console.render(request, "login.html", who=None, failed=False,
                              next=request.query_params.get("next") or "/ui/memories")

    @app.post("/ui/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        try:
            form = await read_form(request)
        except StaleForm:
            return console.error(request, console.text(request, "csrf"), 403)
        key = form.get("key", "").strip()
        found = auth.keys.verify(key) if key else None
        target = form.get("next") or "/ui/memories"
        if not target.startswith("/ui/") or target.startswith("//"):
            target = "/ui/memories"  # never send the browser elsewhere
        if found is None or found.revoked_at is not None:
            return console.render(request, "login.html", code=401, who=None, failed=True,
                                  next=target)
        response = redirect(target)
        response.set_cookie(KEY_COOKIE, key, httponly=True, samesite="strict", path="/ui")
        return response

    @app.post("/ui/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        def handler(who: Principal, form: dict[str, str]) -> Response:
            response = redirect("/ui/login" if auth.keys.any() else "/ui/memories")
            response.delete_cookie(KEY_COOKIE, path="/ui")
            return response
        return await console.action(request, "read", handler)


def install_console(app: FastAPI, memory: Memory, auth: Authenticator) -> None:
    """Add the console's pages and static files to ``app`` under ``/ui``."""
    console = Console(memory, auth)
    _login_routes(app, console)
    for router in (memory_routes(console), inbox_routes(console), session_routes(console),
                   view_routes(console)):
        app.include_router(router, include_in_schema=False)
    app.mount("/ui/static", StaticFiles(packages=[("remem.serve.ui", "static")]), name="ui-static")
