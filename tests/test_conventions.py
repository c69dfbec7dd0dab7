"""A command that goes against a remembered convention is warned about before it runs,
as a known pitfall is: judged by retrieval and meaning, checked with the real embedder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from remem import Memory
from remem.integrations.agent import AgentMemory
from remem.integrations.conventions import avoided
from remem.integrations.hooks import HookInput, reply
from remem.integrations.scope import AgentScope

CONVENTIONS = [
    "Always use pnpm, never npm",
    "Use ruff for linting; do not use flake8 in this repo",
    "Run the tests with pytest -q instead of python -m unittest",
    "Deploys go through make ship",
    "We build the images with podman rather than docker",
    "Write commit messages in the imperative mood",
    "安装依赖用 uv，不要用 pip",
]

WARNS = [
    ("npm install lodash", "pnpm"),
    ("npm run build", "pnpm"),
    ("flake8 src tests", "ruff"),
    ("docker build -t web .", "podman"),
    ("pip install requests", "uv"),
]
QUIET = [
    "pnpm install lodash",    # the tool the convention asks for
    "ruff check src",
    "podman build -t web .",
    "make ship",              # a convention about it, but nothing it goes against
    "git commit -m 'Fix the login page'",
    "ls -la",
    "python3 manage.py migrate",
    "uv pip install requests",
]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory, e5) -> AgentMemory:  # type: ignore[no-untyped-def]
    memory = Memory(tmp_path_factory.mktemp("conv") / "conv.db", embedder=e5)
    agent = AgentMemory(memory, AgentScope(user_id="alice", project="web"))
    for text in CONVENTIONS:
        agent.remember(text, kind="convention")
    memory.flush()
    yield agent
    memory.close()


@pytest.mark.parametrize(("command", "cue"), WARNS)
def test_a_command_against_a_convention_is_warned_before_it_runs(
        agent: AgentMemory, command: str, cue: str) -> None:
    check = agent.check_command(command)
    assert [c.text for c in check.conventions] and cue in check.conventions[0].text
    assert len(check.conventions) == 1  # only the convention it goes against
    assert "goes against" in agent.render_check(check)


@pytest.mark.parametrize("command", QUIET)
def test_a_command_that_follows_or_ignores_the_conventions_is_not_warned(
        agent: AgentMemory, command: str) -> None:
    assert agent.check_command(command).conventions == []


def test_the_pre_tool_use_hook_answers_with_the_convention(agent: AgentMemory) -> None:
    payload = HookInput(hook_event_name="PreToolUse", session_id="s1", tool_name="Bash",
                        tool_input={"command": "npm install lodash"})
    out = reply("PreToolUse", payload, agent)
    assert out is not None
    assert out["systemMessage"].startswith("remem: `npm` goes against a convention: ")
    assert "Always use pnpm, never npm" in out["systemMessage"]
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Always use pnpm, never npm" in context
    quiet = HookInput(hook_event_name="PreToolUse", session_id="s1", tool_name="Bash",
                      tool_input={"command": "pnpm install lodash"})
    assert reply("PreToolUse", quiet, agent) is None


def test_a_convention_in_another_project_does_not_warn(
        agent: AgentMemory, open_memory: Callable[..., Memory]) -> None:
    other = AgentMemory(agent.memory, AgentScope(user_id="alice", project="api"))
    assert other.check_command("npm install lodash").conventions == []


@pytest.mark.parametrize(("text", "prog", "expected"), [
    ("Always use pnpm, never npm", "npm", True),
    ("Always use pnpm, never npm", "pnpm", False),
    ("Use ruff; don't run flake8", "flake8", True),
    ("We stopped using yarn last year", "yarn", True),
    ("总是用 pnpm，不要用 npm", "npm", True),
    ("Run npm ci before the build", "npm", False),
    ("npm scripts live in package.json", "npm", False),
])
def test_avoided_reads_the_program_as_the_thing_to_avoid(text: str, prog: str, expected: bool) -> None:
    assert avoided(text, prog) is expected
