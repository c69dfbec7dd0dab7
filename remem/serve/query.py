"""Query strings are checked like bodies: a parameter the route does not take, or one
that takes a single value given twice, is refused (422) instead of silently ignored, so
``?users_id=alice`` cannot list a whole org's memories."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from .errors import ApiError

__all__ = ["strict_query"]


def _repeatable(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "array":
        return True
    return any(_repeatable(part) for part in schema.get("anyOf", []) + schema.get("oneOf", []))


def _declared(request: Request) -> dict[str, bool] | None:
    """The query parameters of the request's route, by name: True if it takes several
    values. None if the route is not in the OpenAPI spec (nothing to check against)."""
    route = request.scope.get("route")
    path = getattr(route, "path_format", None)
    operation = request.app.openapi().get("paths", {}).get(path, {}).get(request.method.lower())
    if operation is None:
        return None
    return {p["name"]: _repeatable(p.get("schema", {}))
            for p in operation.get("parameters", []) if p.get("in") == "query"}


def strict_query(request: Request) -> None:
    """A FastAPI dependency: 422 ``invalid_request`` for an unknown or repeated query parameter."""
    declared = _declared(request)
    if declared is None:
        return
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in declared:
            takes = ", ".join(sorted(declared)) or "none"
            raise ApiError(422, "invalid_request", f"query.{name}: is not a parameter of "
                           f"{request.method} {getattr(request.scope.get('route'), 'path_format', '')}"
                           f" (it takes: {takes}); see /docs", field=f"query.{name}")
        if name in seen and not declared[name]:
            raise ApiError(422, "invalid_request", f"query.{name}: is given more than once; "
                           "it takes one value", field=f"query.{name}")
        seen.add(name)
