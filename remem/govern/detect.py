"""Where secrets and personal data sit in a text: spans ``(start, end, kind)``.

Credentials are found by the detectors of the ``detect-secrets`` library (its regex
plugins: cloud, vendor and token shapes; its keyword detector for quoted assignments), by
the structures that carry a secret whatever its value looks like (a URL's password, a
private key block, a password flag of a command, ``name = value`` under a secret-sounding
name, a sentence that says what a password is), and by an entropy check that catches a
random-looking token of any vendor. Personal data is found by its shape and, where it has
one, its checksum: card numbers (Luhn and an issuer prefix), IBANs (mod 97), national
ids with a check digit (Chinese resident id, Spanish DNI/NIE, French NIR), the formats
of others (US SSN, UK NINO), e-mail addresses and phone numbers.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["KINDS", "Span", "find"]

#: What a found value is; each kind has its own policy (mask, hash, keep).
KINDS = ("private_key", "credential", "card", "iban", "national_id", "email", "phone")

Span = tuple[int, int, str]

# --- credentials by structure ----------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)")
_PUTTY_KEY = re.compile(r"Private-Lines: \d+\s+(?:[A-Za-z0-9+/=]{16,}\s*)+")
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]*:([^\s@/]+)@", re.IGNORECASE)
# a secret-sounding name: long enough words anywhere, short ones only as a whole part
# (a name starts where a word does: tried from inside a long run of letters, the runs of
# [\w.-] made a text of 5,000 letters take seconds)
_SECRET_NAME = (r"(?<![\w.-])(?:[\w.-]*(?:password|passwd|passphrase|sshpass|secret|token(?!s)|api[_-]?key|"
                r"apikey|access[_-]?key|private[_-]?key|credentials?|auth[_-]?key)[\w.-]*"
                r"|(?<![A-Za-z])(?:[\w.-]+[_.-])?(?:pass|pwd|pw|pin|key|auth)(?![A-Za-z]))")
_ASSIGNED = re.compile(
    rf"(?i)(?:{_SECRET_NAME})[\"']?\s*(?::=|=>|=|:)\s*(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{{3,}})(?P=q)"
    r"|(?P<bare>[^\s\"'`,;&(){}\[\]]{3,}))")
_FLAG = re.compile(r"(?i)(?<!\S)--?[\w-]*(?:password|passwd|passphrase|pass|secret|token|api-?key)"
                   r"[\w-]*(?:=|\s+)(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)")
_SHORT_P = re.compile(r"(?<!\S)-p(?P<value>[^\s-][^\s]{2,})")  # mysql -pSECRET (no space)
_USER_FLAG = re.compile(r"(?<!\S)(?:-u\s*\S+|--user[= ]\S+)")
_SSHPASS = re.compile(r"\bsshpass\s+(?:-\w\s+\S+\s+)*-p\s*(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)")
_USERPASS_FLAG = re.compile(r"(?<!\S)(?:-u|--user)\s+[^\s:/]+:(?P<value>[^\s\"'/][^\s\"']*)")
_AUTH_HEADER = re.compile(r"(?i)\b(?:bearer|basic|token|apikey)\s+(?P<value>[A-Za-z0-9._~+/=-]{12,})")
_SAID = re.compile(
    r"(?i)\b(?:password|passphrase|passcode|passwd|pin|pw|secret|api[ _-]?key|token)s?\b"
    r"(?:\s+(?:for|of|to|on|at)\s+[^\n,;:]{1,40}?)?\s*(?:is|was|are|=|:|to|becomes|now|->|=>|→)\s+"
    r"(?:now\s+|still\s+|just\s+)?(?P<q>[\"'`]?)(?P<value>[^\s\"'`]{3,}?)(?P=q)(?=[\s,;)!?]|\.(?:\s|$)|$)")
# "my password is ...": whose it is makes what follows its value, even a plain word
_POSSESSIVE = re.compile(r"(?i)\b(?:my|our|your|his|her|their|\w+'s)\s+(?:\w+\s+){0,2}$")
_SAID_ZH = re.compile(r"(?:密码|口令|密钥|令牌|秘钥)[^\n，。]{0,12}?(?:是|为|：|:)\s*"
                      r"(?P<value>[^\s，。,]{3,})")
# a password named and then given with nothing between ("user admin, password Tulip-88",
# "账号 admin 密码 Tulip-88"), or said to have changed to one ("口令改成了 Tulip-88"); counted
# only when the value looks picked as a password (see _password_shaped)
_NAMED = re.compile(r"(?i)(?:\b(?:password|passphrase|passcode|passwd|pwd|pw)\s+|(?:密码|口令)\s*"
                    r"|(?:密码|口令|密钥|令牌|秘钥)[^\n，。]{0,12}?(?:改成了?|换成了?|设成了?|改为)\s*)"
                    r"(?P<q>[\"'`]?)(?P<value>[^\s\"'`，。,;]{6,})(?P=q)")
# "use Tulip-88 as the password" (not "use argon2id as the password hasher")
_USED_AS = re.compile(r"(?i)\b(?:use|used|using|set|try)\s+(?P<q>[\"'`]?)(?P<value>[^\s\"'`]{4,})(?P=q)"
                      r"\s+as\s+(?:the\s+|my\s+|our\s+|a\s+)?(?:\w+\s+)?(?:password|passphrase|passcode|pw)"
                      r"(?=\s*(?:$|[.,;:!?)]|(?:for|on|in|to|now|here|there|and|but)\b))")
_VENDOR = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]{1,9}(?:[_-][A-Za-z0-9]{2,10}){0,2}[_-]"
                     r"(?P<value>[A-Za-z0-9_-]{16,})")
_HASH_NAME = re.compile(r"(?i)(?:sha\d*|md5|blake\w*|crc\d*|xxh\w*|integrity)[_-]")
_HEX_RUN = re.compile(r"[0-9a-f]{32,}|[0-9A-F]{32,}")
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{20,}")
_PLACEHOLDER = re.compile(r"^(?:\$\{?\w+\}?|\$\{\{.*|<[^>]*>|\{\{.*\}\}|\*+|x+|\.+|%\(?\w+\)?s?|"
                          r"(?:os\.)?environ.*|getenv.*|process\.env.*|true|false|null|none|"
                          r"\[redacted[^\]]*\]|\[\w+:sha256:[0-9a-f]+\])$", re.IGNORECASE)


def _classes(value: str) -> int:
    return sum(bool(re.search(p, value)) for p in ("[a-z]", "[A-Z]", "[0-9]"))


def entropy(value: str) -> float:
    """Shannon entropy of ``value``, in bits per character."""
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def random_looking(value: str, *, min_length: int = 16, ratio: float = 0.82) -> bool:
    """True for a string that looks generated rather than written: long enough, with
    letters of both cases and digits, near the entropy its length allows, and switching
    between character classes often (an identifier made of words switches rarely)."""
    core = value.strip("=")
    if len(core) < min_length or _classes(core) < 3:
        return False
    if entropy(core) < ratio * math.log2(min(len(core), 64)):
        return False
    kinds = ["d" if c.isdigit() else "u" if c.isupper() else "l" if c.islower() else "s" for c in core]
    switches = sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    # words written in camel case (Argon2PasswordHasher) have long lowercase runs
    wordy = sum(len(run) for run in re.findall(r"[a-z]{4,}", core))
    return switches / len(core) >= 0.3 and wordy / len(core) < 0.4


_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")  # a word as written, not a random string
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.]?[a-z0-9]+)?", re.IGNORECASE)
# code that computes a value (settings.API_KEY, os.getenv(...), secrets.token_urlsafe(32))
_EXPRESSION = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+")


def _random_hex(value: str) -> bool:
    """A long run of hex digits inside a prefixed token (``xapp-1-...-<hex>``): a vendor's
    key; a bare hex run (a commit, a digest) is left alone by the caller."""
    run = max(_HEX_RUN.findall(value), key=len, default="")
    return len(run) >= 32 and entropy(run) >= 3.0


def _secret_value(value: str) -> bool:
    """False for what sits where a secret would but is none: a placeholder, a variable, a
    number of a few digits, a path."""
    value = value.strip().rstrip(".,;:)")
    if len(value) < 3 or _PLACEHOLDER.match(value):
        return False
    if value.isdigit() and len(value) < 6:
        return False
    if _VERSION.fullmatch(value):
        return False
    return not (value.startswith(("/", "./", "~/", "http://", "https://")) and _classes(value) < 3)


@functools.lru_cache(maxsize=1)
def _library_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[tuple[re.Pattern[str], int], ...]]:
    """The regexes of detect-secrets' regex plugins, and its keyword detector's
    quoted-assignment regexes with the group that holds the value (imported on first
    use: the library loads ``requests`` for its verifiers, which are never called)."""
    import detect_secrets.plugins as plugins_pkg
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.util.importlib import import_types_from_package

    found = []
    for plugin in import_types_from_package(plugins_pkg, filter=lambda t: not (
            isinstance(t, type) and issubclass(t, RegexBasedDetector) and t is not RegexBasedDetector)):
        # a public IP is no credential; the private key header is matched with its body below
        # (and a URL's password is matched without the host that follows it)
        if plugin.__name__ in ("IPPublicDetector", "PrivateKeyDetector", "BasicAuthDetector"):
            continue
        found.extend(plugin.denylist)
    return tuple(found), tuple(keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())


def _library(text: str) -> Iterator[Span]:
    regexes, keyed = _library_patterns()
    for regex in regexes:
        for m in regex.finditer(text):
            # a group that does not open the match is the value (aws ... '<secret>');
            # one that opens it is the vendor's prefix, and the whole match is the token
            inner = [g for g in range(1, (regex.groups or 0) + 1)
                     if m.group(g) and m.start(g) > m.start()]
            if inner:
                g = max(inner, key=lambda g: m.end(g) - m.start(g))
                yield m.start(g), m.end(g), "credential"
            else:
                yield m.start(), m.end(), "credential"
    for regex, group in keyed:
        for m in regex.finditer(text):
            if m.group(group) and _secret_value(m.group(group)):
                yield m.start(group), m.end(group), "credential"


def _credentials(text: str, entropy_ratio: float) -> Iterator[Span]:
    for m in _PRIVATE_KEY.finditer(text):
        yield m.start(), m.end(), "private_key"
    for m in _PUTTY_KEY.finditer(text):
        yield m.start(), m.end(), "private_key"
    for m in _URL_PASSWORD.finditer(text):
        yield m.start(1), m.end(1), "credential"
    for m in _ASSIGNED.finditer(text):
        group = "quoted" if m.group("quoted") is not None else "bare"
        if _secret_value(m.group(group)) and (group == "quoted" or _bare_secret(text, m)):
            yield m.start(group), m.end(group), "credential"
    for pattern in (_FLAG, _SSHPASS, _USERPASS_FLAG, _AUTH_HEADER, _SAID_ZH):
        for m in pattern.finditer(text):
            if _secret_value(m.group("value")):
                yield m.start("value"), m.end("value"), "credential"
    for m in _SAID.finditer(text):
        value = m.group("value")
        # an ordinary lowercase word after "the password is" is a description ("wrong",
        # "required"); a password said in prose is quoted or not a plain word
        owned = _POSSESSIVE.search(text[max(0, m.start() - 40):m.start()])
        if m.group("q") == "" and _computed(text, m, "value"):
            continue
        if _secret_value(value) and (m.group("q") or owned or not _WORD.fullmatch(value)):
            yield m.start("value"), m.end("value"), "credential"
    for pattern in (_NAMED, _USED_AS):
        for m in pattern.finditer(text):
            if _secret_value(m.group("value")) and (_password_shaped(m.group("value")) or (
                    m.group("q") and not _computed(text, m, "value"))):
                yield m.start("value"), m.end("value"), "credential"
    for line in _lines(text):
        start, body = line
        if _USER_FLAG.search(body):
            for m in _SHORT_P.finditer(body):
                yield start + m.start("value"), start + m.end("value"), "credential"
    for m in _VENDOR.finditer(text):
        if _HASH_NAME.match(m.group()):
            continue  # a digest named by its algorithm (sha512-..., md5_...) is no secret
        value = m.group("value")
        if random_looking(value, ratio=entropy_ratio) or _random_hex(value):
            yield m.start(), m.end(), "credential"
    for m in _TOKEN.finditer(text):
        if not _HASH_NAME.match(m.group()) and random_looking(m.group(), min_length=20, ratio=entropy_ratio):
            yield m.start(), m.end(), "credential"


def _password_shaped(value: str) -> bool:
    """Three of lower case, upper case, digits and symbols, or a long run of digits: what
    a person picks as a password, and not a word or a term of prose ("password policy",
    "varchar(255)", "sha512-crypt", "min-length=12")."""
    value = value.rstrip(".,;:!?)")
    if value.isdigit():
        return len(value) >= 6
    if value.startswith(("(", "[", "{")) or "=" in value or _VERSION.fullmatch(value):
        return False
    symbols = any(not c.isalnum() and c not in "-_.()[]{}+" for c in value)
    return _classes(value) + symbols >= 3


def _bare_secret(text: str, m: re.Match[str]) -> bool:
    """An unquoted value after ``name:`` in prose is often a word ("token: expired"); after
    ``=`` (code, env files, URLs, commands) it is the value itself."""
    sep = text[m.start():m.start("bare")].rstrip()
    value = m.group("bare")
    if _computed(text, m, "bare"):
        return False
    return not sep.endswith(":") or not _WORD.fullmatch(value)


def _computed(text: str, m: re.Match[str], group: str) -> bool:
    """True when the value is code that computes one (a call, an attribute, an index)."""
    return text[m.end(group):m.end(group) + 1] in ("(", "[") or bool(_EXPRESSION.fullmatch(m.group(group)))


def _lines(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for line in text.splitlines(keepends=True):
        yield start, line
        start += len(line)


# --- personal data -----------------------------------------------------------------------

_EMAIL = re.compile(r"(?<![\w.+:/%-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                    r"\.[A-Za-z]{2,24}\b(?!:[\w~./-])")
_DIGITS = re.compile(r"(?<![\w.+-])(?:\+|00)?\(?\d[\d ().-]{6,22}\d(?![\w])")
# not inside an id or a decimal number: "m_01a2342707345470a26f90" holds no card
_CARD = re.compile(r"(?<![A-Za-z0-9_-])(?<!\d\.)\d(?:[ -]?\d){12,18}(?![A-Za-z0-9_-]|\.\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_CN_ID = re.compile(r"(?<![A-Za-z0-9_])\d{17}[\dXx](?![A-Za-z0-9_])")
_ES_ID = re.compile(r"\b[XYZ]?\d{7,8}-?[A-Z]\b")
_FR_NIR = re.compile(r"(?<!\d)[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?!\d)")
_US_SSN = re.compile(r"(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])")
_UK_NINO = re.compile(r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                      r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")


def luhn(digits: str) -> bool:
    """The Luhn check of a card number (and of other numbers that use it)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_issuer(digits: str) -> bool:
    """Whether the number starts as a card network's do (Visa, Mastercard, Amex, Discover,
    JCB, Diners, UnionPay, Maestro)."""
    two, four = int(digits[:2]), int(digits[:4])
    return (digits[0] == "4" or 51 <= two <= 55 or 2221 <= four <= 2720 or two in (34, 37)
            or digits.startswith(("6011", "65", "644", "645", "646", "647", "648", "649"))
            or 3528 <= four <= 3589 or two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305
            or two == 62 or two in (50, 56, 57, 58, 67))


def iban_valid(value: str) -> bool:
    """The ISO 13616 mod-97 check of an IBAN."""
    compact = value.replace(" ", "")
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def _cn_id_valid(value: str) -> bool:
    weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
    total = sum(int(d) * w for d, w in zip(value[:17], weights, strict=True))
    if "1900" > value[6:10] or not ("01" <= value[10:12] <= "12"):
        return False
    return "10X98765432"[total % 11] == value[17].upper()


def _es_id_valid(value: str) -> bool:
    compact = value.replace("-", "")
    number = compact[:-1].replace("X", "0").replace("Y", "1").replace("Z", "2")
    return "TRWAGMYFPDXBNJZSQVHLCKE"[int(number) % 23] == compact[-1]


def _fr_nir_valid(value: str) -> bool:
    compact = value.replace(" ", "")
    body = compact[:13].replace("2A", "19").replace("2B", "18")
    return 97 - int(body) % 97 == int(compact[13:])


def _phone(candidate: str) -> bool:
    """Digits laid out as a phone number: 8 to 15 digits in groups (a leading + or 00, an
    area code in brackets, or separators between groups), and not a date, a time, a
    version or an address."""
    digits = re.sub(r"\D", "", candidate)
    if not 8 <= len(digits) <= 15 or candidate.count("(") != candidate.count(")"):
        return False
    groups = [g for g in re.split(r"[ ().-]+", candidate.lstrip("+")) if g]
    if re.fullmatch(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}.*|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}", candidate):
        return False  # a date
    if "." in candidate and not re.search(r"[ ()-]", candidate) and len(groups) == 4:
        return False  # an IPv4 address or a version
    international = candidate.startswith(("+", "00"))
    if international:
        return len(groups) >= 2 or len(digits) >= 10
    if re.fullmatch(r"1[3-9]\d{9}", candidate):  # a mobile number in China
        return True
    if len(groups) < 2 or any(len(g) > 5 for g in groups[1:]) or len(digits) < 9:
        return False
    return len(digits) <= 12 and all(len(g) >= 2 for g in groups[1:])


def _personal(text: str) -> Iterator[Span]:
    for m in _EMAIL.finditer(text):
        yield m.start(), m.end(), "email"
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            yield m.start(), m.end(), "iban"
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if luhn(digits) and _card_issuer(digits) and len(set(digits)) > 1:
            yield m.start(), m.end(), "card"
    for m in _CN_ID.finditer(text):
        if _cn_id_valid(m.group()):
            yield m.start(), m.end(), "national_id"
    for m in _ES_ID.finditer(text):
        if _es_id_valid(m.group()):
            yield m.start(), m.end(), "national_id"
    for m in _FR_NIR.finditer(text):
        if _fr_nir_valid(m.group()):
            yield m.start(), m.end(), "national_id"
    for m in _US_SSN.finditer(text):
        area, group, serial = m.groups()
        if area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000":
            yield m.start(), m.end(), "national_id"
    for m in _UK_NINO.finditer(text):
        yield m.start(), m.end(), "national_id"
    for m in _DIGITS.finditer(text):
        candidate = m.group().rstrip(".-) ")
        if candidate.startswith("(") and ")" not in candidate:
            candidate = candidate[1:]
        if _phone(candidate):
            start = m.start() + m.group().find(candidate)
            yield start, start + len(candidate), "phone"


def find(text: str, *, entropy_ratio: float = 0.82) -> list[Span]:
    """Every secret and personal value in ``text`` as non-overlapping spans, in order;
    where two findings overlap, the union is one span of the stronger kind (a private key
    over a credential over personal data)."""
    found: list[Any] = [*_library(text), *_credentials(text, entropy_ratio), *_personal(text)]
    found.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list[Any]] = []
    for start, end, kind in found:
        if end <= start:
            continue
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if KINDS.index(kind) < KINDS.index(last[2]):
                last[2] = kind
            continue
        merged.append([start, end, kind])
    return [(s, e, k) for s, e, k in merged]
