"""What goes into an adapter, how it is taught, and the record kept of it; no model runtime.

Parametric memory writes the memories that recur and matter most into a low-rank adapter
(LoRA) of a local model. This module holds the parts that need no torch:

- :func:`select_memories`: which memories deserve to go into weights: canonical, active,
  used often (or pinned), unchanged for a while; never superseded, forgotten, held or
  flagged for review; events and file lists stay in the prompt.
- :func:`render_pairs`: the training pairs of a memory: several question phrasings in the
  memory's language (English or Chinese), each answered with the memory's text. Some
  phrasings are kept out of training (``held_out=True``) to test recall on questions the
  adapter never saw.
- :class:`AdapterRegistry`: the adapters of a store, one folder per scope, each with its
  weights (safetensors) and ``manifest.json`` (base model hash, the memory ids and
  versions it holds, the training settings, the date); :func:`staleness` says which held
  memories changed since (superseded, forgotten, archived, purged or edited).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ConfigError
from ..model import MemoryItem, Scope
from ..text import STOPWORDS, has_cjk
from .parametric import AdapterInfo

__all__ = [
    "MANIFEST",
    "AdapterRegistry",
    "AdapterState",
    "Pair",
    "SelectionPolicy",
    "model_folder_sha256",
    "read_manifest",
    "render_pairs",
    "select_memories",
    "staleness",
    "training_due",
    "write_manifest",
]

MANIFEST = "manifest.json"
FORMAT = "remem-lora-adapter"
FORMAT_VERSION = 1
#: Files whose bytes are a model's weights (what the base model hash covers).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_FOLDER_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# --- selection --------------------------------------------------------------------------

@dataclass(frozen=True)
class SelectionPolicy:
    """What a memory needs to go into an adapter.

    ``min_uses``: times it was used (``Memory.used``, recalls) unless pinned;
    ``min_age_days``: days since it last changed; ``max_memories``: the most held, the
    most used first; ``skip_kinds``: kinds that stay in the prompt (events are dated,
    file lists change with the code).
    """

    min_uses: int = 2
    min_age_days: float = 1.0
    max_memories: int = 200
    skip_kinds: tuple[str, ...] = ("event", "files")


def _flagged(item: MemoryItem) -> bool:
    return bool(item.metadata.get("review")) and not item.metadata.get("reviewed")


def select_memories(items: Iterable[MemoryItem], uses: Mapping[str, tuple[int, float | None]], *,
                    now: float, policy: SelectionPolicy = SelectionPolicy()) -> list[MemoryItem]:
    """The memories of ``items`` that deserve to go into weights, most used first.

    ``uses`` maps a memory id to (use count, last use in epoch seconds), as
    ``Store.use_stats`` gives it; ``now`` is epoch seconds.
    """
    chosen = []
    for item in items:
        if item.is_episode or item.status != "active" or item.maturity != "canonical":
            continue
        if item.kind in policy.skip_kinds or _flagged(item):
            continue
        count = uses.get(item.id, (0, None))[0]
        if count < policy.min_uses and not item.pinned:
            continue
        if (now - item.updated_at.timestamp()) / 86400 < policy.min_age_days:
            continue
        chosen.append((item, count))
    chosen.sort(key=lambda pair: (not pair[0].pinned, -pair[1], pair[0].id))
    return [item for item, _ in chosen[: policy.max_memories]]


# --- training pairs ---------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """One training (or test) example: a question about a memory and its answer."""

    memory_id: str
    question: str
    answer: str
    lang: str


# Phrasings per language: those used in training, then those kept out of it. The held-out
# ones are never trained on, so recall on them shows what the adapter learned beyond its
# own questions.
_TEMPLATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "en": (("What do you know about {s}?", "Tell me about {s}.", "What should I remember about {s}?",
            "What is the note on {s}?", "What did I tell you about {s}?", "Any notes about {s}?"),
           ("Remind me what we know about {s}.", "Anything I should keep in mind about {s}?",
            "What have we said about {s}?")),
    "zh": (("关于{s}你知道什么？", "说说{s}。", "关于{s}我应该记住什么？", "{s}有什么记录？",
            "我跟你说过{s}什么？", "{s}有什么备注？"),
           ("提醒我一下{s}的情况。", "{s}有什么需要注意的？", "我们之前对{s}说过什么？")),
}
_KIND_TEMPLATES: dict[str, dict[str, str]] = {
    "en": {"preference": "What is the preference about {s}?", "convention": "What is the convention for {s}?",
           "pitfall": "What goes wrong with {s}, and the fix?", "procedure": "How is {s} done?",
           "decision": "What was decided about {s}?", "project": "What is the project fact about {s}?"},
    "zh": {"preference": "{s}有什么偏好？", "convention": "{s}的约定是什么？",
           "pitfall": "{s}有什么坑，怎么解决？", "procedure": "{s}怎么做？",
           "decision": "关于{s}做了什么决定？", "project": "{s}项目有什么情况？"},
}


def language(text: str) -> str:
    """``"zh"`` for a text with Chinese (CJK) characters, else ``"en"``."""
    return "zh" if has_cjk(text) else "en"


def topic(item: MemoryItem) -> str:
    """What a question about ``item`` names: its subject, its topic, else its first words."""
    for value in (item.subject, item.metadata.get("topic")):
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    if has_cjk(item.text):
        return item.text.strip()[:8]
    kept = [w for w in re.findall(r"[^\W_][\w.+#/-]*", item.text) if w.lower() not in STOPWORDS]
    return " ".join(kept[:4]) or item.text.strip()[:40]


def render_pairs(item: MemoryItem, *, phrasings: int = 4, held_out: bool = False) -> list[Pair]:
    """Question-and-answer pairs that teach ``item``, in its language.

    ``phrasings`` questions per memory (the kind's own question first, then general
    ones); ``held_out=True`` gives instead the phrasings training never uses. The answer
    is the memory's text on one line.
    """
    lang = language(item.text)
    train, kept_out = _TEMPLATES[lang]
    if held_out:
        templates = list(kept_out)
    else:
        own = _KIND_TEMPLATES[lang].get(item.kind)
        templates = ([own] if own else []) + list(train)
        templates = templates[: max(1, phrasings)]
    subject = topic(item)
    answer = " ".join(item.text.split())
    return [Pair(item.id, t.format(s=subject), answer, lang) for t in templates]


# --- the manifest and the base model's hash ----------------------------------------------

def model_folder_sha256(folder: str | os.PathLike[str]) -> str:
    """sha256 over a model folder's weight files (names and bytes, in name order)."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise ConfigError(f"{root}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) to hash")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def write_manifest(folder: str | os.PathLike[str], info: AdapterInfo) -> Path:
    """Write ``manifest.json`` (the adapter's record) into ``folder``, atomically."""
    target = Path(folder) / MANIFEST
    body = {"format": FORMAT, "format_version": FORMAT_VERSION, **info.model_dump(mode="json")}
    tmp = target.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


def read_manifest(folder: str | os.PathLike[str]) -> AdapterInfo:
    """The :class:`AdapterInfo` in ``folder``'s manifest; ConfigError if it is not one."""
    path = Path(folder) / MANIFEST
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable adapter manifest ({exc})") from exc
    if not isinstance(body, dict) or body.pop("format", None) != FORMAT:
        raise ConfigError(f"{path}: not a remem adapter manifest")
    if body.pop("format_version", None) != FORMAT_VERSION:
        raise ConfigError(f"{path}: adapter manifest of another format version; retrain it")
    return AdapterInfo.model_validate({**body, "path": str(Path(folder))})


# --- staleness and the registry ------------------------------------------------------------

def staleness(info: AdapterInfo, current: Mapping[str, MemoryItem]) -> dict[str, str]:
    """Memory id -> why the adapter no longer matches it: ``purged`` (gone), its status
    (``superseded``, ``forgotten``, ``archived``, ``held``) or ``changed`` (a new version).

    ``current`` maps the ids the adapter holds to the memories as they are now; an
    empty result means the adapter is up to date.
    """
    reasons: dict[str, str] = {}
    for memory_id in info.memory_ids:
        now = current.get(memory_id)
        if now is None:
            reasons[memory_id] = "purged"
        elif now.status != "active":
            reasons[memory_id] = now.status
        elif now.version != info.memory_versions.get(memory_id, now.version):
            reasons[memory_id] = "changed"
    return reasons


def training_due(info: AdapterInfo | None, eligible: Sequence[MemoryItem], stale: Mapping[str, str],
                 train_after: int) -> str | None:
    """Why a scope's adapter should be (re)trained now, or None.

    ``eligible``: what :func:`select_memories` chooses now; ``stale``: what
    :func:`staleness` found for the current adapter; ``train_after``: how many eligible
    memories the adapter does not hold yet make a new one worth training.
    """
    if not eligible:
        return None
    if info is None:
        return f"no adapter yet; {len(eligible)} memories" if len(eligible) >= train_after else None
    if stale:
        return f"stale: {len(stale)} of its memories changed ({', '.join(sorted(set(stale.values())))})"
    new = [m for m in eligible if m.id not in info.memory_ids]
    return f"{len(new)} new memories" if len(new) >= train_after else None


@dataclass(frozen=True)
class AdapterState:
    """An adapter with what changed since it was trained (empty ``stale``: current)."""

    info: AdapterInfo
    stale: dict[str, str] = field(default_factory=dict)

    @property
    def is_stale(self) -> bool:
        return bool(self.stale)


def scope_folder(scope: Scope) -> str:
    """A folder name for a scope's adapter: readable, and unique by a short hash."""
    parts = [scope.org_id, scope.user_id or "-", scope.agent_id or "-", scope.project or "-"]
    readable = "~".join(_FOLDER_SAFE.sub("_", p)[:32] for p in parts)
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{readable}~{digest}"


def scope_of(info: AdapterInfo) -> Scope:
    """The exact scope an adapter was trained for."""
    return Scope(**{k: v for k, v in info.scope.items() if k in ("org_id", "user_id", "agent_id", "project")})


class AdapterRegistry:
    """The adapters of one store, under ``root``: one folder per scope.

    >>> reg = AdapterRegistry("~/.remem/remem.adapters")
    >>> reg.folder(Scope(user_id="alice"))   # where alice's adapter is written
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def folder(self, scope: Scope) -> Path:
        """Where the adapter of ``scope`` lives (whether or not it exists yet)."""
        return self.root / scope_folder(scope)

    def get(self, scope: Scope) -> AdapterInfo | None:
        """The adapter of exactly ``scope``, or None."""
        folder = self.folder(scope)
        return read_manifest(folder) if (folder / MANIFEST).is_file() else None

    def all(self) -> list[AdapterInfo]:
        """Every adapter with a readable manifest, by folder name."""
        if not self.root.is_dir():
            return []
        found = []
        # a folder whose name starts with "." is one being trained or replaced
        for folder in sorted(p for p in self.root.iterdir()
                             if p.is_dir() and not p.name.startswith(".") and (p / MANIFEST).is_file()):
            try:
                found.append(read_manifest(folder))
            except ConfigError:
                continue  # a folder being replaced, or a foreign one: not an adapter of ours
        return found

    def holding(self, memory_ids: Sequence[str]) -> list[AdapterInfo]:
        """The adapters that hold any of ``memory_ids``."""
        wanted = set(memory_ids)
        return [info for info in self.all() if wanted & set(info.memory_ids)]

    def install(self, built: str | os.PathLike[str], scope: Scope) -> Path:
        """Move a freshly trained adapter folder into place for ``scope``, replacing the
        old one; the swap is two renames, so a reader finds the old or the new, whole."""
        target = self.folder(scope)
        target.parent.mkdir(parents=True, exist_ok=True)
        old = target.with_name(f".{target.name}.old.{os.getpid()}")
        if target.exists():
            os.replace(target, old)
        os.replace(built, target)
        shutil.rmtree(old, ignore_errors=True)
        return target

    def remove(self, scope: Scope) -> bool:
        """Delete the adapter of ``scope``; False when there was none."""
        folder = self.folder(scope)
        if not folder.exists():
            return False
        shutil.rmtree(folder)
        return True


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
