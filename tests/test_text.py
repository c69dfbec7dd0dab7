"""Text helpers: CJK segmentation for full text, token estimates, passage splitting."""

from __future__ import annotations

import pytest

from remem.text import estimate_tokens, has_cjk, segment, split_passages, stem, stems, words


def test_segment_turns_chinese_runs_into_overlapping_bigrams() -> None:
    assert segment("以后都用中文回答").split() == ["以后", "后都", "都用", "用中", "中文", "文回",
                                                   "回答"]


def test_segment_leaves_text_without_cjk_alone() -> None:
    text = "We deploy with `make ship`, don't we?"
    assert segment(text) == text


def test_segment_keeps_latin_words_inside_chinese_text() -> None:
    tokens = segment("我们用pnpm安装依赖").split()
    assert "pnpm" in tokens
    assert {"我们", "安装", "依赖"} <= set(tokens)


def test_segment_keeps_a_single_character_run() -> None:
    assert segment("用 pnpm").split() == ["用", "pnpm"]


def test_segment_handles_japanese_and_korean() -> None:
    assert "東京" in segment("東京に行きました").split()
    assert "한국" in segment("한국어 공부").split()


def test_has_cjk() -> None:
    assert has_cjk("hello 世界")
    assert has_cjk("カタカナ")
    assert not has_cjk("hello wörld, ça va? Привет")


def test_words_lowercases_and_gives_cjk_bigrams() -> None:
    assert words("Deploying to PROD 中文回答") == ["deploying", "to", "prod",
                                                   "中文", "文回", "回答"]
    assert words("snake_case and e-mail") == ["snake", "case", "and", "e", "mail"]


def test_estimate_tokens_counts_cjk_characters_one_each() -> None:
    assert estimate_tokens("以后都用中文回答") == 8


def test_estimate_tokens_counts_english_words_about_four_thirds() -> None:
    text = " ".join(["word"] * 300)
    assert 300 < estimate_tokens(text) <= 420
    assert estimate_tokens("hello") >= 1


def test_estimate_tokens_is_never_zero() -> None:
    assert estimate_tokens("") == 1
    assert estimate_tokens("!!!") == 1


def test_estimate_tokens_grows_with_text() -> None:
    short = estimate_tokens("we deploy on fridays")
    assert estimate_tokens("we deploy on fridays and mondays after lunch") > short


def test_a_short_text_is_one_passage() -> None:
    text = "We deploy with make ship."
    assert split_passages(text, 200) == [text]


def prose(n: int) -> str:
    return " ".join(f"This is sentence number {i} about the deploy pipeline." for i in range(n))


@pytest.mark.parametrize("max_tokens", [16, 50, 200])
def test_a_long_text_is_split_into_passages_within_the_size(max_tokens: int) -> None:
    text = prose(120)
    passages = split_passages(text, max_tokens)
    assert len(passages) > 1
    assert all(estimate_tokens(p) <= max_tokens for p in passages)
    # nothing is lost or reordered
    assert " ".join(passages).split() == text.split()


def test_passages_break_at_sentence_ends() -> None:
    passages = split_passages(prose(60), 50)
    assert all(p.endswith(".") for p in passages)


def test_one_sentence_longer_than_a_passage_is_split_on_words() -> None:
    text = " ".join(f"w{i}" for i in range(500))
    passages = split_passages(text, 40)
    assert len(passages) > 5
    assert " ".join(passages).split() == text.split()
    assert all(estimate_tokens(p) <= 40 for p in passages)


def test_long_chinese_is_split_and_keeps_every_character() -> None:
    text = "我们团队每周五下午部署生产环境。" * 40
    passages = split_passages(text, 50)
    assert len(passages) > 1
    assert all(estimate_tokens(p) <= 50 for p in passages)
    assert "".join(passages).replace(" ", "") == text


def test_long_chinese_without_punctuation_is_split_too() -> None:
    text = "部署生产环境" * 100
    passages = split_passages(text, 64)
    assert len(passages) >= 10
    assert "".join(p.replace(" ", "") for p in passages) == text


def test_word_stems_meet_across_forms_but_not_across_words() -> None:
    assert stems(["logging", "logs", "logged"]) == {"log"}
    assert stem("configure") == stem("configuration")
    assert stem("shortcuts") != stem("short")
    assert stems(["python3", "依赖", "node.js"]) == {"python3", "依赖", "node.js"}
