"""``remem bench scenarios`` on a small scenario file: it feeds, probes and reports."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from remem.bench.scenarios import contains, load
from remem.cli import app

SMALL = Path(__file__).parent / "data" / "scenarios_small.jsonl"


def test_terms_match_on_word_boundaries_and_alternatives() -> None:
    assert contains("we use pnpm", "pnpm") and not contains("we use pnpm", "npm")
    assert contains("数据库是 PG 16", "Postgres 16|PG 16")
    assert not contains("nothing here", "")


def test_the_command_probes_each_scenario_and_reports_by_category_and_language() -> None:
    result = CliRunner().invoke(app, ["bench", "scenarios", "--data", str(SMALL), "--json",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scenarios"] == len(load(SMALL)) == 3
    assert {"lang:en", "lang:zh", "category:update", "category:leak_user"} <= set(data["figures"])
    assert data["headline"]["leaks"] == 0
    assert data["figures"]["category:stack"]["start"] == 1.0
    assert data["headline"]["updates_superseded"] == 1.0


def test_the_command_writes_an_html_report_with_pass_rate_plots(tmp_path: Path) -> None:
    page = tmp_path / "scenarios.html"
    result = CliRunner().invoke(app, ["bench", "scenarios", "--data", str(SMALL), "--html",
                                      str(page), "--no-progress", "--json"])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(images) == 2
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "<figcaption>Pass rate per category" in text
    assert "<figcaption>Pass rate per language" in text
    assert "<td>category:update</td>" in text and "<td>updates_superseded</td>" in text
    assert not re.search(r'(src|href)="(https?:)?//', text)


def test_explain_counts_the_stage_that_lost_a_failed_update(tmp_path: Path) -> None:
    # the "old value" was only small talk, so no memory held it: lost at the first stage
    scenario = {"id": "x-update", "lang": "en", "category": "update", "user_id": "u1",
                "project": "web", "sessions": [
                    {"id": "s1", "time": "2026-03-02T10:00:00+00:00",
                     "turns": [{"role": "user", "content": "haha ok, yarn again"}]},
                    {"id": "s2", "time": "2026-03-09T10:00:00+00:00",
                     "turns": [{"role": "user", "content": "We use pnpm for this project."}]}],
                "probe": {"time": "2026-03-10T09:00:00+00:00", "query": None,
                          "expect": ["pnpm"], "absent": ["yarn"], "superseded": "yarn"}}
    data_file = tmp_path / "one.jsonl"
    data_file.write_text(json.dumps(scenario) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "scenarios", "--data", str(data_file), "--json",
                                      "--no-progress", "--explain"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["explain"] == {"a_old_not_memory": 1}
    assert [f["stage"] for f in data["failures"]] == ["a_old_not_memory"]


def test_the_memory_that_replaced_an_old_value_may_name_it_without_counting_as_stale(
        tmp_path: Path) -> None:
    scenario = {"id": "x-update", "lang": "en", "category": "update", "user_id": "u1",
                "project": "etl", "sessions": [
                    {"id": "s1", "time": "2026-03-02T10:00:00+00:00",
                     "turns": [{"role": "user", "content": "we lint with pylint plus two plugins"}]},
                    {"id": "s2", "time": "2026-03-09T10:00:00+00:00",
                     "turns": [{"role": "user",
                                "content": "Ruff does all our linting now, the pylint config is gone"}]}],
                "probe": {"time": "2026-03-10T09:00:00+00:00", "query": None,
                          "expect": ["Ruff"], "absent": ["pylint"], "superseded": "pylint"}}
    data_file = tmp_path / "one.jsonl"
    data_file.write_text(json.dumps(scenario) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "scenarios", "--data", str(data_file), "--json",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["failures"] == []
    assert data["headline"]["updates_superseded"] == 1.0


def test_a_bad_line_of_a_labelled_file_is_named(tmp_path: Path) -> None:
    from remem.bench import team
    from remem.errors import ValidationError

    data = tmp_path / "teams.jsonl"
    good = {"id": "t", "lang": "en", "requests": [{"text": "ship it", "skill": 0}],
            "lessons": [{"text": "a dev and a tester", "roles": ["dev", "tester"]}]}
    data.write_text(json.dumps(good) + "\n\n" + json.dumps(good | {"requests": [
        {"text": "ship it", "skill": 3}]}) + "\n")
    with pytest.raises(ValidationError, match=r"line 3: skill 3 is not a lesson's index"):
        team.load(data)
    data.write_text("[1, 2]\n")
    with pytest.raises(ValidationError, match="line 1: expected a JSON object"):
        load(data)
