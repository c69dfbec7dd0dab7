"""Rendering console pages: the Jinja2 templates shipped in the package, the interface
language, and the cookies a page sets (CSRF token, language)."""

from __future__ import annotations

import difflib
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ...model import MemoryItem
from .guard import CSRF_COOKIE, csrf_token
from .i18n import LANGUAGES, pick_language, translator

__all__ = ["LANG_COOKIE", "Renderer", "memory_url", "redirect", "word_diff"]

LANG_COOKIE = "remem_lang"


def when(value: datetime | None) -> str:
    """A time in UTC to the second, or an empty string."""
    return "" if value is None else value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def memory_url(item: MemoryItem | str, org_id: str | None = None) -> str:
    """The console page of a memory (its org named when not the default one)."""
    memory_id, org = (item, org_id) if isinstance(item, str) else (item.id, item.org_id)
    return f"/ui/memories/{memory_id}" + (f"?org={org}" if org and org != "default" else "")


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """The change from ``old`` to ``new`` word by word: ``(op, text)`` with op one of
    ``same``, ``del``, ``ins``."""
    a, b = old.split(), new.split()
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("same", " ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("del", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("ins", " ".join(b[j1:j2])))
    return out


def redirect(url: str, **params: str | None) -> RedirectResponse:
    """A 303 to ``url`` (after a form), with the given query parameters."""
    given = {k: v for k, v in params.items() if v}
    sep = "&" if "?" in url else "?"
    return RedirectResponse(url + (sep + urlencode(given) if given else ""), status_code=303)


class Renderer:
    """Renders a template with the page's language, CSRF token and helpers."""

    def __init__(self) -> None:
        self.env = Environment(loader=PackageLoader("remem.serve.ui", "templates"),
                               autoescape=select_autoescape(default=True),
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters["when"] = when
        self.env.globals["memory_url"] = memory_url

    def __call__(self, request: Request, template: str, *, code: int = 200,
                 **values: Any) -> HTMLResponse:
        asked = request.query_params.get("lang")
        lang = pick_language(asked, request.cookies.get(LANG_COOKIE),
                             request.headers.get("accept-language"))
        token, new = csrf_token(request)
        other = LANGUAGES[1 - LANGUAGES.index(lang)]
        switch = request.url.path + "?" + urlencode({**request.query_params, "lang": other})
        html = self.env.get_template(template).render(
            t=translator(lang), lang=lang, csrf=token, path=request.url.path,
            switch_url=switch,
            note=request.query_params.get("note"), **values)
        response = HTMLResponse(html, status_code=code)
        if new:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/ui")
        if asked in LANGUAGES:
            response.set_cookie(LANG_COOKIE, asked, samesite="lax", path="/ui", max_age=365 * 86400)
        return response
