"""Untrusted text stays data: provenance, trust, and the hold for review.

Everything stored says who said it. A person's own words are trusted as that person's
wishes; an assistant's turn is the agent talking to itself; tool output (a web page, a
README, a log) is text from anywhere. None of it may instruct the agent against its user:
a statement the screening head reads as such (overriding rules, exfiltrating secrets,
running remote code, disabling checks, in any wording it learned, English and Chinese)
is held for review, status ``held``: out of search, of every context block and of every
model's system message, until a person approves or rejects it. Less trusted text is held
on weaker evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TRUST", "ScreenPolicy", "trust_of"]

#: How far a speaker is trusted: a person, the agent itself, or text from anywhere.
TRUST = {"user": "user", "assistant": "agent", "agent": "agent", "tool": "external",
         "system": "external", "import": "external"}


def trust_of(role: str | None) -> str:
    """The trust level of what a speaker says (a named person in a chat is a user)."""
    return TRUST.get((role or "user").lower(), "user")


@dataclass(frozen=True)
class ScreenPolicy:
    """When text is held: the screening head's probability at or above the threshold for
    its speaker's trust level."""

    thresholds: dict[str, float] = field(
        default_factory=lambda: {"user": 0.6, "agent": 0.5, "external": 0.4})

    def hold(self, threat_p: float, role: str | None) -> str | None:
        """Why text with this reading must be held for review, or None."""
        trust = trust_of(role)
        if threat_p >= self.thresholds.get(trust, 0.5):
            return (f"held for review: reads as an instruction to the agent (p={threat_p:.2f}, "
                    f"said by {trust})")
        return None
