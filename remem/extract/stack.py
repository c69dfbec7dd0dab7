"""Names of languages, runtimes, databases and tools, as entities of a memory."""

from __future__ import annotations

__all__ = ["STACK"]

#: Names of languages, runtimes, databases and tools: "we use X" with one of these is a
#: fact about the project's stack rather than a team convention.
STACK = frozenset("""
python postgres postgresql mysql mariadb sqlite redis mongodb django flask fastapi rails react
vue angular svelte next.js nuxt node node.js deno bun typescript javascript go golang rust java
kotlin swift ruby php docker kubernetes k8s helm terraform aws gcp azure celery kafka rabbitmq
nginx graphql grpc pnpm yarn npm poetry uv pip conda vite webpack tailwind elasticsearch
clickhouse spring dotnet .net c# scala elixir haskell
""".split())
