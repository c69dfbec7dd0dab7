"""Secrets and personal data never reach the disk: every door redacts before storage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from remem import Config, Memory
from remem.config import RedactionConfig
from remem.errors import ConfigError
from remem.govern.redact import Redactor

# What the audit found stored as it was (one value each, in the setting it was found in):
# value, the text it is planted in
PLANTED = [
    ("Qm8vYz3Lk2Wx9Tr4Hp7Jd1Fs6Gn0Vb5Ce8Ua2Zi", "aws secret: Qm8vYz3Lk2Wx9Tr4Hp7Jd1Fs6Gn0Vb5Ce8Ua2Zi"),
    ("glrt-t3_Zr8KqX2mV9pL4sN7wB1y", "gitlab-runner register --token glrt-t3_Zr8KqX2mV9pL4sN7wB1y"),
    ("xapp-1-A07QZ3K9L2M-7781234509876-4f9a2c7e1b8d3f6a0c5e9b2d7f4a1c8e3b6d9f2a5c8e1b4d7f0a3c6e9b2d5f8a",
     "SLACK_APP_TOKEN=xapp-1-A07QZ3K9L2M-7781234509876-4f9a2c7e1b8d3f6a0c5e9b2d7f4a1c8e3b6d9f2a5c8e1b4d7f0a3c6e9b2d5f8a"),
    ("hooks.slack.com/services/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",
     "alerts go to https://hooks.slack.com/services/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"),
    ("MIIEowIBAAKCAQEAx3Qm9vLk2Wz8Tr4Hp7Jd1Fs6Gn0Vb5Ce8Ua2ZiYo3Rq",
     "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx3Qm9vLk2Wz8Tr4Hp7Jd1Fs6Gn0Vb5Ce8Ua2ZiYo3Rq\n"
     "Kp2Lx7Wm4Nv9Bq1Zr6Ts3Yh8Uf5Jc0Ge2Da7Fi4Ho9Kl\n-----END RSA PRIVATE KEY-----"),
    ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
     "$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
     "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
     "-----END OPENSSH PRIVATE KEY-----"),
    ("Vq3rediskey!", "redis-cli -u redis://:Vq3rediskey!@cache:6379/0 ping"),
    ("marmalade-Otter", "my password is marmalade-Otter, do not share"),
    ("Sql9Root#x", "mysql -u root -pSql9Root#x shop"),
    ("pi-Boot-77", "sshpass -p 'pi-Boot-77' ssh pi@10.0.0.9"),
    ("kettle&Drum3", '{"user": "ops", "password": "kettle&Drum3"}'),
    ("sk_live_51Hx9Qm2Lk7Wz4Tr8Vn3Bc6Hd", "stripe key sk_live_51Hx9Qm2Lk7Wz4Tr8Vn3Bc6Hd in prod"),
    ("hf_Kp2Lx7Wm4Nv9Bq1Zr6Ts3Yh8Uf5Jc0GeDa", "HF_TOKEN=hf_Kp2Lx7Wm4Nv9Bq1Zr6Ts3Yh8Uf5Jc0GeDa"),
    ("lena.kowalski@example.org", "write to lena.kowalski@example.org about it"),
    ("+44 20 7946 0321", "call me on +44 20 7946 0321"),
    ("4539 1488 0343 6467", "charge card 4539 1488 0343 6467"),
    ("4539148803436467", "信用卡号4539148803436467，别存"),
    ("DE89370400440532013000", "IBAN DE89370400440532013000 please"),
]


def store_bytes(path: Path) -> bytes:
    """The SQLite file, its WAL and shared memory, as bytes, lower-cased."""
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))
                    if p.exists()).lower()


def leaked(path: Path) -> list[str]:
    raw = store_bytes(path)
    return [v for v, _ in PLANTED if v.lower().encode() in raw]


def memory(path: Path, **config: object) -> Memory:
    return Memory(path, config=Config(embedder="hash", **config))


def test_sdk_add_add_events_remember_and_update_store_none_of_the_planted_values(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with memory(db) as m:
        for n, (_, text) in enumerate(PLANTED):
            where = {"user_id": "alice", "session_id": f"s{n}"}
            m.add([{"role": "user", "content": text, "metadata": {"note": text}}], **where)
            m.add_events([{"type": "tool_call", "tool": "Bash", "command": text, "exit_code": 1,
                           "output": text}], **where)
            item = m.remember(text, kind="fact", user_id="alice", metadata={"password": "x" + text})
            m.update(item.id, text=f"corrected: {text}", reason=text, user_id="alice")
            m.context(user_id="alice", query=text[:200], log=True)
        assert m.flush(timeout=120)
        assert leaked(db) == []
        shown = [i.text for i in m.list(user_id="alice", include_episodes=True, limit=1000)]
        assert any("[redacted:credential]" in t for t in shown)
        assert any("[redacted:card]" in t for t in shown) and any("[redacted:iban]" in t for t in shown)
    assert leaked(db) == []  # nor after the WAL is checkpointed into the file


def test_the_rest_service_stores_none_of_them(tmp_path: Path) -> None:
    from server_support import service

    with service(tmp_path / "m.db") as (m, client):
        for _, text in PLANTED:
            assert client.post("/v1/memories", json={"messages": text, "user_id": "bob"}).status_code == 201
            posted = client.post("/v1/remember", json={"text": text, "user_id": "bob"})
            assert posted.status_code in (200, 201)
        m.flush(timeout=120)
        assert leaked(tmp_path / "m.db") == []


def test_the_mcp_server_stores_none_of_them(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from mcp.client._memory import InMemoryTransport
    from mcp.client.client import Client

    from remem.integrations.agent import AgentMemory
    from remem.integrations.scope import AgentScope
    from remem.mcp.server import build_server

    with memory(tmp_path / "m.db") as m:
        agent = AgentMemory(m, AgentScope(user_id="carol", project="shop", root=tmp_path))

        async def talk() -> None:
            async with Client(InMemoryTransport(build_server(agent))) as client:
                for _, text in PLANTED:
                    result = await client.call_tool("memory_remember", {"text": text, "kind": "convention"})
                    assert not result.is_error, result.content

        asyncio.run(talk())
        m.flush(timeout=120)
        assert leaked(tmp_path / "m.db") == []


def test_hooks_and_the_importer_store_none_of_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.integrations.agent import AgentMemory
    from remem.integrations.hooks import HookInput, answer
    from remem.integrations.importers import import_files
    from remem.integrations.scope import AgentScope

    monkeypatch.setenv("REMEM_EMBEDDER", "hash")
    db = tmp_path / "m.db"
    (tmp_path / ".git").mkdir()
    for n, (_, text) in enumerate(PLANTED):
        answer("UserPromptSubmit", HookInput(session_id=f"s{n}", cwd=str(tmp_path), prompt=text),
               db=db, user="dan")
        answer("PostToolUse", HookInput(session_id=f"s{n}", cwd=str(tmp_path), tool_name="Bash",
                                        tool_input={"command": text},
                                        tool_response={"stdout": text, "stderr": "", "exit_code": 0}),
               db=db, user="dan")
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("# Notes\n\n" + "\n\n".join(f"- {t}" for _, t in PLANTED) + "\n", encoding="utf-8")
    with memory(db) as m:
        import_files(AgentMemory(m, AgentScope(user_id="dan", root=tmp_path)), "claude-md", rules)
        m.flush(timeout=120)
        assert m.stats().episodes > len(PLANTED)
    assert leaked(db) == []


def test_the_chat_proxy_stores_none_of_them(tmp_path: Path) -> None:
    from server_support import StandInOpenAI, service

    with StandInOpenAI(reply="Noted.") as model, service(
            tmp_path / "m.db", upstream_base_url=model.base_url) as (m, client):
        for n, (_, text) in enumerate(PLANTED):
            response = client.post("/v1/chat/completions", json={
                "model": "stand-in", "messages": [{"role": "user", "content": text}]},
                headers={"X-Remem-User": "erin", "X-Remem-Session": f"s{n}"})
            assert response.status_code == 200
        m.flush(timeout=120)
        assert m.stats().episodes >= len(PLANTED)
        assert leaked(tmp_path / "m.db") == []


def test_each_kind_follows_its_policy() -> None:
    r = Redactor(RedactionConfig(policy={"email": "hash", "phone": "keep"}))
    once = r.text("mail lena.kowalski@example.org or call +44 20 7946 0321")
    assert "lena" not in once and "[email:sha256:" in once and "+44 20 7946 0321" in once
    # the same value, the same hash
    assert r.text("again: lena.kowalski@example.org").split(": ")[1] == once.split()[1]
    keyed = Redactor(RedactionConfig(policy={"email": "hash"}, hash_key="k1"))
    assert keyed.text("lena.kowalski@example.org") != r.text("lena.kowalski@example.org")
    assert Redactor(RedactionConfig(enabled=False)).text(PLANTED[0][1]) == PLANTED[0][1]


def test_redaction_can_be_turned_off_and_a_bad_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown redaction policy 'blur'"):
        Config.from_env({}, redaction={"policy": {"email": "blur"}})
    with pytest.raises(ConfigError, match="unknown kind 'emails'"):
        Config.from_env({}, redaction={"policy": {"emails": "mask"}})
    assert Config.from_env({"REMEM_REDACT": "0"}).redaction.enabled is False
    with memory(tmp_path / "m.db", redaction=RedactionConfig(enabled=False)) as m:
        m.add("call me on +44 20 7946 0321", user_id="alice")
        assert m.list(user_id="alice", include_episodes=True)[0].text.endswith("0321")


@pytest.mark.parametrize(("value", "text"), [
    ("Marigold-2291", "vpn: user jdoe, password Marigold-2291"),
    ("Qx7#harbor", "账号 ops 密码 Qx7#harbor 别外传"),
    ("wintr!Fox9", "SSHPASS=wintr!Fox9 sshpass -e rsync -a build/ pi@10.0.0.7:/srv"),
    ("ledger_55Kite", "export MYSQL_PWD=ledger_55Kite"),
    ("Pelican^88", "just use Pelican^88 as the admin password for now"),
    ("Brook-Lantern-7", "pw for the staging grafana -> Brook-Lantern-7"),
    ("Tq4*rivet", "测试库的口令改成了 Tq4*rivet"),
    ("gale Rock 51", "export REDIS_PASS='gale Rock 51'"),
])
def test_a_password_given_without_saying_is_is_masked(value: str, text: str) -> None:
    assert value not in Redactor().text(text)


@pytest.mark.parametrize("text", [
    "card 4539 1488 0343 6468 fails its Luhn check",   # one digit off
    "IBAN DE89370400440532013001 fails mod 97",
    "commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a on 2026-11-30, v2.3.1, port 8080",
    "password = os.environ['DB_PASSWORD']",
    "The password is required and must be at least 12 characters.",
    "class AbstractSingletonProxyFactoryBean2(BaseFactory): pass",
    "git clone git@github.com:acme/payments.git",
    "token_count = len(tokenizer.encode(text))",
    "数据库的密码策略改成至少十六位。",
    "(id m_01a2342707345470a26f90)",                  # a Luhn-valid digit run inside an id
    "PASSWORD_MIN_LENGTH=12 and the password reset link expires in 30 minutes",
    "the password-protected archive and the pw_input2 field",
    "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }} npm publish",
    "COMPASS_HEADING=north PASSTHROUGH_MODE=strict CACHE_BYPASS=enabled ./run.sh",
    "GH_TOKEN=$(gh auth token) gh pr list; NPM_TOKEN=${NPM_TOKEN:-} npm ci",
    "use argon2id as the password hasher and HS256 as the token algorithm",
    "password varchar(255) NOT NULL, password_hint (optional)",
    "令牌改成了 Bearer，密码改成了 MD5 加盐",
    "use v2.3.1 as the token format",
    "密码 长度至少 12 位",
])
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    assert Redactor().text(text) == text


def test_metadata_under_a_secret_name_is_masked_whatever_it_looks_like() -> None:
    r = Redactor()
    out = r.value({"db": {"password": "sunshine"}, "tags": ["call +44 20 7946 0321"], "n": 3})
    assert out == {"db": {"password": "[redacted:credential]"},
                   "tags": ["call [redacted:phone]"], "n": 3}
    assert json.dumps(out)  # still JSON
