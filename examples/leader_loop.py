"""A small leader loop: a leader agent that splits requirements among its team the way
the user taught it once.

Each line of the script is either a lesson for the leader (starting with "teach:") or a
requirement. A lesson is said to the leader (``agent_id="leader"``) and the memory agent
keeps it; for a requirement, ``Memory.plan`` gives the team skills that apply, and the
model is asked to write each role's task, in order, with the checks the skill names.
Before the lesson the leader has no split to go by; after it, a similar requirement gets
the roles, their order and their checks.

    python examples/leader_loop.py --db team.db --base-url http://localhost:11434/v1 \\
        --model qwen2.5 --user alice --project shop script.txt

Any OpenAI-compatible chat endpoint works (vLLM, Ollama, llama.cpp, a hosted API).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from remem import Memory
from remem.llm import ChatClient
from remem.llm.client import ChatModel
from remem.organize.team import TeamPlan

LEADER = "leader"
SYSTEM = ("You are the leader of a software team. Split the requirement into tasks. When a "
          "team split is given, assign one task to each of its roles, keep its order and "
          "dependencies and name each role's checks; otherwise do it all yourself as one "
          'task. Answer with JSON: {"tasks": [{"role": "...", "task": "...", "after": [], '
          '"checks": []}]}')


def _split(plan: TeamPlan) -> str:
    if not plan.skills:
        return "No team split is known for this kind of requirement."
    skill = plan.skills[0]
    lines = [f"Team split for {skill.when!r} (as the user taught):"]
    for role in sorted(skill.roles, key=lambda r: r.step):
        after = f", after {', '.join(role.after)}" if role.after else ""
        checks = f", checks: {', '.join(role.checks)}" if role.checks else ""
        lines.append(f"- step {role.step}: {role.agent_id}{after}{checks}")
    return "\n".join(lines)


def run(memory: Memory, model: ChatModel, script: Iterable[str], *, user_id: str,
        project: str | None, out: TextIO = sys.stdout) -> list[dict[str, Any]]:
    """Play the script; returns, for each requirement, the split used and the tasks."""
    results = []
    for raw in script:
        line = raw.strip()
        if not line:
            continue
        if line.lower().startswith("teach:"):
            memory.add(line[6:].strip(), user_id=user_id, project=project, agent_id=LEADER)
            memory.flush()
            print(f"leader learned: {line[6:].strip()}", file=out)
            continue
        plan = memory.plan(line, user_id=user_id, project=project, agent_id=LEADER)
        split = _split(plan)
        reply = model.complete([{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": f"Requirement: {line}\n\n{split}"}])
        tasks = json.loads(reply).get("tasks", [])
        print(f"requirement: {line}\n{split}", file=out)
        for task in tasks:
            print(f"  {task.get('role')}: {task.get('task')}", file=out)
        results.append({"requirement": line, "plan": plan, "tasks": tasks})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", type=argparse.FileType("r", encoding="utf-8"))
    parser.add_argument("--db", default="team.db")
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint")
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--user", default="me")
    parser.add_argument("--project", default=None, help="the team's scope")
    args = parser.parse_args(argv)
    with Memory(args.db) as memory, ChatClient(args.base_url, args.model,
                                               api_key=args.api_key) as model:
        run(memory, model, args.script, user_id=args.user, project=args.project)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
