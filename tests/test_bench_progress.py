"""Long benchmark work shows progress off a terminal (plain lines on stderr, paced by an
injected clock) and leaves its figures so far when it is stopped."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_bench_metrics import locomo_sample
from typer.testing import CliRunner

from remem.bench import locomo
from remem.bench.progress import Reporter
from remem.cli import app


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_progress_is_a_line_every_n_items() -> None:
    out, clock = io.StringIO(), Clock()
    with Reporter("ingest", 30, stream=out, clock=clock, every=10, terminal=False) as shown:
        for _ in range(25):
            clock.now += 0.25
            shown.advance()
    # and the count where it stopped, once at the end
    assert out.getvalue().splitlines() == [
        "ingest: 10/30 (33%), 2 s", "ingest: 20/30 (66%), 5 s", "ingest: 25/30 (83%), 6 s"]


def test_off_a_terminal_slow_items_get_a_line_every_interval() -> None:
    out, clock = io.StringIO(), Clock()
    with Reporter("LoCoMo", 10, stream=out, clock=clock, every=5, interval_s=10,
                  terminal=False) as shown:
        clock.now += 4
        shown.advance(note="conv-1")   # 4 s, 1 item: nothing yet
        clock.now += 7
        shown.advance(note="conv-2")   # 11 s since the start: a line
        clock.now += 30
        shown.advance(note="conv-3")   # a slow one: a line at once
    assert out.getvalue().splitlines() == [
        "LoCoMo: 2/10 (20%), 11 s - conv-2", "LoCoMo: 3/10 (30%), 41 s - conv-3"]


@pytest.fixture
def three_conversations(tmp_path: Path) -> Path:
    convs = []
    for n in range(3):
        (conv,) = locomo_sample()
        convs.append({**conv, "sample_id": f"conv-{n}"})
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(convs))
    return path


class Interrupted(Reporter):
    """Progress that presses Ctrl-C after ``stop_after`` conversations, as a user would."""

    stop_after = 2

    def advance(self, n: int = 1, *, note: str = "") -> None:
        super().advance(n, note=note)
        if self.done >= self.stop_after:
            raise KeyboardInterrupt


def test_a_stopped_locomo_run_leaves_the_figures_of_what_it_finished(
        three_conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "partial.json"

    def reporter(label: str, total: int) -> Reporter:
        return Interrupted(label, total, terminal=False, every=1)

    with pytest.raises(KeyboardInterrupt):
        locomo.run(three_conversations, system="bm25", out=out, reporter=reporter)
    saved = json.loads(out.read_text())
    assert saved["partial"] is True and saved["conversations"] == 2
    assert saved["of_conversations"] == 3
    one = locomo.run(three_conversations, system="bm25", limit=1, progress=False)
    assert saved["questions"] == 2 * one["questions"]
    assert saved["recall@10"] == one["recall@10"]  # the same conversation twice over
    assert [line.split(",")[0] for line in capsys.readouterr().err.splitlines()] == [
        "LoCoMo: 1/3 (33%)", "LoCoMo: 2/3 (66%)"]


def test_a_finished_run_rewrites_the_file_whole(three_conversations: Path, tmp_path: Path) -> None:
    out = tmp_path / "done.json"
    result = locomo.run(three_conversations, system="bm25", out=out, progress=False)
    saved = json.loads(out.read_text())
    assert saved["partial"] is False and saved["conversations"] == 3
    assert saved["recall@10"] == result["recall@10"]


def test_bench_locomo_off_a_terminal_prints_a_line_per_conversation(
        three_conversations: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(three_conversations),
                                      "--system", "bm25", "--out", str(out), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("LoCoMo: ")]
    assert [line.split(",")[0] for line in lines] == [
        "LoCoMo: 1/3 (33%)", "LoCoMo: 2/3 (66%)", "LoCoMo: 3/3 (100%)"]
    assert json.loads(out.read_text())["partial"] is False
    assert json.loads(result.stdout)["conversations"] == 3



def test_a_stopped_comparison_leaves_the_systems_it_finished(three_conversations: Path,
                                                             tmp_path: Path) -> None:
    from remem.bench.runner import run

    class StopInSecond(Reporter):
        def advance(self, n: int = 1, *, note: str = "") -> None:
            super().advance(n, note=note)
            if self.label == "full-context":
                raise KeyboardInterrupt

    def reporter(label: str, total: int) -> Reporter:
        return StopInSecond(label, total, terminal=False)

    out = tmp_path / "results.json"
    with pytest.raises(KeyboardInterrupt):
        run("locomo", three_conversations, ["bm25", "full-context"], out=out, reporter=reporter,
            plots=False)
    saved = json.loads(out.read_text())
    assert saved["partial"] is True and list(saved["systems"]) == ["bm25"]
    assert saved["dataset"]["conversations"] == 3 and "recall@10" in saved["systems"]["bm25"]


def test_on_a_terminal_it_is_a_bar_and_no_lines() -> None:
    out = io.StringIO()
    shown = Reporter("ingest", 3, stream=out, terminal=True)
    for _ in range(3):
        shown.advance()
    shown.close()
    assert "ingest: " not in out.getvalue()  # no plain lines: the bar drew (and cleared) itself
    assert shown.done == 3
