"""Writes planted.jsonl: secrets and personal data planted in prose, commands, tool output
and JSON, and ordinary text that holds none (the false-positive controls).

The values are made up (seeded, so the file is the same on every run) and valid where
the format has a check (Luhn, mod 97, check letters). Each shape has two sets of
templates written apart: ``dev`` (used while building the detectors) and ``heldout``
(never looked at while tuning). Run: ``python benchmarks/redaction/make_planted.py``.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

R = random.Random(20261201)
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rnd(n: int, alphabet: str = B62) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(R.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        number = body + check
        total = 0
        for i, ch in enumerate(reversed(number)):
            d = int(ch)
            if i % 2:
                d = d * 2 - 9 if d > 4 else d * 2
            total += d
        if total % 10 == 0:
            return number
    raise AssertionError


def grouped(number: str, sizes: list[int], sep: str) -> str:
    out, i = [], 0
    for s in sizes:
        out.append(number[i:i + s])
        i += s
    if i < len(number):
        out.append(number[i:])
    return sep.join(out)


def iban(country: str, bban: str) -> str:
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    return f"{country}{check:02d}{bban}"


def spaced_iban(value: str) -> str:
    return " ".join(value[i:i + 4] for i in range(0, len(value), 4))


def cn_id() -> str:
    area = R.choice(["110101", "310104", "440305", "510107"])
    birth = f"{R.randint(1960, 2004)}{R.randint(1, 12):02d}{R.randint(1, 28):02d}"
    body = area + birth + f"{R.randint(0, 999):03d}"
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    return body + "10X98765432"[sum(int(d) * w for d, w in zip(body, weights)) % 11]


def es_dni() -> str:
    n = R.randint(10_000_000, 99_999_999)
    return f"{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[n % 23]}"


def es_nie() -> str:
    lead = R.choice("XYZ")
    n = R.randint(1_000_000, 9_999_999)
    return f"{lead}{n}{'TRWAGMYFPDXBNJZSQVHLCKE'[int(str('XYZ'.index(lead)) + str(n)) % 23]}"


def fr_nir() -> str:
    body = f"{R.choice('12')}{R.randint(50, 99):02d}{R.randint(1, 12):02d}{R.randint(1, 95):02d}" \
           f"{R.randint(1, 999):03d}{R.randint(1, 999):03d}"
    return f"{body}{97 - int(body) % 97:02d}"


def us_ssn() -> str:
    return f"{R.randint(100, 665)}-{R.randint(10, 99)}-{R.randint(1000, 9999)}"


def uk_nino() -> str:
    return f"{R.choice('ABCEHJKLMNPRSTWXY')}{R.choice('ABCEHJKLMNPRSTWXYZ')}{R.randint(100000, 999999)}" \
           f"{R.choice('ABCD')}"


def pem(kind: str) -> tuple[str, list[str]]:
    raw = base64.b64encode(R.randbytes(R.choice([600, 900]))).decode()
    lines = [raw[i:i + 64] for i in range(0, len(raw), 64)]
    head = {"rsa": "RSA PRIVATE KEY", "ec": "EC PRIVATE KEY", "pkcs8": "PRIVATE KEY",
            "openssh": "OPENSSH PRIVATE KEY", "enc": "ENCRYPTED PRIVATE KEY"}[kind]
    if kind == "openssh":
        lines[0] = "b3BlbnNzaC1rZXktdjEAAAAA" + lines[0][24:]
    block = f"-----BEGIN {head}-----\n" + "\n".join(lines) + f"\n-----END {head}-----"
    return block, [ln for ln in lines if len(ln) >= 24][:6]


def password() -> str:
    return R.choice([
        lambda: rnd(4, string.ascii_lowercase) + rnd(3, string.digits) + R.choice("!#%&*") + rnd(3),
        lambda: R.choice(["Blue", "Kestrel", "Orchid", "Tundra", "Maple"]) + R.choice(["-", "_", "."])
        + R.choice(["Harbor", "Lantern", "Pickle", "Saffron"]) + str(R.randint(10, 99)),
        lambda: rnd(12),
        lambda: rnd(6, string.ascii_lowercase) + str(R.randint(1000, 9999)),
    ])()


# --- value makers per shape: value (the planted secret), extras for the template ----------

def v_aws_id():
    return "AKIA" + rnd(16, string.ascii_uppercase + string.digits)


def v_aws_secret():
    return rnd(40, B62 + "/+")


VALUES = {
    "aws_access_key_id": v_aws_id,
    "aws_secret_key": v_aws_secret,
    "github_token": lambda: R.choice(["ghp_", "gho_", "ghs_"]) + rnd(36),
    "github_pat": lambda: "github_pat_" + rnd(22) + "_" + rnd(59),
    "gitlab_pat": lambda: "glpat-" + rnd(20, B62 + "_-"),
    "gitlab_runner": lambda: R.choice(["glrt-", "GR1348941"]) + rnd(24, B62 + "_"),
    "slack_bot": lambda: f"xoxb-{R.randint(10**10, 10**11)}-{R.randint(10**11, 10**12)}-{rnd(24).lower()}",
    "slack_app": lambda: f"xapp-1-A{rnd(10, string.ascii_uppercase + string.digits)}-"
                         f"{R.randint(10**12, 10**13)}-{rnd(64, HEX)}",
    "slack_webhook": lambda: f"https://hooks.slack.com/services/T{rnd(8, string.ascii_uppercase + string.digits)}"
                             f"/B{rnd(10, string.ascii_uppercase + string.digits)}/{rnd(24)}",
    "stripe_secret": lambda: R.choice(["sk_live_", "rk_live_", "sk_test_"]) + rnd(24),
    "huggingface": lambda: "hf_" + rnd(34),
    "openai": lambda: "sk-proj-" + rnd(48, B62 + "_-"),
    "anthropic": lambda: "sk-ant-api03-" + rnd(80, B62 + "_-") + "AA",
    "google_api": lambda: "AIza" + rnd(35, B62 + "_-"),
    "npm_token": lambda: "npm_" + rnd(36),
    "sendgrid": lambda: "SG." + rnd(22, B62 + "_-") + "." + rnd(43, B62 + "_-"),
    "jwt": lambda: ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
                    + base64.urlsafe_b64encode(json.dumps({"sub": rnd(8), "exp": R.randint(1e9, 2e9)}).encode())
                    .decode().rstrip("=") + "." + rnd(43, B62 + "_-")),
    "twilio": lambda: "SK" + rnd(32, HEX),
    "generic_api_key": lambda: rnd(32, B62),
    "private_key": None,  # pem()
    "url_password": password,
    "redis_password": password,
    "mysql_p": password,
    "sshpass": password,
    "json_password": password,
    "yaml_secret": lambda: rnd(R.choice([16, 24]), B62),
    "env_password": password,
    "said_password": password,
    "said_password_zh": password,
    "bearer": lambda: rnd(40, B62 + "._-"),
    "curl_user": password,
    "email": None,
    "phone": None,
    "card": None,
    "iban": None,
    "national_id": None,
}

KIND = {s: "credential" for s in VALUES}
KIND.update(private_key="private_key", email="email", phone="phone", card="card", iban="iban",
            national_id="national_id")


def v_email():
    first = R.choice(["jane", "li.wei", "o.brien", "marta", "k.tanaka", "r2d2", "amelie"])
    dom = R.choice(["example.org", "mail.example.com", "corp.example.net", "uni-example.de"])
    return f"{first}{R.choice(['', str(R.randint(1, 99)), '+work'])}@{dom}"


def v_phone():
    return R.choice([
        lambda: f"+44 20 {R.randint(7000, 7999)} {R.randint(1000, 9999)}",
        lambda: f"+1 ({R.randint(201, 989)}) {R.randint(200, 999)}-{R.randint(1000, 9999)}",
        lambda: f"({R.randint(201, 989)}) {R.randint(200, 999)}-{R.randint(1000, 9999)}",
        lambda: f"+49 30 {R.randint(10000000, 99999999)}",
        lambda: f"0{R.randint(6, 7)} {R.randint(10, 99)} {R.randint(10, 99)} {R.randint(10, 99)} {R.randint(10, 99)}",
        lambda: f"1{R.choice('3589')}{R.randint(100000000, 999999999)}",
        lambda: f"+86 1{R.choice('3589')}{R.randint(1, 9)} {R.randint(1000, 9999)} {R.randint(1000, 9999)}",
        lambda: f"{R.randint(201, 989)}-{R.randint(200, 999)}-{R.randint(1000, 9999)}",
    ])()


def v_card():
    kind = R.choice(["visa", "mc", "amex", "disc"])
    if kind == "amex":
        n = luhn_complete(R.choice(["34", "37"]), 15)
        return R.choice([grouped(n, [4, 6, 5], " "), grouped(n, [4, 6, 5], "-"), n])
    n = luhn_complete({"visa": "4", "mc": R.choice(["51", "53", "55", "2221"]), "disc": "6011"}[kind], 16)
    return R.choice([grouped(n, [4, 4, 4, 4], " "), grouped(n, [4, 4, 4, 4], "-"), n])


def v_iban():
    value = R.choice([
        lambda: iban("DE", f"{R.randint(10**17, 10**18 - 1)}"),
        lambda: iban("GB", "NWBK" + f"{R.randint(10**13, 10**14 - 1)}"),
        lambda: iban("FR", f"{R.randint(10**22, 10**23 - 1)}"),
        lambda: iban("NL", "ABNA" + f"{R.randint(10**9, 10**10 - 1)}"),
        lambda: iban("ES", f"{R.randint(10**19, 10**20 - 1)}"),
    ])()
    return R.choice([value, spaced_iban(value)])


def v_national():
    return R.choice([cn_id, es_dni, es_nie, fr_nir, us_ssn, uk_nino])()


VALUES.update(email=v_email, phone=v_phone, card=v_card, iban=v_iban, national_id=v_national)

# --- templates: {v} is the value; dev and heldout written apart ----------------------------

DEV = {
    "aws_access_key_id": [
        ("command", "aws configure set aws_access_key_id {v}"),
        ("output", "Found credentials in shared file: access key {v} (profile default)"),
        ("json", '{{"AccessKeyId": "{v}", "Expiration": "2026-12-02T10:00:00Z"}}'),
        ("prose", "the CI user's key is {v}, rotate it next week"),
    ],
    "aws_secret_key": [
        ("command", "export AWS_SECRET_ACCESS_KEY={v}"),
        ("prose", "paste this into the vault: {v}"),
        ("output", "aws_secret_access_key = {v}"),
        ("json", '{{"SecretAccessKey": "{v}"}}'),
    ],
    "github_token": [
        ("command", "git clone https://x-access-token:{v}@github.com/acme/api.git"),
        ("prose", "use {v} for the release workflow"),
        ("output", "GH_TOKEN={v} gh pr list"),
        ("json", '{{"token": "{v}", "scopes": ["repo"]}}'),
    ],
    "github_pat": [
        ("command", "echo {v} | gh auth login --with-token"),
        ("prose", "I made a fine-grained token {v} for the bot"),
        ("output", "Logged in with token {v}"),
    ],
    "gitlab_pat": [
        ("command", "curl --header 'PRIVATE-TOKEN: {v}' https://gitlab.example.com/api/v4/projects"),
        ("prose", "gitlab token for the mirror: {v}"),
        ("json", '{{"gitlab": {{"pat": "{v}"}}}}'),
    ],
    "gitlab_runner": [
        ("command", "gitlab-runner register --url https://gitlab.example.com --token {v}"),
        ("output", "Registering runner... succeeded  runner={v}"),
        ("prose", "the runner authentication token is {v}"),
    ],
    "slack_bot": [
        ("command", "SLACK_BOT_TOKEN={v} python bot.py"),
        ("prose", "bot token {v} goes in the helm values"),
        ("json", '{{"slack": {{"bot_token": "{v}"}}}}'),
    ],
    "slack_app": [
        ("command", "export SLACK_APP_TOKEN={v}"),
        ("prose", "socket mode needs the app-level token {v}"),
        ("output", "connecting with {v} ... ok"),
    ],
    "slack_webhook": [
        ("command", "curl -X POST -d '{{\"text\":\"deploy done\"}}' {v}"),
        ("prose", "alerts go to {v}"),
        ("json", '{{"webhook_url": "{v}"}}'),
    ],
    "stripe_secret": [
        ("command", "stripe listen --api-key {v}"),
        ("prose", "payments use {v} in production"),
        ("json", '{{"stripe": {{"secret": "{v}"}}}}'),
        ("output", "STRIPE_KEY={v}"),
    ],
    "huggingface": [
        ("command", "huggingface-cli login --token {v}"),
        ("prose", "my HF token is {v}"),
        ("output", "HF_TOKEN={v}"),
    ],
    "openai": [
        ("command", "OPENAI_API_KEY={v} python eval.py"),
        ("json", '{{"api_key": "{v}", "model": "gpt-4o-mini"}}'),
        ("prose", "use the key {v} for the eval runs"),
    ],
    "anthropic": [
        ("command", "export ANTHROPIC_API_KEY={v}"),
        ("prose", "anthropic key: {v}"),
    ],
    "google_api": [
        ("output", "GET https://maps.googleapis.com/maps/api/geocode/json?key={v} 200"),
        ("prose", "the maps key {v} is restricted to our domain"),
    ],
    "npm_token": [
        ("output", "//registry.npmjs.org/:_authToken={v}"),
        ("command", "NPM_TOKEN={v} npm publish"),
    ],
    "sendgrid": [
        ("command", "export SENDGRID_API_KEY={v}"),
        ("prose", "mail goes out through sendgrid with {v}"),
    ],
    "jwt": [
        ("command", "curl -H 'Authorization: Bearer {v}' https://api.example.com/me"),
        ("output", "session cookie: {v}"),
        ("json", '{{"access_token": "{v}", "token_type": "Bearer"}}'),
    ],
    "twilio": [
        ("output", "TWILIO_API_KEY={v}"),
        ("prose", "twilio key sid {v}"),
    ],
    "generic_api_key": [
        ("command", "export DD_API_KEY={v}"),
        ("json", '{{"apiKey": "{v}"}}'),
        ("prose", "the vendor gave us the key {v} for staging"),
    ],
    "private_key": [
        ("output", "$ cat ~/.ssh/id_ed25519\n{v}"),
        ("json", '{{"private_key": {vj}}}'),
        ("prose", "here is the deploy key, keep it safe:\n{v}"),
        ("output", "{v}"),
    ],
    "url_password": [
        ("command", "psql postgres://app:{v}@db.internal:5432/shop"),
        ("output", "DATABASE_URL=postgresql://admin:{v}@10.0.3.4/prod"),
        ("json", '{{"dsn": "mongodb+srv://svc:{v}@cluster0.example.net/app"}}'),
        ("prose", "the broker is amqp://guest:{v}@rabbit:5672//"),
    ],
    "redis_password": [
        ("command", "redis-cli -u redis://:{v}@cache:6379/0 ping"),
        ("output", "REDIS_URL=rediss://:{v}@redis.example.com:6380"),
        ("json", '{{"cache": "redis://:{v}@localhost:6379"}}'),
    ],
    "mysql_p": [
        ("command", "mysql -u root -p{v} shop < dump.sql"),
        ("command", "mysqldump -h db -u backup -p{v} --all-databases > all.sql"),
        ("output", "$ mariadb -uadmin -p{v} -e 'show databases'"),
    ],
    "sshpass": [
        ("command", "sshpass -p '{v}' ssh deploy@10.0.0.12 uptime"),
        ("command", "sshpass -p {v} scp build.tgz pi@raspberry:/tmp"),
        ("output", "+ sshpass -p {v} rsync -a dist/ web:/srv/www"),
    ],
    "json_password": [
        ("json", '{{"username": "admin", "password": "{v}"}}'),
        ("json", '{{"db": {{"host": "localhost", "passwd": "{v}"}}}}'),
        ("output", 'POST /login {{"email_hint": "a", "password": "{v}"}} -> 401'),
    ],
    "yaml_secret": [
        ("output", "spec:\n  env:\n    - name: APP\n      secret_key: {v}"),
        ("prose", "in settings.py SECRET_KEY = '{v}'"),
        ("command", "kubectl create secret generic app --from-literal=client_secret={v}"),
    ],
    "env_password": [
        ("command", "PGPASSWORD={v} psql -h db -U app"),
        ("output", "DB_PASSWORD={v}\nDB_HOST=db"),
        ("command", "docker run -e POSTGRES_PASSWORD={v} postgres:16"),
    ],
    "said_password": [
        ("prose", "my password is {v} if you need to log in"),
        ("prose", "The wifi password is {v}."),
        ("prose", "btw the admin password for the staging box is {v}"),
        ("prose", "I changed my password to {v} yesterday"),
    ],
    "said_password_zh": [
        ("prose", "我的密码是{v}，帮我登录一下"),
        ("prose", "服务器的root密码为 {v}"),
        ("prose", "数据库口令：{v}"),
    ],
    "bearer": [
        ("command", "curl -H \"Authorization: Bearer {v}\" https://api.example.com/v1/items"),
        ("output", "> Authorization: Bearer {v}"),
        ("json", '{{"headers": {{"Authorization": "Bearer {v}"}}}}'),
    ],
    "curl_user": [
        ("command", "curl -u admin:{v} https://jenkins.example.com/api/json"),
        ("command", "curl --user ci:{v} -X POST https://nexus.example.com/upload"),
    ],
    "email": [
        ("prose", "send the invoice to {v} please"),
        ("output", "Author: Jane Doe <{v}>"),
        ("json", '{{"email": "{v}", "plan": "pro"}}'),
        ("command", "git config user.email {v}"),
    ],
    "phone": [
        ("prose", "call me on {v} after six"),
        ("json", '{{"phone": "{v}"}}'),
        ("output", "contact: {v}"),
        ("prose", "her mobile is {v}"),
    ],
    "card": [
        ("prose", "charge it to my card {v}, expiry 09/28"),
        ("json", '{{"card_number": "{v}", "cvc": "123"}}'),
        ("output", "payment failed for card {v}: insufficient funds"),
        ("prose", "the company card is {v}"),
    ],
    "iban": [
        ("prose", "wire it to {v} by friday"),
        ("json", '{{"iban": "{v}", "bic": "DEUTDEFF"}}'),
        ("output", "Beneficiary account: {v}"),
        ("prose", "my IBAN is {v}"),
    ],
    "national_id": [
        ("prose", "my id number is {v}"),
        ("json", '{{"national_id": "{v}"}}'),
        ("output", "customer {v} verified"),
        ("prose", "for the visa form, passport holder id {v}"),
    ],
}

HELDOUT = {
    "aws_access_key_id": [
        ("output", "[default]\naws_access_key_id={v}\nregion=eu-west-1"),
        ("prose", "Ops shared the id {v} in the channel, please revoke"),
    ],
    "aws_secret_key": [
        ("output", "Secret: {v}\nCreated: 2026-11-30"),
        ("command", "aws configure set aws_secret_access_key {v} --profile ci"),
    ],
    "github_token": [
        ("command", "docker login ghcr.io -u octo -p {v}"),
        ("prose", "Swap the old PAT for {v} in the Actions secrets."),
    ],
    "github_pat": [("json", '{{"env": {{"GITHUB_TOKEN": "{v}"}}}}')],
    "gitlab_pat": [
        ("output", "remote: https://oauth2:{v}@gitlab.example.com/group/repo.git"),
        ("command", "export GITLAB_TOKEN={v}"),
    ],
    "gitlab_runner": [("json", '{{"runners": [{{"token": "{v}", "executor": "docker"}}]}}')],
    "slack_bot": [("output", "Initialized Slack client with {v}")],
    "slack_app": [("json", '{{"appToken": "{v}"}}')],
    "slack_webhook": [("command", "export ALERT_HOOK={v}"), ("output", "posting to {v} -> ok")],
    "stripe_secret": [("command", "curl https://api.stripe.com/v1/charges -u {v}:")],
    "huggingface": [
        ("json", '{{"hub": {{"token": "{v}"}}}}'),
        ("command", "git clone https://user:{v}@huggingface.co/acme/model"),
    ],
    "openai": [("output", "openai.AuthenticationError: Incorrect API key provided: {v}")],
    "anthropic": [("json", '{{"providers": {{"anthropic": "{v}"}}}}')],
    "google_api": [("command", "gcloud config set api_key {v}")],
    "npm_token": [("prose", "The publish token {v} expires in March.")],
    "sendgrid": [("json", '{{"SENDGRID": "{v}"}}')],
    "jwt": [("prose", "the id token I got back was {v}")],
    "twilio": [("command", "twilio login --api-key {v}")],
    "generic_api_key": [("output", "x-api-key: {v}"), ("command", "curl 'https://api.example.io/v2/data?api_key={v}'")],
    "private_key": [("command", "cat > key.pem <<'EOF'\n{v}\nEOF"), ("json", '{{"sshKey": {vj}}}')],
    "url_password": [
        ("command", "pg_dump 'postgresql://reporter:{v}@replica.example.com/warehouse' > wh.sql"),
        ("prose", "Connection string is mysql://shop:{v}@127.0.0.1:3306/shop, don't commit it."),
    ],
    "redis_password": [("prose", "point the worker at redis://:{v}@10.1.2.3:6379/2")],
    "mysql_p": [("command", "docker exec -it db mysql -uroot -p{v}")],
    "sshpass": [("command", "SSHPASS={v} sshpass -e ssh admin@nas"), ("command", "sshpass -p\"{v}\" ssh -o StrictHostKeyChecking=no root@host")],
    "json_password": [("json", '[{{"service": "ftp", "login": "media", "pass": "{v}"}}]')],
    "yaml_secret": [("output", "database:\n  user: app\n  password: {v}\n  host: db")],
    "env_password": [("output", "MYSQL_ROOT_PASSWORD={v}"), ("command", "set -x; ADMIN_PASS={v} ./seed.sh")],
    "said_password": [
        ("prose", "Login for the router: user admin, password {v}"),
        ("prose", "Reminder to self: the vault passphrase is {v}"),
        ("prose", "Our shared 1Password master pw is {v} (don't laugh)"),
    ],
    "said_password_zh": [("prose", "测试环境的账号是 test，密码是 {v}")],
    "bearer": [("output", "Request headers: {{'authorization': 'Bearer {v}'}}")],
    "curl_user": [("command", "wget --user=deploy --password={v} https://files.example.com/a.zip")],
    "email": [
        ("prose", "Ping {v} if the build breaks again"),
        ("output", "Signed-off-by: Marta Ruiz <{v}>"),
        ("json", '[{{"name": "K. Tanaka", "contact": "{v}"}}]'),
    ],
    "phone": [
        ("prose", "Reach the landlord at {v}."),
        ("output", "Caller ID: {v} (missed)"),
        ("json", '{{"emergency_contact": {{"tel": "{v}"}}}}'),
    ],
    "card": [
        ("output", "Stored card: {v} (exp 11/27)"),
        ("prose", "Use {v} for the AWS bill this month"),
        ("json", '{{"payment": {{"pan": "{v}"}}}}'),
    ],
    "iban": [
        ("output", "IBAN {v} added to payees"),
        ("json", '{{"payout": {{"account": "{v}"}}}}'),
    ],
    "national_id": [
        ("json", '{{"customer": {{"tax_id": "{v}"}}}}'),
        ("prose", "Her social is {v}, needed for payroll"),
        ("output", "KYC ok: document {v}"),
    ],
}


BENIGN_DEV = [
    ("output", "commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a\nAuthor: ci-bot\nDate:   Tue Dec 1 10:02:11 2026"),
    ("output", "Successfully installed fastapi-0.115.2 pydantic-2.9.2 uvicorn-0.30.6"),
    ("output", "===== 412 passed, 3 skipped in 38.21s ====="),
    ("command", "docker pull python@sha256:4c1d2e8f9a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d"),
    ("code", "def get_user(user_id: int) -> User:\n    return db.query(User).filter(User.id == user_id).one()"),
    ("code", "password = os.environ['DB_PASSWORD']"),
    ("code", "token = request.headers.get('Authorization', '').removeprefix('Bearer ')"),
    ("code", "if not check_password(password, user.password_hash):\n    raise AuthError('bad password')"),
    ("prose", "Reset your password from the account page; the link expires after an hour."),
    ("prose", "The password is required and must be at least 12 characters."),
    ("prose", "We moved the release to 2026-12-15 and bumped the version to 3.4.1."),
    ("output", "PING 10.0.0.12 (10.0.0.12): 56 data bytes\n64 bytes from 10.0.0.12: icmp_seq=0 ttl=64 time=0.412 ms"),
    ("code", "class AbstractSingletonProxyFactoryBean2(BaseFactory):\n    pass"),
    ("code", "const API_BASE = 'https://api.example.com/v1';\nfetch(`${API_BASE}/users/${id}`)"),
    ("output", "request_id=7d4b9c8f-1a2b-4c3d-9e8f-0a1b2c3d4e5f status=200 duration_ms=41"),
    ("output", "web-7d4b9c8f6d-x2x9z   1/1   Running   0   3d"),
    ("command", "git clone git@github.com:acme/payments.git && cd payments && make test"),
    ("code", "SELECT id, email_verified, created_at FROM users WHERE created_at > now() - interval '7 days';"),
    ("output", "\"integrity\": \"sha512-Ju6n2DKzEYhEKZp8yVTQK8wJJ7aBqzAlnj5LFLv7GGFPxJ5bvQMfr3tXnQcL0P6EY2Pu0A==\""),
    ("prose", "Order 100234 shipped on 2026-11-28; tracking arrives in 3-5 days."),
    ("code", "MAX_TOKENS = 4096\ntemperature: 0.2\nmax_tokens: 1024"),
    ("output", "Listening on http://127.0.0.1:8420 (press CTRL+C to quit)"),
    ("prose", "Use the token bucket limiter; the secret sauce is the refill rate."),
    ("code", "color: #3a7bd5; margin: 0 auto; font-family: 'Inter', sans-serif;"),
    ("output", "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/site-packages/httpx/_client.py\", line 1014, in send"),
    ("prose", "我们下周三把数据库迁移到新的集群，记得先备份。"),
    ("prose", "密码错误的时候要给出明确的提示，不要只显示失败。"),
    ("code", "export PATH=$HOME/.local/bin:$PATH\nexport PYTHONPATH=src"),
    ("output", "Uploaded dist/remem-0.1.0-py3-none-any.whl (412.3 kB) to https://upload.pypi.org/legacy/"),
    ("command", "kubectl get secret app-secrets -o jsonpath='{.data.password}' | base64 -d"),
    ("code", "api_key = settings.API_KEY or None"),
    ("code", "session_token = secrets.token_urlsafe(32)"),
    ("output", "2026-12-01T10:15:32.120Z INFO  server started pid=48213 port=8080"),
    ("prose", "The invoice total is 1,250.00 EUR, due in 30 days."),
    ("output", "Digest: sha256:9b2a7f3c1d8e6b4a2f0c9d8e7b6a5f4c3d2e1b0a9f8e7d6c5b4a3f2e1d0c9b8a"),
    ("code", "def test_luhn():\n    assert luhn('79927398713')"),
    ("prose", "Call the standup at 9:30; the dial-in is in the calendar invite."),
    ("output", "npm WARN deprecated inflight@1.0.6: This module is not supported"),
    ("code", "user_email = form.cleaned_data['email']\nsend_mail(subject, body, to=[user_email])"),
    ("code", "assert hashlib.sha256(data).hexdigest() == expected_digest"),
    ("output", "Step 4/12 : RUN pip install -r requirements.txt\n ---> Running in 5f2c9e1b7a3d"),
    ("prose", "Set PGPASSWORD from the secret store rather than typing it."),
    ("command", "ssh -i ~/.ssh/id_ed25519 deploy@web-01.example.com 'sudo systemctl restart app'"),
    ("code", "AUTH_HEADER = 'Authorization'\nheaders = {AUTH_HEADER: f'Bearer {token}'}"),
    ("output", "real    0m3.412s\nuser    0m2.980s\nsys     0m0.311s"),
    ("prose", "The pin of the chart is v2.3.0 until the upgrade lands."),
    ("code", "PASSWORD_MIN_LENGTH = 12\nPASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']"),
    ("output", "go: downloading golang.org/x/crypto v0.29.0\ngo: downloading github.com/stretchr/testify v1.9.0"),
    ("prose", "The phone team ships on Thursdays; release notes go to the wiki."),
    ("code", "uuid = '123e4567-e89b-12d3-a456-426614174000'"),
    ("output", "Created wheel for numpy: filename=numpy-2.1.3-cp311-cp311-linux_x86_64.whl size=16093562"),
    ("prose", "Ticket ABC-1234 tracks the flaky test in the payments suite."),
    ("code", "mysql_connect(host='db', user='app', password=os.getenv('MYSQL_PWD'))"),
    ("output", "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)"),
    ("code", "for (let i = 0; i < 1000000; i++) { total += prices[i] * 1.19; }"),
    ("prose", "Meeting notes: agreed to cache the embeddings and to drop the 2024 backfill."),
    ("output", "Receiving objects: 100% (2345/2345), 1.21 MiB | 4.02 MiB/s, done."),
    ("code", "ssh_key_path = Path.home() / '.ssh' / 'id_rsa'"),
    ("prose", "Docs live at https://docs.example.com/guide/getting-started#install."),
    ("output", "tests/test_api.py::test_login_rejects_bad_password PASSED"),
]

BENIGN_HELDOUT = [
    ("output", "HEAD is now at a257e5b BENCHMARKS: the count of new training lines"),
    ("code", "func (s *Server) Login(ctx context.Context, req *pb.LoginRequest) (*pb.Token, error) {"),
    ("prose", "Passwords must never be logged; hash them with argon2id before storing."),
    ("output", "ok  \tgithub.com/acme/api/internal/auth\t0.412s\tcoverage: 81.2% of statements"),
    ("code", "token_count = len(tokenizer.encode(text))"),
    ("output", "Step 7/9 : COPY --from=builder /app/dist /srv/www"),
    ("prose", "The on-call rotation changes every Monday at 10:00 CET."),
    ("code", "const secretName = `projects/${project}/secrets/db-password/versions/latest`;"),
    ("output", "Downloaded 1.2.3 (sha256 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae)"),
    ("prose", "We agreed to keep the API key rotation at 90 days."),
    ("code", "def verify(token: str) -> Claims:\n    return jwt.decode(token, key, algorithms=['RS256'])"),
    ("output", "2026-11-30 23:59:59,999 WARNING retrying in 8s (attempt 3/5)"),
    ("prose", "数据库的密码策略改成至少十六位，并且每季度轮换一次。"),
    ("code", "cfg.Password = os.Getenv(\"SMTP_PASSWORD\")"),
    ("output", "Resolving deltas: 100% (812/812), done.\nUpdating files: 100% (1204/1204), done."),
    ("prose", "The price went from 19.99 to 24.99 after the 2026 review."),
    ("code", "CREATE INDEX idx_orders_customer ON orders (customer_id, created_at DESC);"),
    ("output", "nginx: [emerg] bind() to 0.0.0.0:443 failed (98: Address already in use)"),
    ("prose", "Use the password manager's CLI to fetch the value at runtime."),
    ("code", "assert response.status_code == 401, response.json()['detail']"),
    ("output", "Container app-web-1  Started  0.9s"),
    ("prose", "The release checklist lives in docs/release.md, section 4.2."),
    ("code", "PRIVATE_KEY_PATH = os.environ.get('PRIVATE_KEY_PATH', '/etc/app/key.pem')"),
    ("output", "pod/web-5c9f8d7b6-qk2lp condition met"),
    ("prose", "She prefers tabs over spaces and four-space indentation in YAML."),
    ("code", "httpClient.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue(\"Bearer\", accessToken);"),
    ("output", "Fetched 41.2 MB in 6s (6,873 kB/s)\nReading package lists... Done"),
    ("prose", "Build 20261201.4 failed on the arm64 runner; x86 passed."),
    ("code", "let checksum = crc32fast::hash(&bytes);"),
    ("output", "INFO: 127.0.0.1:51234 - \"GET /v1/health HTTP/1.1\" 200 OK"),
    ("prose", "Ask the user for their token only through the OAuth flow, never in chat."),
    ("code", "export NODE_OPTIONS=--max-old-space-size=4096"),
    ("output", "Ran 214 tests in 12.031s\n\nOK (skipped=4)"),
    ("prose", "下个版本把登录页的验证码换成短信验证。"),
    ("code", "model_id = 'intfloat/multilingual-e5-small'"),
    ("output", "warning: LF will be replaced by CRLF in src/index.ts."),
    ("prose", "The staging database is refreshed from production every Sunday night."),
    ("code", "if user.pin_attempts > 3:\n    lock(user)"),
    ("output", "Image sha256:5d41402abc4b2a76b9719d911017c592 built in 41.3s"),
    ("code", "BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'"),
]


def build() -> list[dict]:
    rows = []
    for split, table in (("dev", DEV), ("heldout", HELDOUT)):
        for shape, templates in table.items():
            reps = 2  # each template twice, with fresh values
            for n, (context, template) in enumerate(templates * reps):
                if shape == "private_key":
                    block, planted = pem(R.choice(["rsa", "ec", "pkcs8", "openssh", "enc"]))
                    text = template.format(v=block, vj=json.dumps(block))
                else:
                    value = VALUES[shape]()
                    planted = [value]
                    text = template.format(v=value)
                rows.append({"id": f"{split}-{shape}-{n:02d}", "split": split, "shape": shape,
                             "kind": KIND[shape], "context": context, "text": text,
                             "planted": planted})
    for split, table in (("dev", BENIGN_DEV), ("heldout", BENIGN_HELDOUT)):
        for n, (context, text) in enumerate(table):
            rows.append({"id": f"{split}-benign-{n:02d}", "split": split, "shape": "benign",
                         "kind": None, "context": context, "text": text, "planted": []})
    return rows


if __name__ == "__main__":
    out = Path(__file__).with_name("planted.jsonl")
    rows = build()
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    planted = [r for r in rows if r["planted"]]
    print(f"{out}: {len(planted)} planted ({len({r['shape'] for r in planted})} shapes), "
          f"{len(rows) - len(planted)} benign")
