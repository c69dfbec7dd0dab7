"""Errors as JSON: ``{"error": {"code": ..., "message": ...}}`` with the right HTTP status."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import (
    ClosedError,
    ConfigError,
    CubeError,
    CubeVerifyError,
    EmbeddingError,
    ExtractionError,
    LLMError,
    NotFoundError,
    PermissionDeniedError,
    RememError,
    StoreError,
    ValidationError,
)

__all__ = ["ApiError", "error_response", "install_error_handlers"]

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error the service answers with: HTTP ``status``, a stable ``code``, a ``message``
    that says what was wrong and how to fix it."""

    def __init__(self, status: int, code: str, message: str, *,
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.extra = extra


def error_response(status: int, code: str, message: str, *,
                   headers: Mapping[str, str] | None = None, **extra: Any) -> JSONResponse:
    """The JSON response of an error."""
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status,
                        headers=dict(headers) if headers else None)


def _where(loc: Any) -> str:
    parts = [str(p) for p in loc]
    out = parts[0] if parts else ""
    for part in parts[1:]:
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _request_invalid(exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    first: dict[str, Any] = dict(errors[0]) if errors else {"loc": (), "msg": "invalid", "type": ""}
    if first.get("type") == "json_invalid":
        detail = (first.get("ctx") or {}).get("error", "")
        return error_response(
            400, "malformed_json",
            f"the request body is not valid JSON ({detail}); send one JSON object with "
            "`Content-Type: application/json`")
    if first.get("type") == "model_attributes_type" or (
            first.get("type") == "dict_type" and tuple(first.get("loc", ())) == ("body",)):
        return error_response(422, "invalid_request",
                              "the request body must be a JSON object; see /docs for its fields")
    where = _where(first.get("loc", ()))
    problem = ("is not a known field; see /docs for the fields of this route"
               if first.get("type") == "extra_forbidden" else str(first.get("msg", "")).lower())
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return error_response(422, "invalid_request", f"{where}: {problem}{more}", field=where)


_REMEM_ERRORS: list[tuple[type[Exception], int, str]] = [
    (ValidationError, 422, "invalid_field"),
    (ConfigError, 400, "invalid_argument"),
    (NotFoundError, 404, "not_found"),
    (PermissionDeniedError, 403, "permission_denied"),
    (CubeVerifyError, 422, "cube_unverified"),
    (CubeError, 422, "invalid_cube"),
    (ClosedError, 503, "closed"),
    (StoreError, 503, "store_unavailable"),
    (EmbeddingError, 500, "embedding_failed"),
    (LLMError, 502, "llm_failed"),
    (ExtractionError, 502, "extraction_failed"),
]


def _remem_error(exc: RememError) -> JSONResponse:
    for kind, status, code in _REMEM_ERRORS:
        if isinstance(exc, kind):
            extra: dict[str, Any] = {"field": exc.field} if isinstance(exc, ValidationError) else {}
            if status >= 500:
                log.error("%s: %s", code, exc)
            return error_response(status, code, str(exc), **extra)
    log.error("unexpected remem error: %s", exc)
    return error_response(500, "internal_error", str(exc))


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` (its own, remem's, FastAPI's, a crash) in the JSON shape."""

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, headers=exc.headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _request_invalid(exc)

    @app.exception_handler(pydantic.ValidationError)
    async def _pydantic(request: Request, exc: pydantic.ValidationError) -> JSONResponse:
        err = exc.errors()[0]
        where = _where(err["loc"])
        return error_response(422, "invalid_field", f"{where}: {err['msg'].lower()}", field=where)

    @app.exception_handler(RememError)
    async def _remem(request: Request, exc: RememError) -> JSONResponse:
        return _remem_error(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(404, "route_not_found",
                                  f"there is no route {request.method} {request.url.path}; "
                                  "see /docs for the routes")
        if exc.status_code == 405:
            return error_response(405, "method_not_allowed",
                                  f"{request.url.path} does not take {request.method}; "
                                  "see /docs for the methods it takes", headers=exc.headers)
        return error_response(exc.status_code, f"http_{exc.status_code}", str(exc.detail),
                              headers=exc.headers)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error",
                              "the server hit an unexpected error; its log has the details")
