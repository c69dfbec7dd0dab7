#!/usr/bin/env python3
"""Writes heldout2.jsonl: a held-out corpus for a secrets / personal-data redactor.

Every value is made up with a seeded random generator, so rerunning this script
gives byte-identical output.  Templates use markers:
    ⟦!name⟧  a planted value (must be redacted; listed in "planted")
    ⟦name⟧   a filler value drawn by the same generator (not planted)
A generator may also return "_planted" (a list) for values that are not placed
by a marker directly (private key body lines).
"""
import base64
import json
import os
import random
import re
import string

SEED = 0x5EC2E7
R = random.Random(SEED)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heldout2.jsonl")

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DI = string.digits
AN = UP + LO + DI
HEX = "0123456789abcdef"
B64 = AN + "+/"
URLSAFE = AN + "-_"


def rs(alpha, n):
    return "".join(R.choice(alpha) for _ in range(n))


def rd(n):
    return str(R.randint(1, 9)) + rs(DI, n - 1)


def b64url(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


class Pool:
    """Draw without replacement (refills when empty), deterministic."""

    def __init__(self, items):
        self.base = list(items)
        self.items = []

    def __call__(self):
        if not self.items:
            self.items = list(self.base)
        return self.items.pop(R.randrange(len(self.items)))


# ---------------------------------------------------------------- passwords
EN_HUMAN = Pool([
    "Tr0ub4dor&3", "summer-Lake-42", "hunter2hunter2", "P@ssw0rd!2024",
    "Blue.Heron.1987", "correct-horse-battery-9", "Welcome2Office#",
    "Spring2025!!", "letmein-Now-9", "Fluffy_cat_2012", "Grafana!Adm1n",
    "Dragon&Phoenix77", "Maple$yrup88", "october-Fog-19", "Iloveyou.2016",
    "Chelsea#1905", "Pa55word-Staging", "Gr33nTea&Honey",
])
ZH_HUMAN = Pool([
    "woaini1314", "Zhang@2023", "Qaz123!@#", "Wo@iBeiJing88", "Admin@123456",
    "Shanghai#2019", "zhang.wei.0612", "Huawei@Cloud2024", "MiMa@2023abc",
    "xiaoming_520", "Lx19900815!", "Chengdu-Panda-66", "Hz#Westlake2022",
    "liu.yang.8888",
])
URL_HUMAN = Pool([
    "summer-Lake-42", "Blue.Heron.1987", "Orders_2024_prod", "k8sRocks-99",
    "Tiger.Lily.77", "Hangzhou_2023", "Nov3mber-Rain", "rabbit-Hole-31",
    "Wint3r_Sky_2024", "pgAdmin.2023",
])


def pw_random(n=None, extra="!@#%^&*-_+=."):
    n = n or R.randint(12, 20)
    while True:
        s = R.choice(AN) + rs(AN + extra, n - 1)
        if (any(c in UP for c in s) and any(c in LO for c in s)
                and any(c in DI for c in s)):
            return s


def pw_en():
    return EN_HUMAN() if R.random() < 0.6 else pw_random()


def pw_zh():
    return ZH_HUMAN() if R.random() < 0.6 else pw_random()


def pw_url():
    return URL_HUMAN() if R.random() < 0.45 else pw_random(R.randint(14, 24), "-_.")


def pw_shell():
    # safe unquoted in a shell word
    return URL_HUMAN() if R.random() < 0.4 else pw_random(R.randint(12, 18), "-_.%+")


def pw_any():
    r = R.random()
    if r < 0.35:
        return EN_HUMAN()
    if r < 0.55:
        return ZH_HUMAN()
    return pw_random()


# ---------------------------------------------------------------- tokens
def aws():
    return {"A": "AKIA" + rs(UP + "234567", 16), "B": rs(AN + "/+", 40)}


def gcp():
    return {"A": "AIza" + rs(URLSAFE, 35)}


def azure():
    return {"A": base64.b64encode(R.randbytes(64)).decode()}


def github():
    return {
        "ghp": "ghp_" + rs(AN, 36),
        "gho": "gho_" + rs(AN, 36),
        "pat": "github_pat_" + rs(AN, 22) + "_" + rs(AN, 59),
    }


def gitlab():
    return {"A": "glpat-" + rs(URLSAFE, 20)}


def slack():
    return {
        "xoxb": "xoxb-%s-%s-%s" % (rd(12), rd(13), rs(AN, 24)),
        "xoxp": "xoxp-%s-%s-%s-%s" % (rd(12), rd(12), rd(13), rs(HEX, 32)),
        "xapp": "xapp-1-A%s-%s-%s" % (rs(UP + DI, 10), rd(13), rs(HEX, 64)),
    }


def slack_hook():
    return {"A": "https://hooks.slack.com/services/T%s/B%s/%s"
            % (rs(UP + DI, 8), rs(UP + DI, 10), rs(AN, 24))}


def stripe():
    return {
        "sk": "sk_live_" + (("51" + rs(AN, 97)) if R.random() < 0.5 else rs(AN, 24)),
        "rk": "rk_live_" + ("51" + rs(AN, 97)),
    }


def openai():
    if R.random() < 0.7:
        v = "sk-proj-" + rs(URLSAFE, 74) + "T3BlbkFJ" + rs(URLSAFE, 74)
    else:
        v = "sk-" + rs(AN, 20) + "T3BlbkFJ" + rs(AN, 20)
    return {"A": v}


def anthropic():
    return {"A": "sk-ant-api03-" + rs(URLSAFE, 93) + "AA"}


def hf():
    return {"A": "hf_" + rs(UP + LO, 34)}


def npm():
    return {"A": "npm_" + rs(AN, 36)}


def sendgrid():
    return {"A": "SG." + rs(URLSAFE, 22) + "." + rs(URLSAFE, 43)}


def twilio():
    return {"A": rs(HEX, 32), "sid": "AC" + rs(HEX, 32)}


def discord():
    uid = str(R.randint(10 ** 17, 13 * 10 ** 17))
    head = base64.b64encode(uid.encode()).decode().rstrip("=")
    return {"A": "%s.%s.%s" % (head, rs(URLSAFE, 6), rs(URLSAFE, 38)), "uid": uid}


def digitalocean():
    return {"A": "dop_v1_" + rs(HEX, 64)}


def shopify():
    return {"A": "shpat_" + rs(HEX, 32)}


FIRST = ["james", "olivia", "liam", "emma", "noah", "ava", "priya", "arjun", "sofia",
         "lucas", "marie", "jonas", "hannah", "mateo", "chloe", "ethan", "wei", "fang",
         "lei", "na", "jing", "hao", "yan", "tao", "min", "xin"]
LAST = ["smith", "johnson", "natarajan", "garcia", "mueller", "dubois", "vandijk",
        "oconnor", "kowalski", "tanaka", "wang", "li", "zhang", "liu", "chen", "yang",
        "zhao", "huang", "zhou", "wu"]


def jwt():
    alg = R.choice(["HS256", "RS256", "HS512"])
    hdr = {"alg": alg, "typ": "JWT"}
    if alg == "RS256":
        hdr["kid"] = rs(HEX, 16)
    iat = R.randint(1_700_000_000, 1_730_000_000)
    pl = {"sub": str(R.randint(10000, 9999999)), "name": "%s %s" % (R.choice(FIRST).title(), R.choice(LAST).title()),
          "role": R.choice(["admin", "user", "editor", "service"]), "iat": iat,
          "exp": iat + R.choice([900, 3600, 86400])}
    sig = R.randbytes({"HS256": 32, "RS256": 256, "HS512": 64}[alg])
    tok = ".".join([b64url(json.dumps(hdr, separators=(",", ":")).encode()),
                    b64url(json.dumps(pl, separators=(",", ":")).encode()), b64url(sig)])
    return {"A": tok}


def opaque_bearer():
    r = R.random()
    if r < 0.35:
        v = "ya29.a0" + rs(URLSAFE, 140)
    elif r < 0.7:
        v = rs(AN, R.choice([32, 40, 48]))
    else:
        v = "at_" + rs(AN + "._-", 56)
    return {"A": v}


def basic_auth():
    user = R.choice(["admin", "ci-bot", "registry", "monitor", "deploy", "jenkins"])
    pw = pw_shell()
    return {"A": base64.b64encode(("%s:%s" % (user, pw)).encode()).decode(), "user": user}


def wrap(s, n):
    return [s[i:i + n] for i in range(0, len(s), n)]


def pem(kind):
    if kind == "rsa":
        body = bytes.fromhex("308204a40201000282010100") + R.randbytes(1180)
        lines, head = wrap(base64.b64encode(body).decode(), 64), "RSA PRIVATE KEY"
        planted = lines[3:6]
    elif kind == "pkcs8":
        body = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100") + R.randbytes(1180)
        lines, head = wrap(base64.b64encode(body).decode(), 64), "PRIVATE KEY"
        planted = lines[4:7]
    elif kind == "ec":
        body = (bytes.fromhex("30770201010420") + R.randbytes(32)
                + bytes.fromhex("a00a06082a8648ce3d030107a14403420004") + R.randbytes(64))
        lines, head = wrap(base64.b64encode(body).decode(), 64), "EC PRIVATE KEY"
        planted = lines[0:3]
    else:  # openssh ed25519
        def sstr(b):
            return len(b).to_bytes(4, "big") + b
        pub = R.randbytes(32)
        pubblob = sstr(b"ssh-ed25519") + sstr(pub)
        chk = R.randbytes(4)
        comment = ("%s@%s" % (R.choice(FIRST), R.choice(["laptop", "build-01", "bastion", "mbp"]))).encode()
        priv = chk + chk + sstr(b"ssh-ed25519") + sstr(pub) + sstr(R.randbytes(32) + pub) + sstr(comment)
        pad = 1
        while len(priv) % 8:
            priv += bytes([pad])
            pad += 1
        body = (b"openssh-key-v1\x00" + sstr(b"none") + sstr(b"none") + sstr(b"")
                + (1).to_bytes(4, "big") + sstr(pubblob) + sstr(priv))
        lines, head = wrap(base64.b64encode(body).decode(), 70), "OPENSSH PRIVATE KEY"
        planted = lines[1:4]
    block = "-----BEGIN %s-----\n%s\n-----END %s-----" % (head, "\n".join(lines), head)
    return {"pem": block, "pem_json": block.replace("\n", "\\n") + "\\n", "_planted": planted}


def pem_gen(kind):
    return lambda: pem(kind)


# ---------------------------------------------------------------- personal data
EMAIL_DOMAINS = ["gmail.com", "outlook.com", "yahoo.com", "proton.me", "icloud.com",
                 "fastmail.com", "hotmail.co.uk", "web.de", "orange.fr", "acme-logistics.com",
                 "nordwind-energie.de", "brightpath.io"]


def email():
    r = R.random()
    f, l = R.choice(FIRST), R.choice(LAST)
    if r < 0.15:
        v = "%s@qq.com" % rd(R.choice([9, 10]))
    elif r < 0.3:
        v = "%s%s%s@%s" % (f, l, rs(DI, R.choice([2, 4])), R.choice(["163.com", "126.com", "foxmail.com", "sina.com"]))
    elif r < 0.6:
        v = "%s.%s@%s" % (f, l, R.choice(EMAIL_DOMAINS))
    elif r < 0.8:
        v = "%s%s@%s" % (f[0], l, R.choice(EMAIL_DOMAINS))
    else:
        v = "%s_%s%s@%s" % (f, l, rs(DI, 2), R.choice(EMAIL_DOMAINS))
    return {"A": v, "name": "%s %s" % (f.title(), "O'Connor" if l == "oconnor" else "van Dijk" if l == "vandijk" else l.title())}


def phone_us():
    area = R.choice([212, 312, 415, 503, 617, 646, 702, 718, 805, 917, 206, 404, 512])
    ex = R.randint(201, 989)
    while ex == 555:
        ex = R.randint(201, 989)
    ln = rs(DI, 4)
    fmt = R.choice(["(%d) %d-%s", "%d-%d-%s", "+1 %d %d %s", "%d.%d.%s", "+1 (%d) %d-%s"])
    return {"A": fmt % (area, ex, ln)}


def phone_uk():
    r = R.random()
    if r < 0.35:
        v = "07%s %s" % (R.choice("3456789") + rs(DI, 2), rs(DI, 6))
    elif r < 0.7:
        v = "+44 7%s %s" % (R.choice("3456789") + rs(DI, 2), rs(DI, 6))
    else:
        v = "+44 20 %s %s" % (R.choice("378") + rs(DI, 3), rs(DI, 4))
    return {"A": v}


CN_PREFIX = [133, 135, 136, 137, 138, 139, 150, 151, 152, 158, 159, 166, 176, 177,
             180, 181, 186, 187, 188, 189, 199]


def phone_cn():
    p, a, b = R.choice(CN_PREFIX), rs(DI, 4), rs(DI, 4)
    fmt = R.choice(["%d%s%s", "%d %s %s", "+86 %d-%s-%s", "+86 %d%s%s", "%d-%s-%s"])
    return {"A": fmt % (p, a, b)}


def phone_intl(c):
    v = {
        "de": lambda: "+49 1%s %s" % (R.choice(["51", "52", "60", "70", "76"]), rs(DI, 8)),
        "fr": lambda: "+33 %s %s %s %s %s" % (R.choice("67"), rs(DI, 2), rs(DI, 2), rs(DI, 2), rs(DI, 2)),
        "jp": lambda: "+81 %s-%s-%s" % (R.choice(["90", "80", "70"]), rs(DI, 4), rs(DI, 4)),
        "au": lambda: "+61 4%s %s %s" % (rs(DI, 2), rs(DI, 3), rs(DI, 3)),
        "in": lambda: "+91 %s %s" % (R.choice("6789") + rs(DI, 4), rs(DI, 5)),
        "nl": lambda: "+31 6 %s" % rs(DI, 8),
        "sg": lambda: "+65 %s %s" % (R.choice("89") + rs(DI, 3), rs(DI, 4)),
    }[c]()
    return {"A": v}


def intl_gen(c):
    return lambda: phone_intl(c)


def luhn_ok(num):
    digits = [int(c) for c in num if c.isdigit()]
    s = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        s += d
    return s % 10 == 0


def luhn_complete(partial):
    for c in DI:
        if luhn_ok(partial + c):
            return partial + c
    raise AssertionError


def card(brand=None):
    brand = brand or R.choice(["visa", "visa", "mc", "mc", "amex"])
    if brand == "visa":
        num = luhn_complete("4" + rs(DI, 14))
    elif brand == "mc":
        pre = str(R.randint(51, 55)) if R.random() < 0.7 else str(R.randint(2221, 2720))
        num = luhn_complete(pre + rs(DI, 15 - len(pre)))
    else:
        num = luhn_complete(R.choice(["34", "37"]) + rs(DI, 12))
    sep = R.choice([" ", "-", ""])
    if brand == "amex":
        out = sep.join([num[:4], num[4:10], num[10:]])
    else:
        out = sep.join(wrap(num, 4))
    return {"A": out, "exp": "%02d/%d" % (R.randint(1, 12), R.randint(26, 30)), "cvc": rs(DI, 3 if brand != "amex" else 4)}


def card_gen(brand):
    return lambda: card(brand)


def iban_check(country, bban):
    s = bban + country + "00"
    n = "".join(str(int(c, 36)) for c in s)
    return "%02d" % (98 - int(n) % 97)


def iban_ok(iban):
    s = iban.replace(" ", "")
    s = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in s)) % 97 == 1


def iban(country=None):
    country = country or R.choice(["DE", "GB", "FR", "NL"])
    if country == "DE":
        bban = R.choice(["10070000", "20050550", "37040044", "50010517", "70150000"]) + rs(DI, 10)
    elif country == "GB":
        bban = R.choice(["NWBK", "BARC", "LOYD", "HBUK", "MIDL"]) + rs(DI, 6) + rs(DI, 8)
    elif country == "NL":
        bban = R.choice(["INGB", "ABNA", "RABO", "TRIO", "SNSB"]) + rs(DI, 10)
    else:
        bank, branch, acct = rs(DI, 5), rs(DI, 5), rs(DI, 11)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(acct)) % 97
        bban = bank + branch + acct + "%02d" % key
    full = country + iban_check(country, bban) + bban
    if R.random() < 0.6:
        full = " ".join(wrap(full, 4))
    return {"A": full}


def iban_gen(c):
    return lambda: iban(c)


def ssn():
    area = R.randint(1, 899)
    while area == 666:
        area = R.randint(1, 899)
    v = "%03d-%02d-%04d" % (area, R.randint(1, 99), R.randint(1, 9999))
    return {"A": v}


NINO_BAD_PREFIX = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def nino():
    while True:
        a = R.choice([c for c in UP if c not in "DFIQUV"])
        b = R.choice([c for c in UP if c not in "DFIQUVO"])
        if a + b not in NINO_BAD_PREFIX:
            break
    d = rs(DI, 6)
    suf = R.choice("ABCD")
    if R.random() < 0.5:
        v = "%s%s %s %s %s %s" % (a, b, d[:2], d[2:4], d[4:], suf)
    else:
        v = a + b + d + suf
    return {"A": v}


CN_REGION = ["110105", "110108", "310115", "310104", "440305", "440106", "330106",
             "320102", "510107", "420106", "610113", "370202", "500103", "350203"]
CN_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def cn_id_check(first17):
    return "10X98765432"[sum(int(c) * w for c, w in zip(first17, CN_W)) % 11]


def cn_id():
    y = R.randint(1962, 2004)
    m = R.randint(1, 12)
    d = R.randint(1, 28)
    f17 = "%s%04d%02d%02d%03d" % (R.choice(CN_REGION), y, m, d, R.randint(1, 999))
    return {"A": f17 + cn_id_check(f17)}


def one(fn):
    return lambda: {"A": fn()}


def two(fa, fb):
    return lambda: {"A": fa(), "B": fb()}


# ---------------------------------------------------------------- shapes
# (shape, kind, generator, [(context, template), ...])
SHAPES = []


def shape(name, kind, gen, templates):
    SHAPES.append((name, kind, gen, templates))


shape("aws_access_key", "credential", aws, [
    ("command", "aws configure set aws_access_key_id ⟦!A⟧ --profile staging && aws configure set aws_secret_access_key ⟦!B⟧ --profile staging"),
    ("output", "HOSTNAME=runner-7f9c2\nHOME=/root\nAWS_DEFAULT_REGION=eu-west-1\nAWS_ACCESS_KEY_ID=⟦!A⟧\nAWS_SECRET_ACCESS_KEY=⟦!B⟧\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin\nLANG=C.UTF-8"),
    ("prose", "CI 一直报 403，我把新的 key 发你：access key 是 ⟦!A⟧，secret 是 ⟦!B⟧，只放到 GitHub 的 repository secrets 里，别写进代码。"),
    ("code", "import boto3\n\n# 临时调试用，上线前换成 IAM role\ns3 = boto3.client(\n    \"s3\",\n    aws_access_key_id=\"⟦!A⟧\",\n    aws_secret_access_key=\"⟦!B⟧\",\n    region_name=\"ap-southeast-1\",\n)\nprint(s3.list_buckets()[\"Buckets\"])"),
])

shape("gcp_api_key", "credential", gcp, [
    ("code", "const firebaseConfig = {\n  apiKey: \"⟦!A⟧\",\n  authDomain: \"shop-demo-4821.firebaseapp.com\",\n  projectId: \"shop-demo-4821\",\n  storageBucket: \"shop-demo-4821.appspot.com\",\n};\ninitializeApp(firebaseConfig);"),
    ("prose", "地图组件先用我这个 Google Maps key：⟦!A⟧ ，下周公司账号批下来再换。"),
    ("output", "2024-05-12 16:14:02.311 [WARN] 翻译接口调用失败，稍后重试 url=https://translation.googleapis.com/language/translate/v2?key=⟦!A⟧&target=zh-CN status=429 retry_in=30s"),
])

shape("azure_storage_key", "credential", azure, [
    ("json", "{\n  \"ConnectionStrings\": {\n    \"Blob\": \"DefaultEndpointsProtocol=https;AccountName=contosomedia01;AccountKey=⟦!A⟧;EndpointSuffix=core.windows.net\"\n  },\n  \"Logging\": { \"LogLevel\": { \"Default\": \"Information\" } }\n}"),
    ("command", "az storage blob upload --account-name stlogsprod --account-key ⟦!A⟧ -c backups -f dump.sql.gz -n 2024/06/dump.sql.gz"),
    ("prose", "Azure 存储的连接串贴在这：DefaultEndpointsProtocol=https;AccountName=zhdatalake;AccountKey=⟦!A⟧;EndpointSuffix=core.chinacloudapi.cn 你本地测完就删掉。"),
])

shape("github_token", "credential", github, [
    ("command", "git remote set-url origin https://x-access-token:⟦!ghp⟧@github.com/acme-corp/billing-service.git && git push origin HEAD"),
    ("prose", "你用这个 token 拉一下私有仓库：⟦!ghp⟧ ，权限只勾了 repo，明天过期。"),
    ("output", "$ gh auth status --show-token\ngithub.com\n  ✓ Logged in to github.com account dev-liu (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: ⟦!gho⟧\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'"),
    ("code", "// TODO: 改成从环境变量读取\nctx := context.Background()\nclient := github.NewClient(nil).WithAuthToken(\"⟦!pat⟧\")\nrepos, _, err := client.Repositories.ListByOrg(ctx, \"acme-corp\", nil)"),
])

shape("gitlab_token", "credential", gitlab, [
    ("command", "curl --header \"PRIVATE-TOKEN: ⟦!A⟧\" \"https://gitlab.corp.example/api/v4/projects/42/pipelines?status=failed\""),
    ("prose", "GitLab 的 personal access token 我重新生成了：⟦!A⟧，有效期三个月，scope 是 api + read_registry。"),
    ("code", "import gitlab\n\ngl = gitlab.Gitlab(\"https://git.internal.cn\", private_token=\"⟦!A⟧\")\ngl.auth()\nproject = gl.projects.get(\"platform/infra\")"),
])

shape("slack_token", "credential", slack, [
    ("code", "from slack_sdk import WebClient\n\nclient = WebClient(token=\"⟦!xoxb⟧\")\nclient.chat_postMessage(channel=\"#deploys\", text=\"build is green\")"),
    ("prose", "机器人的 token 换成 ⟦!xoxb⟧ 了，旧的那个我已经 revoke。"),
    ("output", "$ env | grep SLACK\nSLACK_APP_TOKEN=⟦!xapp⟧\nSLACK_BOT_TOKEN=⟦!xoxb⟧\nSLACK_LOG_LEVEL=debug"),
    ("json", "{\"ok\": true, \"access_token\": \"⟦!xoxp⟧\", \"token_type\": \"user\", \"scope\": \"channels:read,chat:write\", \"team\": {\"id\": \"T04QX7LBM\", \"name\": \"Acme\"}}"),
])

shape("slack_webhook", "credential", slack_hook, [
    ("command", "curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"api v2.14.0 发布完成 ✅\"}' ⟦!A⟧"),
    ("prose", "告警直接发到这个 webhook：⟦!A⟧ ，对应的频道是 #oncall-cn。"),
    ("prose", "alertmanager config is just\n  slack_configs:\n    - api_url: ⟦!A⟧\n      channel: '#prod-alerts'\ncan you check why nothing ever arrives?"),
])

shape("stripe_key", "credential", stripe, [
    ("code", "import stripe\n\n# 本地联调，提交前删掉\nstripe.api_key = \"⟦!sk⟧\"\nintent = stripe.PaymentIntent.create(amount=2000, currency=\"eur\")"),
    ("prose", "生产环境的 Stripe 密钥：⟦!sk⟧ ，千万别放到前端。"),
    ("output", "2024-06-01 17:45:09,882 DEBUG stripe: request method=post path=/v1/refunds headers={'Authorization': 'Bearer ⟦!rk⟧', 'Stripe-Version': '2024-04-10'}"),
])

shape("openai_key", "credential", openai, [
    ("prose", "我的 OpenAI key 是 ⟦!A⟧ ，你帮我写个脚本测一下 gpt-4o 的首 token 延迟。"),
    ("command", "export OPENAI_API_KEY='⟦!A⟧' && python eval.py --model gpt-4o-mini --n 200"),
    ("output", "openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: ⟦!A⟧. You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}"),
])

shape("anthropic_key", "credential", anthropic, [
    ("command", "curl https://api.anthropic.com/v1/messages -H \"x-api-key: ⟦!A⟧\" -H \"anthropic-version: 2023-06-01\" -H \"content-type: application/json\" -d @req.json"),
    ("prose", "把 ANTHROPIC_API_KEY 设成 ⟦!A⟧ 再跑一遍 eval，上次那个 key 额度用完了。"),
    ("json", "{\n  \"providers\": {\n    \"anthropic\": { \"apiKey\": \"⟦!A⟧\", \"model\": \"claude-3-5-sonnet-latest\" }\n  },\n  \"timeoutMs\": 60000\n}"),
])

shape("huggingface_token", "credential", hf, [
    ("command", "huggingface-cli login --token ⟦!A⟧ --add-to-git-credential"),
    ("prose", "HF 的只读 token：⟦!A⟧ ，用来下载那个 gated 的模型权重。"),
    ("output", "$ cat ~/.cache/huggingface/token\n⟦!A⟧\n$ ls ~/.cache/huggingface/hub | head -3\nmodels--bert-base-uncased\nmodels--distilgpt2"),
])

shape("npm_token", "credential", npm, [
    ("output", "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=⟦!A⟧\nsave-exact=true\nfund=false"),
    ("prose", "发包用的 npm token 是 ⟦!A⟧ ，automation 类型，不用 2FA。"),
    ("command", "echo \"//registry.npmjs.org/:_authToken=⟦!A⟧\" > .npmrc && npm publish --access public"),
])

shape("sendgrid_key", "credential", sendgrid, [
    ("code", "from sendgrid import SendGridAPIClient\n\nsg = SendGridAPIClient(\"⟦!A⟧\")\nresp = sg.send(message)"),
    ("prose", "邮件服务那边的 SendGrid key：⟦!A⟧ 只开了 Mail Send 权限。"),
    ("command", "heroku config:set SENDGRID_API_KEY=⟦!A⟧ -a newsletter-prod"),
])

shape("twilio_token", "credential", twilio, [
    ("code", "from twilio.rest import Client\n\n# 短信验证码服务\naccount_sid = \"⟦sid⟧\"\nauth_token = \"⟦!A⟧\"\nclient = Client(account_sid, auth_token)"),
    ("prose", "Twilio 的 auth token 是 ⟦!A⟧ ，短信验证码的服务要用，SID 在 1Password 里。"),
    ("output", "$ cat /etc/sms-gateway/env\nTWILIO_ACCOUNT_SID=⟦sid⟧\nTWILIO_AUTH_TOKEN=⟦!A⟧\nTWILIO_FROM=+15017122661"),
])

shape("discord_token", "credential", discord, [
    ("code", "import discord\n\nintents = discord.Intents.default()\nbot = commands.Bot(command_prefix=\"!\", intents=intents)\nbot.run(\"⟦!A⟧\")"),
    ("prose", "Discord 机器人 token 发你了：\n⟦!A⟧\n服务器里已经给了管理员权限。"),
    ("json", "{\"token\": \"⟦!A⟧\", \"prefix\": \"?\", \"owner_id\": \"⟦uid⟧\", \"log_channel\": \"bot-logs\"}"),
])

shape("digitalocean_token", "credential", digitalocean, [
    ("command", "doctl auth init --context personal --access-token ⟦!A⟧"),
    ("prose", "DO 的 API token：⟦!A⟧ ，只给了 droplet 和 volume 的读写。"),
    ("code", "provider \"digitalocean\" {\n  token = \"⟦!A⟧\"\n}\n\nresource \"digitalocean_droplet\" \"web\" {\n  image  = \"ubuntu-24-04-x64\"\n  region = \"fra1\"\n  size   = \"s-1vcpu-1gb\"\n}"),
])

shape("shopify_token", "credential", shopify, [
    ("command", "curl -H \"X-Shopify-Access-Token: ⟦!A⟧\" https://acme-tea.myshopify.com/admin/api/2024-04/orders.json?status=any"),
    ("prose", "Shopify 后台的 Admin API token 是 ⟦!A⟧ ，店铺 acme-tea，只读订单。"),
    ("json", "{\"shop\": \"acme-tea.myshopify.com\", \"access_token\": \"⟦!A⟧\", \"api_version\": \"2024-04\"}"),
])

shape("jwt", "credential", jwt, [
    ("prose", "登录以后拿到的 token 是 ⟦!A⟧ ，帮我看看 exp 是不是设短了。"),
    ("output", "HTTP/1.1 200 OK\nContent-Type: application/json\nSet-Cookie: session=⟦!A⟧; Path=/; HttpOnly; Secure; SameSite=Lax\nX-Request-Id: 7c0e4b1a-3f52-4d8e-9a61-2b7d5c9e0f13"),
    ("json", "{\"access_token\": \"⟦!A⟧\", \"token_type\": \"Bearer\", \"expires_in\": 3600, \"scope\": \"openid profile\"}"),
    ("code", "// 先写死，登录页做好再删\nlocalStorage.setItem(\"id_token\", \"⟦!A⟧\");"),
])

shape("private_key_openssh", "private_key", pem_gen("openssh"), [
    ("output", "$ cat ~/.ssh/id_ed25519\n⟦pem⟧"),
    ("command", "cat > /tmp/deploy_key <<'EOF'\n⟦pem⟧\nEOF\nchmod 600 /tmp/deploy_key && ssh -i /tmp/deploy_key git@github.com"),
    ("prose", "新服务器的登录私钥（没设 passphrase）：\n\n⟦pem⟧\n\n公钥已经放到 authorized_keys 了。"),
])

shape("private_key_pem", "private_key", None, [
    ("prose", "部署机的私钥如下，帮我看看格式对不对，ssh 一直说 invalid format：\n⟦pem⟧\n是不是末尾少了换行？", pem_gen("rsa")),
    ("output", "$ kubectl -n ingress get secret shop-tls -o jsonpath='{.data.tls\\.key}' | base64 -d\n⟦pem⟧", pem_gen("rsa")),
    ("code", "SIGNING_KEY = \"\"\"⟦pem⟧\n\"\"\"\n\nkey = serialization.load_pem_private_key(SIGNING_KEY.encode(), password=None)", pem_gen("ec")),
    ("prose", "here's the ES256 key we sign the webhooks with, paste it into the vault entry:\n\n⟦pem⟧", pem_gen("ec")),
    ("json", "{\n  \"type\": \"service_account\",\n  \"project_id\": \"etl-prod-3312\",\n  \"private_key_id\": \"5c1e0a9b7d3f44e2b8a6c0d1e2f3a4b5c6d7e8f9\",\n  \"private_key\": \"⟦pem_json⟧\",\n  \"client_email\": \"loader@etl-prod-3312.iam.gserviceaccount.com\",\n  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}", pem_gen("pkcs8")),
    ("prose", "GCP 服务账号 key 文件里那段 private_key 我单独拿出来了：\n⟦pem⟧", pem_gen("pkcs8")),
])

shape("postgres_url", "credential", lambda: {"pw": pw_url()}, [
    ("output", "DATABASE_URL=postgres://app_user:⟦!pw⟧@db-primary.internal:5432/orders?sslmode=require\nREDIS_URL=redis://cache:6379/0\nPORT=8080"),
    ("prose", "本地起不来，一直报 password authentication failed。我的连接串是 postgresql://postgres:⟦!pw⟧@127.0.0.1:5433/dev_cn ，端口改过。"),
    ("output", "Traceback (most recent call last):\n  File \"/app/etl/load.py\", line 12, in <module>\n    conn = psycopg2.connect(\"postgres://etl:⟦!pw⟧@10.0.3.7:5432/warehouse\")\npsycopg2.OperationalError: connection to server at \"10.0.3.7\", port 5432 failed: Connection refused"),
])

shape("mysql_url", "credential", lambda: {"pw": pw_url()}, [
    ("json", "{\"datasource\": {\"url\": \"mysql://shop:⟦!pw⟧@mysql-0.mysql.svc.cluster.local:3306/shop?charset=utf8mb4\", \"pool\": 20}}"),
    ("prose", "测试库 mysql://qa:⟦!pw⟧@10.20.1.15:3306/qa_db 这个账号可以随便删数据。"),
    ("code", "db, err := sql.Open(\"mysql\", \"api:⟦!pw⟧@tcp(127.0.0.1:3306)/inventory?parseTime=true\")\nif err != nil {\n\tlog.Fatal(err)\n}"),
])

shape("mongodb_url", "credential", lambda: {"pw": pw_url()}, [
    ("code", "await mongoose.connect(\"mongodb+srv://admin:⟦!pw⟧@cluster0.x7kqp.mongodb.net/blog?retryWrites=true&w=majority\");"),
    ("prose", "Atlas 的连接串：mongodb+srv://dev_li:⟦!pw⟧@cluster-cn.ab12c.mongodb.net/ ，IP 白名单我已经加了。"),
    ("command", "mongosh \"mongodb://root:⟦!pw⟧@mongo-0:27017,mongo-1:27017/?replicaSet=rs0&authSource=admin\" --eval 'rs.status().ok'"),
])

shape("redis_url", "credential", lambda: {"pw": pw_url()}, [
    ("command", "redis-cli -u redis://:⟦!pw⟧@cache.prod.internal:6379/2 INFO memory"),
    ("prose", "Celery 的 broker 配的是 redis://:⟦!pw⟧@10.0.0.12:6379/0 ，但 worker 一直连不上。"),
    ("output", "[2024-06-03 11:02:17,412: ERROR/MainProcess] consumer: Cannot connect to redis://:⟦!pw⟧@redis-master:6379/1: Error 111 connecting to redis-master:6379. Connection refused.\nTrying again in 4.00 seconds... (2/100)"),
])

shape("amqp_url", "credential", lambda: {"pw": pw_url()}, [
    ("output", "CELERY_BROKER_URL=amqp://orders:⟦!pw⟧@rabbitmq.svc:5672/prod\nCELERY_RESULT_BACKEND=rpc://"),
    ("prose", "RabbitMQ 地址是 amqp://guest_cn:⟦!pw⟧@mq.internal:5672/%2F ，管理后台也是同一个密码。"),
    ("code", "conn, err := amqp.Dial(\"amqps://billing:⟦!pw⟧@b-3f1c.mq.eu-central-1.amazonaws.com:5671/\")\nfailOnError(err, \"dial\")"),
])

shape("mysql_cli_password", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "mysqldump -uadmin -p'⟦!pw⟧' --single-transaction --routines shop > shop_$(date +%F).sql"),
    ("prose", "我执行 mysql -u dev -p⟦!pw⟧ orders 之后提示 Access denied，是不是没给权限？"),
    ("output", "$ mysql --user=backup --password=⟦!pw⟧ -h db2\nmysql: [Warning] Using a password on the command line interface can be insecure.\nERROR 1045 (28000): Access denied for user 'backup'@'10.0.2.15' (using password: YES)"),
])

shape("pgpassword_env", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "PGPASSWORD=⟦!pw⟧ psql -h pg.internal -U analytics -d warehouse -c '\\dt public.*'"),
    ("prose", "每天凌晨的备份脚本里写的是 PGPASSWORD=⟦!pw⟧ pg_dumpall -h 127.0.0.1，这样会不会不太安全？"),
    ("output", "$ history | tail -3\n  501  cd /srv/backup\n  502  export PGPASSWORD='⟦!pw⟧'\n  503  psql -U replicator -h 10.8.0.4 postgres"),
])

shape("sshpass", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "sshpass -p '⟦!pw⟧' ssh -o StrictHostKeyChecking=no deploy@203.0.113.24 'sudo systemctl restart nginx'"),
    ("command", "sshpass -p ⟦!pw⟧ rsync -avz --delete ./dist/ www@10.10.4.20:/var/www/site/"),
    ("prose", "跳板机直接 sshpass -p ⟦!pw⟧ ssh ops@jump.corp 就能登上去，别的机器再从跳板跳。"),
])

shape("curl_userpass", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "curl -u admin:⟦!pw⟧ -X PUT http://localhost:9200/_cluster/settings -H 'Content-Type: application/json' -d @settings.json"),
    ("prose", "Jenkins 的 API 用 curl -u jenkins:⟦!pw⟧ http://ci.local:8080/job/build/api/json 调就行。"),
    ("output", "$ curl -sv --user \"elastic:⟦!pw⟧\" https://es01:9200\n*   Trying 10.0.1.5:9200...\n* Connected to es01 (10.0.1.5) port 9200\n* Server auth using Basic with user 'elastic'\n> GET / HTTP/1.1\n< HTTP/1.1 200 OK"),
])

shape("docker_login", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "docker login -u deployer -p ⟦!pw⟧ registry.corp.example:5000"),
    ("output", "$ docker login --username ci --password ⟦!pw⟧ harbor.local\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded"),
    ("prose", "镜像仓库登录用 docker login -u admin -p ⟦!pw⟧ hub.company.cn ，推完记得 logout。"),
])

shape("htpasswd_cli", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "htpasswd -b -c /etc/nginx/.htpasswd admin ⟦!pw⟧"),
    ("command", "docker run --rm httpd:2.4 htpasswd -Bbn registry '⟦!pw⟧' > auth/htpasswd"),
    ("prose", "给 Prometheus 加了 basic auth：htpasswd -b /etc/nginx/prom.htpasswd monitor ⟦!pw⟧ ，Grafana 数据源那边也要改。"),
])

shape("openssl_pass", "credential", lambda: {"pw": pw_shell()}, [
    ("command", "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:⟦!pw⟧"),
    ("command", "openssl genrsa -aes256 -passout 'pass:⟦!pw⟧' -out ca.key 4096"),
    ("prose", "证书导出的时候我用的是 -passout pass:⟦!pw⟧ ，导入 Windows 证书库时输这个。"),
])

shape("dotenv_secret", "credential", lambda: {"pw": pw_any(), "pw2": pw_any(), "sk": rs(AN + "!@#%^&*(-_=+)", 50)}, [
    ("output", "$ cat .env\n# 生产环境配置，勿提交\nAPP_ENV=production\nAPP_DEBUG=false\nDB_HOST=10.0.5.21\nDB_USERNAME=laravel\nDB_PASSWORD=⟦!pw⟧\nMAIL_MAILER=smtp"),
    ("prose", ".env 里我只改了一行 SECRET_KEY=⟦!sk⟧ ，其余都是模板里的默认值。"),
    ("output", "POSTGRES_USER=keycloak\nPOSTGRES_PASSWORD=⟦!pw⟧\nKEYCLOAK_ADMIN=admin\nKEYCLOAK_ADMIN_PASSWORD=⟦!pw2⟧"),
    ("output", "$ env | grep -i pass\nMYSQL_ROOT_PASSWORD=⟦!pw⟧\nREDIS_PASSWORD=⟦!pw2⟧"),
])

shape("yaml_secret", "credential",
      lambda: {"pw": pw_any(), "b64": base64.b64encode(pw_random(R.randint(16, 28)).encode()).decode()}, [
    ("output", "$ kubectl get secret db-credentials -o yaml\napiVersion: v1\ndata:\n  password: ⟦!b64⟧\n  username: YXBw\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: shop\ntype: Opaque"),
    ("code", "# 本地开发用的 compose 文件\nservices:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: \"⟦!pw⟧\"\n    volumes:\n      - pgdata:/var/lib/postgresql/data"),
    ("prose", "application.yml 这样写对吗？\nspring:\n  datasource:\n    url: jdbc:mysql://db:3306/app\n    username: app\n    password: ⟦!pw⟧\n启动时一直报 Access denied。"),
    ("code", "# group_vars/prod.yml\nansible_user: deploy\nansible_become: true\nansible_become_pass: '⟦!pw⟧'"),
])

shape("json_secret", "credential",
      lambda: {"pw": pw_any(), "wh": "whsec_" + rs(AN, 32), "cs": rs(URLSAFE, 40)}, [
    ("json", "{\n  \"database\": {\n    \"host\": \"db.local\",\n    \"port\": 5432,\n    \"user\": \"svc_api\",\n    \"password\": \"⟦!pw⟧\"\n  }\n}"),
    ("json", "{\"id\": 8812, \"name\": \"webhook-prod\", \"url\": \"https://hooks.acme.dev/stripe\", \"secret\": \"⟦!wh⟧\", \"created_at\": \"2024-05-28T09:41:13Z\"}"),
    ("prose", "config.json 里写的是 {\"smtp_user\": \"noreply\", \"smtp_pass\": \"⟦!pw⟧\"} ，这个密码对不对？"),
    ("json", "{\"client_id\": \"0oa9x2kq1mZ7Hb4c5d6\", \"client_secret\": \"⟦!cs⟧\", \"redirect_uri\": \"http://localhost:3000/callback\", \"scopes\": [\"openid\", \"email\"]}"),
])

shape("toml_ini_secret", "credential",
      lambda: {"pw": pw_any(), "tok": "pypi-AgEIcHlwaS5vcmc" + rs(URLSAFE, 140), "itok": rs(URLSAFE, 86) + "=="}, [
    ("code", "# 发信配置\n[smtp]\nhost = \"smtp.mailgun.org\"\nport = 587\nusername = \"postmaster\"\npassword = \"⟦!pw⟧\""),
    ("output", "$ cat ~/.pypirc\n[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = ⟦!tok⟧"),
    ("prose", "~/.my.cnf 里写了\n[client]\nuser=root\npassword=⟦!pw⟧\n所以命令行不用再输密码了。"),
    ("code", "[[outputs.influxdb_v2]]\n  urls = [\"http://influx:8086\"]\n  token = \"⟦!itok⟧\"\n  organization = \"ops\"\n  bucket = \"telegraf\""),
])

shape("netrc_password", "credential", lambda: {"pw": pw_shell()}, [
    ("output", "$ cat ~/.netrc\nmachine github.com\n  login octo-bot\n  password ⟦!pw⟧\nmachine api.heroku.com\n  login octo-bot"),
    ("prose", "CI 镜像里的 ~/.netrc 是 machine artifactory.corp login ci password ⟦!pw⟧ ，所以 pip 能装私有包。"),
    ("command", "printf 'machine nexus.local login deploy password %s\\n' '⟦!pw⟧' > ~/.netrc && chmod 600 ~/.netrc"),
])

shape("bearer_header", "credential", opaque_bearer, [
    ("output", "> GET /v1/invoices?limit=20 HTTP/2\n> Host: api.billing.io\n> User-Agent: curl/8.5.0\n> Authorization: Bearer ⟦!A⟧\n> Accept: */*\n>\n< HTTP/2 401"),
    ("prose", "Postman 里 header 填的是 Authorization: Bearer ⟦!A⟧ ，但是一直 401。"),
    ("code", "// 报表接口，token 先用我的\nconst res = await fetch(\"https://api.internal/v2/reports\", {\n  headers: { Authorization: \"Bearer ⟦!A⟧\" },\n});"),
])

shape("basic_auth_header", "credential", basic_auth, [
    ("output", "2024/06/04 10:22:41 [debug] 2211#2211: *17 http proxy header: \"Authorization: Basic ⟦!A⟧\""),
    ("command", "curl -H \"Authorization: Basic ⟦!A⟧\" https://registry.internal/v2/_catalog"),
    ("prose", "抓包看到请求头里是 Authorization: Basic ⟦!A⟧ ，base64 一解就是明文账号密码。"),
])

shape("password_prose_en", "credential", lambda: {"pw": pw_en()}, [
    ("prose", "the wifi password is ⟦!pw⟧ btw, that's the guest network, not the office one"),
    ("prose", "login for grafana: admin / ⟦!pw⟧"),
    ("prose", "pw for the NAS -> ⟦!pw⟧"),
    ("prose", "I reset the jenkins admin account, I set it to ⟦!pw⟧ for now, please change it after you log in."),
    ("prose", "Use ⟦!pw⟧ as the passphrase when ssh-add asks for it."),
    ("prose", "ok so the root password on the new VPS is\n⟦!pw⟧\ndon't lose it, there's no console access"),
    ("prose", "Welcome aboard! Your temporary account:\nUsername: j.morgan\nPassword: ⟦!pw⟧\nYou'll be asked to change it on first login."),
    ("prose", "can you try logging into the router with \"⟦!pw⟧\"? if that fails it's probably still on the factory default"),
])

shape("password_prose_zh", "credential", lambda: {"pw": pw_zh()}, [
    ("prose", "wifi 密码是 ⟦!pw⟧，访客网络不用密码。"),
    ("prose", "数据库口令改成了 ⟦!pw⟧ ，记得去配置中心更新一下。"),
    ("prose", "账号 admin 密码 ⟦!pw⟧ ，登进去之后先改掉。"),
    ("prose", "登录用 ⟦!pw⟧ 就行，用户名是你的工号。"),
    ("prose", "堡垒机的密码我刚重置了：⟦!pw⟧"),
    ("prose", "NAS 管理员密码：⟦!pw⟧（区分大小写）"),
    ("prose", "私钥的 passphrase 设成了「⟦!pw⟧」，别忘了。"),
    ("prose", "VPN 账号 zhangsan，初始密码 ⟦!pw⟧ ，首次登录会要求修改。"),
])

shape("email", "email", email, [
    ("prose", "ping ⟦!A⟧ if the nightly build breaks again, they own the release scripts now"),
    ("prose", "客户的联系邮箱是 ⟦!A⟧ ，有问题直接发邮件给他。"),
    ("output", "commit 6b1f0c9e2a7d48f3b5e1c0a9d8e7f6a5b4c3d2e1\nAuthor: ⟦name⟧ <⟦!A⟧>\nDate:   Tue Jun 4 14:22:31 2024 +0530\n\n    fix: handle empty cart on checkout"),
    ("json", "{\"user\": {\"id\": 4021, \"name\": \"⟦name⟧\", \"email\": \"⟦!A⟧\", \"role\": \"editor\"}}"),
    ("output", "2024-06-05 09:12:44 INFO  auth: 用户 ⟦!A⟧ 申请重置密码，来源 IP 198.51.100.23"),
])

shape("phone_us", "phone", phone_us, [
    ("prose", "call me at ⟦!A⟧ if the pager doesn't go off, I'm on call until Sunday"),
    ("json", "{\"customer\": {\"name\": \"Dana Whitfield\", \"phone\": \"⟦!A⟧\", \"tier\": \"gold\"}}"),
    ("prose", "美国那边供应商的电话是 ⟦!A⟧ ，注意时差，他们上午才有人。"),
])

shape("phone_uk", "phone", phone_uk, [
    ("prose", "my mobile is ⟦!A⟧, text me when you're outside reception"),
    ("prose", "伦敦办公室的联系电话：⟦!A⟧"),
    ("output", "id,name,phone,city\n3391,Oliver Bennett,⟦!A⟧,Manchester"),
])

shape("phone_cn", "phone", phone_cn, [
    ("prose", "我的手机号 ⟦!A⟧ ，快递到了直接打给我。"),
    ("json", "{\"收货人\": \"陈磊\", \"手机\": \"⟦!A⟧\", \"城市\": \"杭州\", \"备注\": \"工作日送货\"}"),
    ("output", "[2024-06-05 10:31:07] [sms] 验证码已发送至 ⟦!A⟧ template=SMS_2417 biz_id=902514873^0"),
    ("code", "user = User(name=\"赵强\", mobile=\"⟦!A⟧\", city=\"成都\")\ndb.session.add(user)"),
])

shape("phone_intl", "phone", None, [
    ("prose", "Reach our contractor in Berlin on ⟦!A⟧, he speaks English.", intl_gen("de")),
    ("prose", "日本客户那边对接人的电话是 ⟦!A⟧ ，周一上午联系他。", intl_gen("jp")),
    ("prose", "新加坡办事处的 Priya 手机 ⟦!A⟧ ，微信不用，直接打电话。", intl_gen("sg")),
    ("output", "name,phone,country\nArjun Mehta,⟦!A⟧,IN", intl_gen("in")),
    ("json", "{\"contact\": {\"name\": \"Marie Dubois\", \"mobile\": \"⟦!A⟧\", \"preferred\": \"whatsapp\"}}", intl_gen("fr")),
])

shape("card", "card", None, [
    ("prose", "charge failed for card ⟦!A⟧ exp ⟦exp⟧, can you check the stripe logs?", card_gen("visa")),
    ("prose", "公司卡号 ⟦!A⟧ ，有效期 ⟦exp⟧ ，订服务器的时候用这张。", card_gen("visa")),
    ("json", "{\"payment_method\": {\"type\": \"card\", \"number\": \"⟦!A⟧\", \"exp\": \"⟦exp⟧\", \"holder\": \"LIN WEI\"}}", card_gen("mc")),
    ("output", "2024-06-02 22:17:55 ERROR 支付失败 pan=⟦!A⟧ 原因=余额不足 order=ORD-88213", card_gen("mc")),
    ("prose", "Amex 卡 ⟦!A⟧ 被拒了，换 Visa 再试试。", card_gen("amex")),
    ("code", "order = checkout.pay(card_number=\"⟦!A⟧\", cvc=\"⟦cvc⟧\", exp=\"⟦exp⟧\")  # TODO remove before commit", card_gen("amex")),
])

shape("iban", "iban", None, [
    ("prose", "please wire the deposit to ⟦!A⟧ (Sparkasse), reference INV-2041", iban_gen("DE")),
    ("prose", "收款账户 IBAN：⟦!A⟧ ，户名 Müller GmbH。", iban_gen("DE")),
    ("json", "{\"payee\": \"Harper & Cole Ltd\", \"iban\": \"⟦!A⟧\", \"bic\": \"NWBKGB2L\", \"amount\": 1250.00}", iban_gen("GB")),
    ("prose", "法国供应商的银行账号 ⟦!A⟧ 已经跟对方核对过了。", iban_gen("FR")),
    ("output", "<CdtTrfTxInf>\n  <Cdtr><Nm>Dubois SARL</Nm></Cdtr>\n  <CdtrAcct><Id><IBAN>⟦!A⟧</IBAN></Id></CdtrAcct>\n</CdtTrfTxInf>", iban_gen("FR")),
    ("prose", "荷兰分公司的账户是 ⟦!A⟧ ，转账备注写合同号。", iban_gen("NL")),
    ("prose", "my UK account for the refund is ⟦!A⟧ thanks!", iban_gen("GB")),
])

shape("us_ssn", "national_id", ssn, [
    ("prose", "the onboarding form wants my SSN, it's ⟦!A⟧ — is that field encrypted?"),
    ("prose", "美国员工的 SSN：⟦!A⟧ ，只能存在 HR 系统里，不要发到群里。"),
    ("output", "2024-06-06 08:01:55 WARN  payroll.import: row 118 rejected ssn=⟦!A⟧ reason=duplicate_employee"),
])

shape("uk_nino", "national_id", nino, [
    ("prose", "HMRC letter came, my NI number is ⟦!A⟧ if payroll needs it"),
    ("prose", "英国同事的 National Insurance number 是 ⟦!A⟧ ，入职材料里要填。"),
    ("json", "{\"employee\": \"Oliver Bennett\", \"ni_number\": \"⟦!A⟧\", \"tax_code\": \"1257L\"}"),
])

shape("cn_resident_id", "national_id", cn_id, [
    ("prose", "身份证号 ⟦!A⟧ ，名字张伟，帮我查一下是不是已经实名了。"),
    ("json", "{\"name\": \"刘洋\", \"id_card\": \"⟦!A⟧\", \"verified\": false}"),
    ("output", "2024-06-05 14:20:33 [kyc] 实名认证失败 id_no=⟦!A⟧ reason=姓名与身份证号不匹配"),
    ("prose", "the KYC sandbox account uses resident ID ⟦!A⟧, don't reuse it in prod tests"),
])


# ---------------------------------------------------------------- benign
def hx(n):
    return rs(HEX, n)


def uuid4():
    h = hx(32)
    return "%s-%s-4%s-%s%s-%s" % (h[:8], h[8:12], h[13:16], R.choice("89ab"), h[17:20], h[20:32])


def benign_templates():
    b64data = base64.b64encode(json.dumps({"theme": "dark", "lang": "zh-CN", "sidebar": True, "fontSize": 14}).encode()).decode()
    b64cfg = base64.b64encode(b"log_level=info\nworkers=4\nmax_body=10m\n").decode()
    t = [
        ("output", "$ git log --oneline -5\n%s (HEAD -> main, origin/main) 修复：遇到 503 时重试\n%s chore(deps): bump pydantic to 2.7.3\n%s 新增：订单导出 CSV\n%s test: cover empty cart\n%s 文档：更新 README" % (hx(7), hx(7), hx(7), hx(7), hx(7))),
        ("prose", "明天记得轮换一下 token，旧的先别删，等所有服务都切过去再 revoke。"),
        ("prose", "the password policy needs 12 characters minimum, one digit and one symbol; can you update the validator and the error message?"),
        ("json", "{\"Id\": \"sha256:%s\", \"RepoTags\": [\"nginx:1.27.0\"], \"RepoDigests\": [\"nginx@sha256:%s\"], \"Created\": \"2024-05-30T11:22:33.123456789Z\", \"Architecture\": \"amd64\"}" % (hx(64), hx(64))),
        ("output", "$ sha256sum dist/*\n%s  dist/app-1.14.2-linux-amd64.tar.gz\n%s  dist/app-1.14.2-darwin-arm64.tar.gz\n%s  dist/app-1.14.2-windows-amd64.zip" % (hx(64), hx(64), hx(64))),
        ("code", "import os\n\ntoken = os.environ[\"TOKEN\"]\nheaders = {\"Authorization\": f\"Bearer {token}\"}"),
        ("code", "database:\n  host: ${DB_HOST}\n  user: ${DB_USER}\n  password: ${DB_PASSWORD}\n  pool_size: 10"),
        ("json", "{\"api_key\": \"<your-api-key>\", \"endpoint\": \"https://api.example.com/v1\", \"timeout\": 30}"),
        ("output", "$ pip freeze | head -6\nanyio==4.4.0\ncertifi==2024.6.2\nfastapi==0.111.0\nhttpx==0.27.0\npydantic==2.7.3\nuvicorn==0.30.1"),
        ("output", "NAME                          READY   STATUS    RESTARTS   AGE\napi-7d9f8c6b5-x2kqp           1/1     Running   0          3d4h\napi-7d9f8c6b5-m8wzt           1/1     Running   1          3d4h\nworker-5c8b7f9d4-qq7rn        1/1     Running   0          19h\nredis-master-0                1/1     Running   0          12d"),
        ("prose", "密码策略改成至少 12 位，必须包含大小写字母和数字，下周一起生效，老账号登录时会提示修改。"),
        ("code", "public class AbstractSingletonProxyFactoryBeanConfigurationPostProcessor\n        extends DefaultListableBeanFactoryAwareInitializationHandler {\n    private final TransactionAwareDataSourceProxyRegistry registry;\n}"),
        ("output", " id                                   | status   | created_at\n--------------------------------------+----------+----------------------------\n %s | pending  | 2024-06-04 09:12:44.118+00\n %s | shipped  | 2024-06-04 09:13:02.907+00\n %s | canceled | 2024-06-04 09:15:51.330+00" % (uuid4(), uuid4(), uuid4())),
        ("json", "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"ui-prefs\"}, \"binaryData\": {\"prefs.json\": \"%s\"}}" % b64data),
        ("output", "#12 exporting to image\n#12 exporting layers 2.3s done\n#12 writing image sha256:%s done\n#12 naming to registry.local/team/api:1.8.3 done\n#12 DONE 2.4s" % hx(64)),
        ("command", "git checkout %s -- src/billing/invoice.py" % hx(40)),
        ("prose", "这个 secret 的名字叫 db-credentials，在 shop 这个 namespace 下面，ServiceAccount 读不到，帮我看看 RBAC 哪里配错了。"),
        ("output", "$ kubectl get secrets -n shop\nNAME                  TYPE                             DATA   AGE\ndb-credentials        Opaque                           2      14d\nshop-tls              kubernetes.io/tls                2      88d\nregcred               kubernetes.io/dockerconfigjson   1      120d"),
        ("code", "password := os.Getenv(\"DB_PASSWORD\")\nif password == \"\" {\n\tlog.Fatal(\"环境变量 DB_PASSWORD 未设置\")\n}"),
        ("output", "$ cat .env.example\nDB_HOST=localhost\nDB_PASSWORD=\nSTRIPE_SECRET_KEY=sk_test_your_key_here\nOPENAI_API_KEY=<your-openai-key>\nSESSION_SECRET=change-me"),
        ("json", "{\"node_modules/lodash\": {\"version\": \"4.17.21\", \"resolved\": \"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\", \"integrity\": \"sha512-%s==\"}}" % rs(B64, 86)),
        ("prose", "I forgot my password again, can you remind me how to reset it through the SSO portal? the link in the wiki is dead."),
        ("output", "============================= test session starts ==============================\nplatform linux -- Python 3.11.7, pytest-8.2.1\ncollected 214 items\n\ntests/test_api.py ........................................ [ 18%%]\ntests/test_auth.py ...............s....................... [ 37%%]\n\n======================== 213 passed, 1 skipped in 41.87s ========================".replace("%%", "%")),
        ("output", "构建号 20240605.3 完成，commit %s，耗时 4m12s，产物 app-1.14.2.tar.gz（38.6 MB）已上传。" % hx(7)),
        ("json", "{\"sha\": \"%s\", \"node_id\": \"C_kwDOH%s\", \"commit\": {\"message\": \"fix: retry on 503\", \"tree\": {\"sha\": \"%s\"}}}" % (hx(40), rs(AN, 40), hx(40))),
        ("code", "PASSWORD_RE = re.compile(r\"^(?=.*[a-z])(?=.*[A-Z])(?=.*\\d)(?=.*[^\\w\\s]).{12,}$\")\n\ndef is_strong(password: str) -> bool:\n    return bool(PASSWORD_RE.match(password))"),
        ("command", "aws s3 cp s3://build-artifacts/2024/06/05/app-1.14.2-linux-amd64.tar.gz . --region eu-west-1"),
        ("output", "  # aws_db_instance.main will be updated in-place\n  ~ resource \"aws_db_instance\" \"main\" {\n        id       = \"orders-prod\"\n      ~ password = (sensitive value)\n        username = \"orders\"\n    }\n\nPlan: 0 to add, 1 to change, 0 to destroy."),
        ("prose", "token 过期时间从 1 小时改成 15 分钟了，前端拿到 401 之后要自动用 refresh token 刷新。"),
        ("output", "$ env\nSHELL=/bin/bash\nHOSTNAME=dev-box-03\nPWD=/home/dev/projects/api\nHOME=/home/dev\nLANG=zh_CN.UTF-8\nTERM=xterm-256color\nGOPATH=/home/dev/go\nPATH=/home/dev/go/bin:/usr/local/bin:/usr/bin:/bin"),
        ("code", "const secret = process.env.SESSION_SECRET ?? throwMissing(\"SESSION_SECRET\");\napp.use(session({ secret, resave: false, saveUninitialized: false }));"),
        ("output", "$ git show --stat --format='%%H %%ad %%s' --date=iso HEAD\n%s 2024-06-05 03:00:12 +0000 chore: nightly lockfile refresh\n\n package-lock.json | 214 ++++++++++-----------\n 1 file changed, 107 insertions(+), 107 deletions(-)" % hx(40)),
        ("output", "$ sudo ls /var/lib/docker/overlay2 | head -3\n%s\n%s\n%s-init" % (hx(64), hx(64), hx(64))),
        ("json", "{\"components\": {\"securitySchemes\": {\"bearerAuth\": {\"type\": \"http\", \"scheme\": \"bearer\", \"bearerFormat\": \"JWT\"}, \"apiKey\": {\"type\": \"apiKey\", \"in\": \"header\", \"name\": \"X-API-Key\"}}}}"),
        ("prose", "把 ~/.ssh/id_ed25519.pub 的内容加到 GitHub 仓库的 Deploy keys 里就行，私钥不要动，也别拷到别的机器。"),
        ("output", "$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s dev@mbp" % rs(B64, 43)),
        ("json", "{\"name\": \"@acme/ui-kit\", \"version\": \"3.12.0-beta.4\", \"dependencies\": {\"react\": \"^18.3.1\", \"clsx\": \"^2.1.1\"}, \"packageManager\": \"pnpm@9.1.4\"}"),
        ("output", "镜像 registry.cn-hangzhou.aliyuncs.com/team/api:1.8.3-rc.2@sha256:%s 已推送，部署到 staging 请走流水线。" % hx(64)),
        ("output", "2024-06-05T07:41:09.552Z INFO  http: request_id=%s method=GET path=/healthz status=200 duration_ms=1.84\n2024-06-05T07:41:10.003Z INFO  http: request_id=%s method=POST path=/v1/orders status=201 duration_ms=48.10" % (uuid4(), uuid4())),
        ("code", "import hashlib\n\nhashlib.sha256(b\"hello\").hexdigest()\n# '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'"),
        ("prose", "We should keep the secret in Vault instead of the repo; the path will be secret/data/payments/prod and the app reads it at startup."),
        ("prose", "Vault 路径 secret/data/payments/prod 下面的 key 叫 api_key，值我下午用 vault kv put 写进去，你们先别部署。"),
        ("output", "$ vault kv metadata get secret/payments/prod\n======= Metadata =======\nKey                Value\n---                -----\ncreated_time       2024-03-11T08:15:40.221Z\ncurrent_version    7\nmax_versions       0\nupdated_time       2024-06-04T16:02:19.874Z"),
        ("command", "docker run --rm -e POSTGRES_PASSWORD_FILE=/run/secrets/pg_pw -v ./secrets:/run/secrets:ro postgres:16.3"),
        ("json", "{\"alg\": \"RS256\", \"kid\": \"%s\", \"typ\": \"JWT\"}" % hx(40)),
        ("output", "Run ./scripts/deploy.sh\n  env:\n    API_TOKEN: ***\n    DB_PASSWORD: ***\n+ echo '开始部署 1.14.2 到生产环境'\n开始部署 1.14.2 到生产环境\n+ kubectl rollout status deploy/api --timeout=120s\ndeployment \"api\" successfully rolled out"),
        ("prose", "主键建议用 UUIDv7，比如 %s 这种，按时间有序，B-tree 插入更友好。" % ("018f%s-%s-7%s-%s%s-%s" % (hx(4), hx(4), hx(3), R.choice("89ab"), hx(3), hx(12)))),
        ("code", "type HttpServletRequestWrapperFactoryConfigurationException struct {\n\tRequestCorrelationIdentifier string\n\tUpstreamServiceDiscoveryEndpoint string\n}"),
        ("prose", "时间戳 1717570800 对应 2024-06-05 15:00:00 +08:00，日志里用的是毫秒 1717570800123，别搞混了。"),
        ("output", "$ openssl x509 -in server.crt -noout -subject -enddate -fingerprint -sha256\nsubject=CN = api.shop.local\nnotAfter=Sep  3 12:00:00 2024 GMT\nsha256 Fingerprint=%s" % ":".join(wrap(hx(64).upper(), 2))),
        ("prose", "账号密码都在 1Password 的「基础设施」保险库里，别往群里贴，新人找我开权限。"),
        ("prose", "The API key goes in the X-Api-Key header, not the query string; see docs/auth.md for how to create one in the dashboard."),
        ("output", "$ git diff config/db.yml   # 密码改为从环境变量注入\n-  password: ${OLD_DB_PASS}\n+  password: ${DB_PASSWORD}\n   pool: 10"),
        ("prose", "这个报错是 invalid_grant: token expired，刷新一下 token 就行，不是密码错了。"),
        ("command", "kubectl create secret generic db-creds --from-file=password=./secrets/db_password.txt --dry-run=client -o yaml | kubectl apply -f -"),
        ("output", "[2024-06-05 10:02:11] 同步任务 %s 完成：新增 1,024 条，更新 87 条，耗时 3.2 秒。" % uuid4()),
        ("json", "{\"data\": \"%s\", \"encoding\": \"base64\", \"path\": \"config/app.conf\", \"sha\": \"%s\"}" % (b64cfg, hx(40))),
        ("prose", "在 Settings → Secrets and variables → Actions 里新建一个叫 NPM_TOKEN 的 secret，值从 npm 网站生成，workflow 里用 ${{ secrets.NPM_TOKEN }} 引用。"),
        ("output", "订单号 20240605103355871 支付成功，交易流水 4200002291202406050187363214，金额 ¥128.00。"),
        ("code", "# .env 文件不要提交\nOPENAI_API_KEY = os.getenv(\"OPENAI_API_KEY\")  # 在本地 .env 里配置\nif not OPENAI_API_KEY:\n    raise RuntimeError(\"请先设置 OPENAI_API_KEY\")"),
    ]
    return t


# ---------------------------------------------------------------- build
MARK = re.compile(r"⟦(!?)(\w+)⟧")


def render(tpl, vals):
    planted = []

    def sub(m):
        bang, name = m.group(1), m.group(2)
        v = vals[name]
        if bang and v not in planted:
            planted.append(v)
        return v

    text = MARK.sub(sub, tpl)
    for v in vals.get("_planted", []):
        if v not in planted:
            planted.append(v)
    return text, planted


def main():
    rows = []
    used = set()
    for name, kind, gen, templates in SHAPES:
        for i, tmpl in enumerate(templates):
            ctx, tpl = tmpl[0], tmpl[1]
            for _ in range(100):
                vals = (tmpl[2] if len(tmpl) > 2 else gen)()
                text, planted = render(tpl, vals)
                if not any(v in used for v in planted):
                    break
            else:
                raise AssertionError("could not draw unique values for %s" % name)
            used.update(planted)
            assert planted, (name, i)
            for v in planted:
                assert v in text, (name, i, v)
            rows.append({"id": "h2-%s-%02d" % (name, i), "split": "heldout2", "shape": name,
                         "kind": kind, "context": ctx, "text": text, "planted": planted})
    for i, (ctx, text) in enumerate(benign_templates()):
        assert "⟦" not in text
        rows.append({"id": "h2-benign-%02d" % i, "split": "heldout2", "shape": "benign",
                     "kind": "benign", "context": ctx, "text": text, "planted": []})
    with open(OUT, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print("wrote %d lines to %s" % (len(rows), OUT))


if __name__ == "__main__":
    main()
