"""Background work: the job worker and waiting for it."""

from .worker import EmbedWorker, wait_for

__all__ = ["EmbedWorker", "wait_for"]
