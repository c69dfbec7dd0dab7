"""Background work: durable jobs, the worker that runs them, and waiting for them."""

from .jobs import decay_handler, extract_handler, retention_handler
from .prefetch import prefetch, prefetch_handler
from .triggers import DEFAULT_TRIGGERS, Trigger, TriggerEvent, Triggers
from .worker import Handler, Worker, wait_for

__all__ = ["DEFAULT_TRIGGERS", "Handler", "Trigger", "TriggerEvent", "Triggers", "Worker",
           "decay_handler", "extract_handler", "prefetch", "prefetch_handler",
           "retention_handler", "wait_for"]
