"""The console's interface text in English and Chinese, and the choice between them.

The language comes from ``?lang=`` (remembered in a cookie), else the cookie, else the
browser's ``Accept-Language``. Stored memories are shown as they were written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

__all__ = ["LANGUAGES", "TEXT", "pick_language", "translator"]

LANGUAGES = ("en", "zh")

#: key -> (English, Chinese)
TEXT: dict[str, tuple[str, str]] = {
    "console": ("remem console", "remem 控制台"),
    "memories": ("Memories", "记忆"),
    "review": ("Review", "待审"),
    "sessions": ("Sessions", "会话"),
    "timeline": ("Timeline", "时间线"),
    "mindmap": ("Mind map", "思维导图"),
    "network": ("Network", "记忆网络"),
    "jobs": ("Jobs & health", "任务与状态"),
    "logout": ("Log out", "退出"),
    "login": ("Log in", "登录"),
    "login_hint": ("This server uses API keys. Paste a key from `remem keys create`; you will "
                   "see only what the key may see.",
                   "此服务使用 API 密钥。请粘贴 `remem keys create` 生成的密钥；"
                   "你只能看到该密钥有权查看的内容。"),
    "api_key": ("API key", "API 密钥"),
    "bad_key": ("That key is not valid or was revoked.", "该密钥无效或已被吊销。"),
    "search": ("Search", "搜索"),
    "search_hint": ("Search memories…", "搜索记忆…"),
    "kind": ("Kind", "类型"),
    "status": ("Status", "状态"),
    "any": ("any", "全部"),
    "org": ("Org", "组织"),
    "user": ("User", "用户"),
    "agent": ("Agent", "智能体"),
    "project": ("Project", "项目"),
    "session": ("Session", "会话"),
    "filter": ("Filter", "筛选"),
    "text": ("Text", "内容"),
    "maturity": ("Maturity", "成熟度"),
    "subject": ("Subject", "主题"),
    "time": ("Time", "时间"),
    "since": ("Since", "起始"),
    "until": ("Until", "截止"),
    "score": ("Score", "得分"),
    "next_page": ("Next page", "下一页"),
    "first_page": ("First page", "第一页"),
    "no_memories": ("No memories here.", "这里没有记忆。"),
    "sources": ("Sources", "来源"),
    "no_sources": ("Written directly, no source turns.", "直接写入，没有来源对话。"),
    "versions": ("Versions", "版本"),
    "edges": ("Edges", "关联"),
    "no_edges": ("No edges.", "没有关联。"),
    "feedback": ("Feedback", "反馈"),
    "injected": ("Where it was injected", "注入记录"),
    "not_injected": ("Not given to a model yet.", "尚未提供给模型。"),
    "edit": ("Edit", "编辑"),
    "save": ("Save as a new version", "保存为新版本"),
    "reason": ("Reason", "原因"),
    "pin": ("Pin", "置顶"),
    "unpin": ("Unpin", "取消置顶"),
    "forget": ("Forget", "遗忘"),
    "restore": ("Restore", "恢复"),
    "purge": ("Purge", "彻底删除"),
    "purge_confirm": ("Delete this memory for good, with everything derived from it? This "
                      "cannot be undone.", "永久删除此记忆及其派生的一切？此操作无法撤销。"),
    "purge_yes": ("Yes, delete it for good", "是的，永久删除"),
    "cancel": ("Cancel", "取消"),
    "purged": ("Deleted for good: {n} memories.", "已永久删除 {n} 条记忆。"),
    "helpful": ("Helpful", "有帮助"),
    "wrong": ("Wrong", "错误"),
    "stale": ("Stale", "过时"),
    "note": ("Note", "备注"),
    "send": ("Send", "提交"),
    "pinned": ("pinned", "已置顶"),
    "version": ("version", "版本"),
    "strength": ("Strength", "强度"),
    "replaced": ("Replaced:", "取代了："),
    "replaced_by": ("Replaced on {when} by:", "于 {when} 被取代为："),
    "strength_hint": ("1.0 when new or just used, halving unused; archived under {v}",
                      "新建或刚使用时为 1.0，不用则逐渐减半；低于 {v} 时归档"),
    "held": ("Held for review", "待审核内容"),
    "held_hint": ("Text that reads like an instruction to the agent is held until a person "
                  "decides.", "看起来像是对智能体下指令的内容会被暂存，等待人工决定。"),
    "skill_candidates": ("Skill candidates", "技能候选"),
    "flagged": ("Flagged after a supersession", "因被取代而标记"),
    "approve": ("Approve", "批准"),
    "reject": ("Reject", "拒绝"),
    "inbox_empty": ("Nothing waits for review.", "没有待审核的内容。"),
    "no_sessions": ("No injections were logged yet.", "尚未记录任何注入。"),
    "door": ("Door", "入口"),
    "query": ("Query", "查询"),
    "given": ("Given", "提供的记忆"),
    "text_given": ("The text the model was given", "模型收到的文本"),
    "used": ("used", "已使用"),
    "tokens": ("Tokens", "令牌数"),
    "turns": ("Turns", "对话"),
    "as_of": ("As of", "截至"),
    "as_of_hint": ("Move the slider: what was known at each change.", "拖动滑块：查看每次变化时已知的内容。"),
    "now": ("now", "现在"),
    "show": ("Show", "显示"),
    "valid": ("valid", "有效期"),
    "heed_rate": ("Heed rate", "采纳率"),
    "queue": ("Queue", "队列"),
    "failed_jobs": ("Failed jobs", "失败的任务"),
    "retry": ("Retry", "重试"),
    "store": ("Store", "存储"),
    "embedder": ("Embedder", "嵌入模型"),
    "extractor": ("Extractor", "抽取器"),
    "no_jobs": ("No jobs.", "没有任务。"),
    "topics": ("Topics", "主题"),
    "error": ("Error", "错误"),
    "saved": ("Saved.", "已保存。"),
    "forgotten_note": ("Forgotten: it no longer shows in search.", "已遗忘：它不再出现在搜索中。"),
    "restored_note": ("Restored.", "已恢复。"),
    "approved_note": ("Approved.", "已批准。"),
    "rejected_note": ("Rejected.", "已拒绝。"),
    "language": ("中文", "English"),
    "id": ("Id", "编号"),
    "action": ("Action", "操作"),
    "when": ("When", "时间"),
    "other": ("Other memory", "另一条记忆"),
    "type": ("Type", "类型"),
    "csrf": ("The form was stale or came from another site; reload the page and try again.",
             "表单已过期或来自其他站点；请刷新页面后重试。"),
    "forbidden": ("This key may not do that.", "此密钥无权执行该操作。"),
}


def pick_language(query: str | None, cookie: str | None, accept: str | None) -> str:
    """The interface language: the one asked for, else the remembered one, else the
    browser's first choice among ours (English when none is)."""
    for value in (query, cookie):
        if value in LANGUAGES:
            return value
    for part in (accept or "").split(","):
        tag = part.split(";")[0].strip().lower()
        if tag.startswith("zh"):
            return "zh"
        if tag.startswith("en"):
            return "en"
    return "en"


def translator(lang: str, table: Mapping[str, tuple[str, str]] = TEXT) -> Callable[..., str]:
    """``t(key, **values)``: the text of ``key`` in ``lang``, with ``{name}`` filled in."""
    index = LANGUAGES.index(lang)

    def t(key: str, **values: object) -> str:
        text = table[key][index]
        return text.format(**values) if values else text

    return t
