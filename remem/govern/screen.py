"""Untrusted text stays data: provenance, trust, and the hold for review.

Everything stored says who said it. A person's own words are trusted as that person's
wishes; an assistant's turn is the agent talking to itself; tool output (a web page, a
README, a log) is text from anywhere. None of it may instruct the agent against its user:
a statement the screening head reads as such (overriding rules, exfiltrating secrets,
running remote code, disabling checks, in any wording it learned, English and Chinese)
is held for review, status ``held``: out of search, of every context block and of every
model's system message, until a person approves or rejects it.

The threshold for each trust level comes with the trained reader: the lowest that holds
at most 2% of the held-out look-alikes (legitimate text that resembles an attack) for the
user's words, 10% for the agent's and 20% for text from anywhere, which may cost more
false alarms. With the tuned reader, the linear head gives a second opinion: what it is
sure of (0.95) is held too, as it learned the blatant wording of overrides from other
lines. Alone, the linear head's thresholds are never taken under a minimum (0.9, and 0.8
for text from anywhere): it reads the rules a user dictates for their agents as
instructions too, only less surely.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TRUST", "ScreenPolicy", "trust_of"]

#: How far a speaker is trusted: a person, the agent itself, or text from anywhere.
TRUST = {"user": "user", "assistant": "agent", "agent": "agent", "tool": "external",
         "system": "external", "import": "external", "cube": "external"}


def trust_of(role: str | None) -> str:
    """The trust level of what a speaker says (a named person in a chat is a user)."""
    return TRUST.get((role or "user").lower(), "user")


@dataclass(frozen=True)
class ScreenPolicy:
    """When text is held: the screening head's probability at or above the threshold for
    its speaker's trust level."""

    thresholds: dict[str, float] = field(
        default_factory=lambda: {"user": 0.9, "agent": 0.9, "external": 0.8})
    #: never hold on less than this: a rule a user dictates for their agents (a workflow,
    #: a release rule) reads as an instruction too, only less surely than an attack does
    minimum: dict[str, float] = field(
        default_factory=lambda: {"user": 0.9, "agent": 0.9, "external": 0.8})

    #: with the tuned reader: the linear head's probability at which text is held all the
    #: same (None: never), a second opinion on the blatant wording it learned
    second_opinion: float | None = None

    def hold(self, threat_p: float, role: str | None, *, second_p: float = 0.0) -> str | None:
        """Why text with this reading must be held for review, or None. ``second_p``: the
        linear head's probability, when ``threat_p`` is the tuned reader's."""
        trust = trust_of(role)
        if self.second_opinion is not None and second_p >= self.second_opinion:
            threat_p = max(threat_p, second_p)
        elif threat_p < max(self.thresholds.get(trust, 0.9), self.minimum.get(trust, 0.0)):
            return None
        return (f"held for review: reads as an instruction to the agent (p={threat_p:.2f}, "
                f"said by {trust})")
