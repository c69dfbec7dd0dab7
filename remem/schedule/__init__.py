"""Background work: durable jobs, the worker that runs them, and waiting for them."""

from .jobs import decay_handler, extract_handler
from .prefetch import prefetch, prefetch_handler
from .worker import Handler, Worker, wait_for

__all__ = ["Handler", "Worker", "decay_handler", "extract_handler", "prefetch", "prefetch_handler",
           "wait_for"]
