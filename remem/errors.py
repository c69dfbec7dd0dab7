"""Exceptions raised by remem.

    RememError
    ├── ConfigError (also ValueError)       bad configuration or bad input at a door
    │   └── ValidationError                 a field of a call failed validation
    ├── NotFoundError (also LookupError)    no memory with that id in that scope
    ├── PermissionDeniedError (also PermissionError)  no grant allows this write
    ├── CubeError                           a memory cube that cannot be trusted or used
    │   └── CubeVerifyError                 its signature or a checksum does not match
    ├── StoreError                          the store file cannot be used
    │   ├── StoreNotFoundError              no store at that path (and creating one was not asked)
    │   ├── SchemaVersionError              written by a newer remem, or not a remem store
    │   └── EmbedderMismatchError           the store was built with another embedder
    ├── EmbeddingError                      the embedder failed
    ├── ClosedError (also RuntimeError)     the Memory was used after close()
    ├── LLMError                            the chat model endpoint failed or answered nonsense
    └── ExtractionError                     a model's extraction output stayed invalid
"""

from __future__ import annotations

__all__ = [
    "ClosedError",
    "ConfigError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "ExtractionError",
    "JobNotFoundError",
    "LLMError",
    "LeaseLostError",
    "CubeError",
    "CubeVerifyError",
    "NotFoundError",
    "PermissionDeniedError",
    "RememError",
    "SchemaVersionError",
    "StoreError",
    "StoreNotFoundError",
    "ValidationError",
]


class RememError(Exception):
    """Root of every error remem raises on purpose."""


class ConfigError(RememError, ValueError):
    """A setting or an argument is not usable; the message says which and why."""


class ValidationError(ConfigError):
    """A field of a call failed validation.

    ``field`` names the offending field (``"messages[2].content"``), ``problem`` says
    what was wrong with it.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class NotFoundError(RememError, LookupError):
    """No memory with this id exists in the given scope."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(
            f"no memory with id {memory_id!r} in this scope; "
            "check the id (e.g. with `remem list`) and the scope options"
        )


class PermissionDeniedError(RememError, PermissionError):
    """The caller holds no grant that allows this on that scope; the message says which."""


class CubeError(RememError):
    """A memory cube that cannot be read, installed or uninstalled; nothing was changed."""


class CubeVerifyError(CubeError):
    """A cube's signature or one of its checksums does not match what it holds."""


class JobNotFoundError(NotFoundError):
    """No background job with this id exists."""

    def __init__(self, job_id: str) -> None:
        self.memory_id = job_id
        LookupError.__init__(self, f"no job with id {job_id!r}; see `remem jobs` for the ids")


class StoreError(RememError):
    """The store file cannot be opened or written."""


class StoreNotFoundError(StoreError):
    """No store file exists at the path, and the caller asked not to create one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.hint = ("check the path given with --db (or $REMEM_HOME); `remem init` creates an "
                     "empty store, and commands that add (`remem add`, `remem remember`, "
                     "`remem import`) create it too")
        super().__init__(f"no remem store at {path}")


class SchemaVersionError(StoreError):
    """The file was written by a newer remem, or is not a remem store at all."""


class EmbedderMismatchError(StoreError):
    """The store's vectors were made by a different embedder than the one configured."""

    def __init__(self, stored: str, configured: str) -> None:
        self.stored = stored
        self.configured = configured
        super().__init__(
            f"this store was embedded with {stored!r} but {configured!r} is configured; "
            f"open it with the same embedder, or run `remem reembed` to rebuild its vectors "
            f"with {configured!r}"
        )


class LeaseLostError(StoreError):
    """A background job was taken over by another worker before this one finished it."""


class EmbeddingError(RememError):
    """The embedding model failed to load or to embed."""


class ClosedError(RememError, RuntimeError):
    """The Memory was used after close()."""

    def __init__(self) -> None:
        super().__init__("this Memory is closed; open a new one with Memory(path)")


class LLMError(RememError):
    """The chat model endpoint timed out, was unreachable, refused the call or answered
    something that is not a chat completion.

    ``status`` is the HTTP status when the endpoint answered with one, else None.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_llm_error, (str(self), self.status))


class ExtractionError(RememError):
    """A model's extraction output was still invalid after every allowed attempt.

    ``step`` names the step that failed (``"classify"``, ``"extract pitfall"``,
    ``"verify"``); the message says what was wrong with the last answer.
    """

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        self.problem = message
        super().__init__(f"{step}: {message}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.step, self.problem))


def _rebuild_llm_error(message: str, status: int | None) -> LLMError:
    return LLMError(message, status=status)
