"""Which remembered conventions a shell command goes against, before it runs.

A convention warns when three things hold: retrieval finds it for the command (it is
among the top hits of a search with the command as the query), its meaning is close
to the command's (cosine of the two embeddings at or above a floor), and it names the
command's program as something to avoid ("never npm", "do not use flake8", "不要用
npm"). The last is a cheap check on top of retrieval, never a signal alone: a
convention that names the program as the tool to use ("use pnpm") does not warn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..memory import Memory
from ..model import Hit, MemoryItem

__all__ = ["CONVENTION_KINDS", "SIMILARITY_FLOOR", "avoided", "against"]

#: The kinds of memory that state how things are done here.
CONVENTION_KINDS = ("convention", "preference")
#: Cosine between the command (as a query) and the memory (as a passage) below which a
#: convention is not about the command, whatever words it shares with it.
SIMILARITY_FLOOR = 0.80

# a negation or an avoid cue shortly before the program's name
_AVOID = re.compile(r"(?:\bnever|\bnot|n't|\bno\b|\bnor|\bavoid(?:ing)?|\binstead of|\brather than|"
                    r"\bstop(?:ped)? using|\bno longer|\bforbid\w*|\bban\w*|\bdeprecated|"
                    r"不要|别|不用|不能|禁止|避免|不再)[^.;!?。；！？]{0,14}$", re.I)


def avoided(text: str, prog: str) -> bool:
    """True if ``text`` names ``prog`` (as a whole word) as something not to use."""
    for match in re.finditer(rf"(?<![\w.-]){re.escape(prog)}(?![\w-])", text):
        if _AVOID.search(text[max(0, match.start() - 24): match.start()]):
            return True
    return False


def against(command: str, prog: str, hits: Sequence[Hit], memory: Memory,
            floor: float = SIMILARITY_FLOOR) -> list[MemoryItem]:
    """The retrieved conventions (``hits`` of a search for ``command`` in ``memory``) that
    ``command`` goes against, best hit first."""
    named = [hit.memory for hit in hits if hit.memory.kind in CONVENTION_KINDS
             and avoided(hit.memory.text, prog)]
    if not named:
        return []
    query = memory.embed([command], query=True)[0]
    passages = memory.embed([item.text for item in named])
    scores = np.asarray(passages, dtype=np.float32) @ np.asarray(query, dtype=np.float32)
    return [item for item, score in zip(named, scores, strict=True) if float(score) >= floor]
