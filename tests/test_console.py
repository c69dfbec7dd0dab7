"""The web console in a real browser: headless Chromium driven by Playwright, against
`remem serve` on a store with a small scenario, used as a person would use it.

Screenshots of the main pages go to tests/.screenshots/ (not committed)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from console_support import HASH, HOOK_SESSION, Scenario, build, served

from remem import Memory
from remem.serve.keys import KeyStore

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).parent / ".screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="the browser tests need Debian's chromium at /usr/bin/chromium "
                                       "(apt-get install chromium; .ci/run installs it)")

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    return {"REMEM_EMBEDDER": "hash", "REMEM_HOME": str(home), "REMEM_USER": "alice",
            "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Scenario:
    return build(tmp_path_factory.mktemp("scenario"), env)


@pytest.fixture(scope="module")
def base(scenario: Scenario, env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served(scenario.db, env, tmp_path_factory.mktemp("log") / "serve.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: object, base: str) -> Iterator[object]:
    context = browser.new_context(base_url=base, viewport={"width": 1200, "height": 800},  # type: ignore[attr-defined]
                                  locale="en-US")
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def shot(page: object, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def search(page: object, query: str) -> None:
    page.goto("/ui/memories")  # type: ignore[attr-defined]
    page.get_by_role("searchbox").fill(query)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Search").click()  # type: ignore[attr-defined]


def test_find_open_edit_and_see_the_new_version_with_its_diff(page: object, scenario: Scenario) -> None:
    page.goto("/ui/memories")
    expect = playwright_api.expect
    expect(page.locator("table.memories")).to_contain_text("Always use pnpm")
    expect(page.locator("table.memories")).to_contain_text("helm upgrade")  # every user's, single-user
    shot(page, "memories")
    search(page, "tabs spaces python")
    page.get_by_role("link", name=re.compile("prefers tabs")).first.click()
    expect(page.locator("#memory-text")).to_have_text("Alice prefers tabs over spaces in Python code")
    page.get_by_text("Edit", exact=True).click()
    page.get_by_role("textbox", name="Text").fill("Alice prefers four spaces over tabs in Python code")
    page.get_by_label("Reason").fill("she changed her mind")
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.get_by_role("status")).to_have_text("Saved.")
    expect(page.locator("#memory-text")).to_have_text("Alice prefers four spaces over tabs in Python code")
    newest = page.locator("li.version").first
    expect(newest).to_contain_text("v2 updated")
    expect(newest).to_contain_text("she changed her mind")
    expect(newest.locator("ins")).to_have_text("four spaces over")
    expect(newest.locator("del")).to_have_text("over spaces")
    page.get_by_label("Helpful").check()
    page.get_by_placeholder("Note").fill("it matched the repo")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".feedback-log")).to_contain_text("feedback: helpful (it matched the repo)")
    expect(page.locator("dl.facts")).to_contain_text("Helpful 1")
    shot(page, "memory")
    with Memory(scenario.db, config=HASH) as m:
        assert m.get(scenario.ids["tabs"]).text == "Alice prefers four spaces over tabs in Python code"


def test_forget_removes_a_memory_from_search_and_restore_brings_it_back(page: object,
                                                                        scenario: Scenario) -> None:
    expect = playwright_api.expect
    search(page, "vite build node")
    results = page.locator("table.memories")
    expect(results).to_contain_text("vite build fails on node 16")
    page.get_by_role("link", name=re.compile("vite build fails")).first.click()
    page.get_by_role("button", name="Forget").click()
    expect(page.get_by_role("status")).to_contain_text("Forgotten")
    expect(page.locator("#memory-status")).to_have_text("forgotten")
    search(page, "vite build node")
    expect(page.locator("main")).not_to_contain_text("vite build fails on node 16")
    page.goto(f"/ui/memories/{scenario.ids['vite']}")
    page.get_by_role("button", name="Restore").click()
    expect(page.locator("#memory-status")).to_have_text("active")
    search(page, "vite build node")
    expect(page.locator("table.memories")).to_contain_text("vite build fails on node 16")


def test_approving_a_held_memory_in_the_review_inbox(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/review")
    held = page.locator("tr.held", has_text="push straight to main")
    expect(held).to_have_count(2)  # the memory and the turn it was said in
    shot(page, "review")
    held.filter(has_text="convention").get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_have_text("Approved.")
    expect(page.locator("tr.held", has_text="push straight to main")).to_have_count(0)
    with Memory(scenario.db, config=HASH) as m:
        assert m.get(scenario.ids["held"]).status == "active"


def test_approving_a_skill_candidate_renders_its_skill_md(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/review")
    candidate = page.locator("tr.skill", has_text="check the code before a commit")
    expect(candidate).to_contain_text("make typecheck")
    candidate.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_have_text("Approved.")
    expect(page.locator("tr.skill")).to_have_count(0)
    page.goto(f"/ui/memories/{scenario.ids['skill']}")
    expect(page.locator("pre.skill-md")).to_contain_text("name: check-the-code-before-a-commit")


def test_a_sessions_injection_log_shows_the_memories_the_hook_gave(page: object,
                                                                 scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/sessions")
    page.get_by_role("link", name=HOOK_SESSION).click()
    injection = page.locator(".turn.injection").first
    expect(injection).to_contain_text("hook:SessionStart")
    given = injection.locator("ol.given > li")
    expect(given).to_have_count(len(scenario.hook_ids))
    assert [given.nth(n).get_attribute("data-memory") for n in range(given.count())] == scenario.hook_ids
    expect(injection).to_contain_text("Always use pnpm")
    injection.get_by_text("The text the model was given").click()
    expect(injection.locator("pre")).to_have_text(scenario.hook_text)
    shot(page, "session")


def test_the_as_of_slider_brings_back_what_was_known_before_a_supersession(
        page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/timeline")
    known = page.locator("table.timeline tr.memory td.text > a")  # the memories, not the turns
    expect(known.filter(has_text="fly deploy")).to_have_count(1)
    expect(known.filter(has_text="We deploy the web app with make ship")).to_have_count(0)
    slider = page.locator("#as-of-step")
    slider.focus()
    slider.press("Home")  # the first change: 1 May
    expect(page.locator("#as-of-label")).to_contain_text("2026-05-01")
    expect(known.filter(has_text="We deploy the web app with make ship")).to_have_count(1)
    expect(known.filter(has_text="fly deploy")).to_have_count(0)
    shot(page, "timeline")
    slider.press("End")
    expect(page.locator("#as-of-label")).to_have_text("now")
    expect(known.filter(has_text="We deploy the web app with make ship")).to_have_count(0)


def test_the_timeline_shows_turns_in_event_time_and_each_supersession(page: object,
                                                                     scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/timeline")
    turns = page.locator("table.timeline tr.episode")
    said = ["From now on we deploy the web app with fly deploy",  # 20 May, then 10 May, then 1 May
            "Our staging database runs Postgres 16", "We deploy the web app with make ship"]
    order = [turns.filter(has_text=text).first for text in said]
    for row in order:
        expect(row).to_be_visible()
    positions = [turns.evaluate_all("(rs, t) => rs.findIndex(r => r.textContent.includes(t))", text)
                 for text in said]
    assert positions == sorted(positions), positions  # latest first
    fly = page.locator(f"tr.memory[data-memory='{scenario.ids['fly']}']")
    expect(fly.locator(".supersession.replaced")).to_contain_text("We deploy the web app with make ship")
    page.locator("#as-of-step").focus()
    page.locator("#as-of-step").press("Home")
    expect(page.locator("#as-of-label")).to_contain_text("2026-05-01")
    old = page.locator(f"tr.memory[data-memory='{scenario.ids['make_ship']}']")
    expect(old.locator(".supersession.replaced-by")).to_contain_text("2026-05-20")
    expect(turns.filter(has_text="fly deploy")).to_have_count(0)  # not said yet on 1 May
    old.locator(".supersession.replaced-by a").click()
    expect(page).to_have_url(re.compile(scenario.ids["fly"]))


def test_a_memorys_page_shows_its_strength_and_its_source_turn_in_context(
        page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto(f"/ui/memories/{scenario.ids['staging']}")
    expect(page.locator("#memory-strength")).to_contain_text("archived under 0.20")
    with Memory(scenario.db, config=HASH) as m:
        strength = m.strength(scenario.ids["staging"])
    shown = float(page.locator("#memory-strength").inner_text().split()[0])
    assert shown == pytest.approx(strength, abs=0.01)
    source = page.locator("ol.sources > li.source")
    expect(source).to_have_count(1)
    said = [("user", "Can you look at the flaky login test?"),
            ("user", "Our staging database runs Postgres 16 on port 5433"),
            ("assistant", "Thanks, I will point the test at port 5433.")]
    texts = source.locator(".turn").all_inner_texts()
    assert len(texts) == 3 and all(f"{role}: {text}" in shown for shown, (role, text)
                                   in zip(texts, said, strict=True)), texts
    expect(source.locator(".turn.cited")).to_contain_text("Our staging database runs Postgres 16")
    expect(source.locator(".turn.around")).to_have_count(2)
    expect(source.locator(".session-link")).to_contain_text("s-db")
    shot(page, "memory-sources")


def test_following_a_supersedes_edge_opens_the_older_memory(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto(f"/ui/memories/{scenario.ids['fly']}")
    edge = page.locator("tr.edge", has_text="supersedes")
    expect(edge).to_contain_text("make ship")
    edge.get_by_role("link").click()
    expect(page).to_have_url(re.compile(scenario.ids["make_ship"]))
    expect(page.locator("#memory-status")).to_have_text("superseded")


def test_the_network_graph_clicks_through_along_an_edge(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto(f"/ui/network?id={scenario.ids['fly']}")
    graph = page.locator("svg.network")
    expect(graph).to_contain_text("supersedes")
    shot(page, "network")
    graph.locator("a.node", has_text="make ship").click()
    expect(page).to_have_url(re.compile(f"id={scenario.ids['make_ship']}"))
    expect(page.locator("tr.edge", has_text="supersedes")).to_contain_text("fly deploy")
    page.locator("main p a").first.click()  # the memory itself
    expect(page.locator("#memory-status")).to_have_text("superseded")


def test_the_mind_map_and_the_health_page(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto("/ui/mindmap")
    tree = page.locator(".tree")
    expect(tree.locator("summary").first).to_contain_text(re.compile(r"\(\d+\)"))
    tree.locator("summary").first.click()  # collapse, and open again
    tree.locator("summary").first.click()
    expect(tree).to_contain_text("Always use pnpm")
    shot(page, "mindmap")
    page.goto("/ui/jobs")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("hash")  # the embedder in use
    expect(facts).to_contain_text(str(scenario.db))
    expect(page.locator("main")).to_contain_text("hook:SessionStart")  # a heed rate row


def test_purge_asks_first_then_deletes_for_good(page: object, scenario: Scenario) -> None:
    expect = playwright_api.expect
    page.goto(f"/ui/memories/{scenario.ids['bob']}")
    page.get_by_role("link", name="Purge").click()
    expect(page.locator("main")).to_contain_text("cannot be undone")
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("#memory-text")).to_contain_text("helm upgrade")
    page.get_by_role("link", name="Purge").click()
    page.get_by_role("button", name="Yes, delete it for good").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted for good")
    page.goto(f"/ui/memories/{scenario.ids['bob']}")
    expect(page.locator("main")).to_contain_text("no memory")


def test_the_interface_speaks_chinese(page: object) -> None:
    expect = playwright_api.expect
    page.goto("/ui/memories?lang=zh")
    expect(page.get_by_role("navigation")).to_contain_text("记忆")
    expect(page.get_by_role("button", name="搜索")).to_be_visible()
    shot(page, "memories-zh")
    page.goto("/ui/review")  # the choice is remembered
    expect(page.locator("h1")).to_have_text("待审")
    page.get_by_role("link", name="English").click()
    expect(page.locator("h1")).to_have_text("Review")


def test_with_api_keys_the_console_asks_for_a_key_and_shows_only_its_scope(
        browser: object, env: dict[str, str], tmp_path: Path, scenario: Scenario) -> None:
    expect = playwright_api.expect
    db = tmp_path / "keys.db"
    shutil.copy(scenario.db, db)
    with Memory(db, config=HASH) as m:
        bob = m.remember("Bob keeps the staging password in 1Password", kind="fact", user_id="bob").id
        alice = KeyStore(m.store).create("default", user_id="alice", scopes="read,write").key
        reader = KeyStore(m.store).create("default", user_id="alice", scopes="read").key
    with served(db, env, tmp_path / "serve.log") as base:
        context = browser.new_context(base_url=base, locale="en-US")  # type: ignore[attr-defined]
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto("/ui/memories")
        expect(page).to_have_url(re.compile("/ui/login"))
        page.get_by_label("API key").fill("not-a-key")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("alert")).to_contain_text("not valid")
        page.get_by_label("API key").fill(alice)
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(re.compile("/ui/memories"))
        expect(page.locator("table.memories")).to_contain_text("Always use pnpm")
        expect(page.locator("main")).not_to_contain_text("staging password")
        page.goto("/ui/memories?user=bob")
        expect(page.get_by_role("alert")).to_contain_text("acts only for user 'alice'")
        page.goto(f"/ui/memories/{bob}")
        expect(page.locator("main")).to_contain_text("no memory")
        page.goto("/ui/memories")
        page.get_by_role("button", name="Log out").click()
        expect(page).to_have_url(re.compile("/ui/login"))
        page.get_by_label("API key").fill(reader)
        page.get_by_role("button", name="Log in").click()
        page.goto(f"/ui/memories/{scenario.ids['pnpm']}")
        expect(page.get_by_role("button", name="Forget")).to_have_count(0)  # a read-only key
        context.close()
        # a form posted without the console's token is refused, whatever the key
        cookies = {"remem_key": alice}
        refused = httpx.post(f"{base}/ui/memories/{scenario.ids['pnpm']}/forget", cookies=cookies,
                             data={"reason": "x"})
        assert refused.status_code == 403 and "reload the page" in refused.text
        forged = httpx.post(f"{base}/ui/memories/{scenario.ids['pnpm']}/forget",
                            cookies={**cookies, "remem_csrf": "a" * 30}, data={"csrf": "b" * 30})
        assert forged.status_code == 403
        with Memory(db, config=HASH) as m:
            assert m.get(scenario.ids["pnpm"]).status == "active"
