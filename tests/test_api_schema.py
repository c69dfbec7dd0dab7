"""The REST service against its own OpenAPI spec, property-based (schemathesis), over
real HTTP on a real SQLite file: for every operation, valid and invalid requests, with a
key and without one. No answer is a server error; every status, header and body is one
the spec documents; every 4xx is in the error shape; the spec lists exactly the routes.

The runs are bounded (a fixed number of examples per operation and mode) and
derandomized, so every run sends the same requests."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import fastapi.routing
import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from server_support import StandInOpenAI, service

from remem import Memory
from remem.config import ServerConfig
from remem.serve import create_app
from remem.serve.keys import KeyStore
from remem.serve.schemas import ErrorBody

WITH_KEY = 20  # examples per operation and mode (valid, invalid) with a key
WITHOUT_KEY = 4  # ... and without one
BOUNDED = settings(derandomize=True, database=None, deadline=None, print_blob=False,
                   suppress_health_check=list(HealthCheck))
STREAM = "/v1/events/stream"


@dataclass
class Served:
    memory: Memory
    client: httpx.Client
    url: str
    key: str  # read, write, admin


@dataclass
class Run:
    operations: int = 0
    requests: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    no_invalid: list[str] = field(default_factory=list)  # operations no request can be invalid for
    failures: list[str] = field(default_factory=list)


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with StandInOpenAI() as model, service(tmp_path_factory.mktemp("schema") / "remem.db",
                                           upstream_base_url=model.base_url) as (memory, client):
        key = KeyStore(memory.store).create("acme", scopes="read,write,admin").key
        for path, body in [  # something in the store for the read routes to answer with
            ("/v1/memories", {"user_id": "alice", "messages": ["we deploy with make ship",
                                                             "I prefer pnpm"]}),
            ("/v1/remember", {"user_id": "alice", "text": "the CI runs on two cores",
                              "kind": "project"}),
            ("/v1/do", {"user_id": "alice", "text": "remind me tomorrow to rotate the keys"}),
            ("/v1/shares", {"user_id": "alice", "grantee": "bob"}),
        ]:
            seeded = client.post(path, headers=_bearer(key), json=body)
            assert seeded.status_code in (200, 201), seeded.text
        yield Served(memory, client, str(client.base_url).rstrip("/"), key)


def _schema(served: Served) -> Any:
    return schemathesis.openapi.from_url(f"{served.url}/openapi.json", config=schemathesis.Config.from_dict({
        "generation": {"deterministic": True},
        "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        # Content rules (non-blank text, id and scope formats, ISO times) are checked by
        # Memory, past what JSON Schema says; such requests get 422 in the error shape,
        # which the checks below hold them to.
        # A query string cannot tell a one-item array from its item, nor null from the
        # text "null": an "invalid" query that serialises to a valid one is no refusal
        # owed. Unknown parameters and bad bodies are refused (tests/test_server_rest.py).
        "checks": {"positive_data_acceptance": {"enabled": False},
                   "negative_data_rejection": {"enabled": False}},
        "request-timeout": 30,
        # The event stream stays open: read what comes in the first second, then hang up.
        "operations": [{"include-path": STREAM, "request-timeout": 1}],
    }))


@schemathesis.check
def errors_in_the_documented_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx and 5xx is JSON ``{"error": {"code", "message"[, "field"]}}``; a 401
    also says how to authenticate."""
    if response.status_code < 400:
        return None
    kind = (response.headers.get("content-type") or [""])[0]
    assert kind.startswith("application/json"), f"a {response.status_code} answered as {kind!r}"
    body = ErrorBody.model_validate(response.json())
    assert body.error.code and body.error.message, f"an empty error: {response.json()!r}"
    if response.status_code == 401:
        assert response.headers.get("www-authenticate") == ["Bearer"], "a 401 without its challenge"
    return True


def exercise(served: Served, *, key: str | None, examples: int,
             check: Callable[[Any, Any], None] | None = None) -> Run:
    """Send every operation of the spec ``examples`` valid and ``examples`` invalid
    requests and check each answer; every operation runs, and each failure names its own."""
    headers = _bearer(key) if key else None
    run = Run()
    api = _schema(served)
    for result in api.get_all_operations():
        operation = result.ok()
        run.operations += 1
        # the spec's own examples once each, then generated valid and invalid requests
        passes = [(strategy, 1, "example") for strategy in api.get_strategies_from_examples(operation)]
        # (each answer of the event stream is read for a second: it takes only org and user)
        count = min(examples, 4) if operation.path == STREAM else examples
        passes += [(operation.as_strategy(generation_mode=mode), count, mode.value)
                   for mode in (schemathesis.GenerationMode.POSITIVE,
                                schemathesis.GenerationMode.NEGATIVE)]
        for strategy, count, kind in passes:

            @given(case=strategy)
            @settings(BOUNDED, max_examples=count)
            def send(case: Any) -> None:
                response = case.call(base_url=served.url, headers=headers)
                run.requests += 1
                run.statuses[response.status_code] = run.statuses.get(response.status_code, 0) + 1
                case.validate_response(response, headers=headers,
                                       additional_checks=[errors_in_the_documented_shape])
                if check is not None:
                    check(case, response)

            try:
                send()
            except Unsatisfiable:
                run.no_invalid.append(operation.label)
            except (Exception, schemathesis.errors.FailureGroup) as exc:
                run.failures.append(f"{operation.label} ({kind}): {exc}")
    return run


def _report(run: Run) -> str:
    return (f"{run.operations} operations, {run.requests} requests, statuses "
            f"{dict(sorted(run.statuses.items()))}; nothing invalid to send: {run.no_invalid}")


def test_every_operation_with_a_key_answers_as_documented(served: Served,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    run = exercise(served, key=served.key, examples=WITH_KEY)
    print(_report(run))
    assert not run.failures, "\n\n".join(run.failures)
    # nor did the server log an error meanwhile (a request the audit log could not record...)
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged == []
    assert run.operations >= 30 and not any(s >= 500 for s in run.statuses)
    assert run.statuses.get(200, 0) + run.statuses.get(201, 0) > run.operations  # not all refused
    assert run.no_invalid == ["GET /v1/health"]  # every other operation takes some input


def _refused(case: Any, response: Any) -> None:
    """Without a key only /v1/health answers; a valid request to any other route gets 401
    (an invalid one may be refused for its shape first: 400, 422)."""
    if case.path == "/v1/health":
        return
    allowed = {401} if case.meta.generation.mode.is_positive else {400, 401, 422}
    assert response.status_code in allowed, (case.path, response.status_code, response.text)


def test_every_operation_without_a_key_is_refused_in_the_error_shape(served: Served) -> None:
    run = exercise(served, key=None, examples=WITHOUT_KEY, check=_refused)
    print(_report(run))
    assert not run.failures, "\n\n".join(run.failures)
    assert run.statuses.get(401, 0) >= run.operations - 1


def _app_routes(app: fastapi.FastAPI) -> set[tuple[str, str]]:
    routes = getattr(fastapi.routing, "iter_route_contexts", list)(app.routes)
    return {(method.lower(), route.path) for route in routes if getattr(route, "path", "").startswith("/v1")
            for method in (getattr(route, "methods", None) or ()) if method != "HEAD"}


def test_the_spec_lists_exactly_the_routes(served: Served) -> None:
    app = create_app(served.memory, config=ServerConfig())
    spec = served.client.get("/openapi.json").json()
    documented = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert documented == _app_routes(app)
    # and each documented route answers (401, not 404 or 405) at the address the spec gives
    for method, path in sorted(documented - {("get", "/v1/health")}):
        answer = served.client.request(method.upper(), path.replace("{", "x").replace("}", ""))
        assert answer.status_code == 401, (method, path, answer.status_code)
        errors = {int(s) for s, r in spec["paths"][path][method]["responses"].items()
                  if int(s) >= 400}
        assert {400, 401, 403, 413, 422, 503} <= errors, (method, path, sorted(errors))
