"""Governance: what stored text may do, who said it, and how long it is kept.

- :mod:`.screen`: trust of what is stored, and the policy that holds text trying to
  instruct the agent against its user for review instead of showing it;
- :mod:`.provenance`: the door, source and trust every memory records;
- :mod:`.retention`: the retention policy per kind and scope (compact, archive, purge).
"""

from .provenance import check_door, provenance
from .screen import TRUST, ScreenPolicy, trust_of

__all__ = ["TRUST", "ScreenPolicy", "check_door", "provenance", "trust_of"]
