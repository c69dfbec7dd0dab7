"""What a query adds to the context block: memories first, turns only where they earn it."""

from __future__ import annotations

from datetime import datetime, timezone

from remem.model import Hit, MemoryItem, Scope
from remem.retrieve.context import ContextOptions, build_context

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)
ASKED = Scope(user_id="bo", project="api")
OPTIONS = ContextOptions()


def item(id: str, text: str, kind: str = "project") -> MemoryItem:
    role = "user" if kind == "episode" else None
    return MemoryItem(id=id, kind=kind, text=text, role=role, user_id="bo", project="api",
                      observed_at=NOW, created_at=NOW, updated_at=NOW)


def hit(memory: MemoryItem, score: float) -> Hit:
    return Hit(memory=memory, score=score, channels={"vector": 1})


def recall(core: list[MemoryItem], hits: list[Hit]) -> list[str]:
    ctx = build_context(core=core, working=[], search=lambda _tokens: hits, asked=ASKED,
                        budget_tokens=800, options=OPTIONS)
    return [i.text for i in ctx.memories if i.id in ctx.sections["recall"]]


DEPLOY = item("m_deploy", "Deploys go through GitHub Actions to Render")
CHATTER = item("e_chat", "lunch was great, the new ramen place is good", "episode")
LS = item("e_ls", "Bash: ls\nREADME.md src tests", "episode")


def test_turns_below_the_memory_that_answers_stay_out() -> None:
    assert recall([DEPLOY], [hit(DEPLOY, 0.98), hit(CHATTER, 0.85), hit(LS, 0.8)]) == []


def test_a_turn_that_outranks_every_memory_shown_is_added() -> None:
    evidence = item("e_ev", "the Render service is called townhall-web", "episode")
    assert recall([DEPLOY], [hit(evidence, 0.99), hit(DEPLOY, 0.9), hit(CHATTER, 0.8)]) == [
        evidence.text]


def test_without_a_memory_that_answers_the_best_turns_fill_in() -> None:
    other = item("m_tabs", "The user prefers tabs")
    assert recall([other], [hit(CHATTER, 0.9), hit(LS, 0.75)]) == [CHATTER.text, LS.text]


def test_turns_of_one_word_are_never_shown() -> None:
    acks = [item("e_ok", "ok", "episode"), item("e_hao", "好的", "episode")]
    assert recall([], [hit(a, 0.95) for a in acks]) == []
