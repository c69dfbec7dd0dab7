"""Governance: what stored text may do, and who said it.

- :mod:`.screen`: provenance and trust of what is stored, and the policy that holds text
  trying to instruct the agent against its user for review instead of showing it.
"""

from .screen import TRUST, ScreenPolicy, trust_of

__all__ = ["TRUST", "ScreenPolicy", "trust_of"]
