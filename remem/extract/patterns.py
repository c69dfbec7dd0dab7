"""The turn rules, English and Chinese, as tables: name, kind, pattern, how to word it.

Each pattern is matched at the start of a clause (or of a sentence, for ``scope
"sentence"``) after contractions are expanded ("don't" -> "do not") and leading fillers
("ok,", "honestly", "嗯，") are dropped. The first rule that matches a clause wins, so
order matters: specific before general.

``render`` is a format string over the match: ``{clause}`` the whole clause, ``{body}``
and other named groups, ``{verb3}`` the verb in the third person, ``{Subj}`` the subject
as written in English ("User", "Bob"), ``{subj}`` as written in Chinese ("用户", "李雷").
``who="person"`` rules only read what people say about themselves and their work;
``who="any"`` rules read the agent's turns too. ``about="speaker"`` memories are about
whoever spoke; ``about="project"`` ones about the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["EN_RULES", "STACK", "ZH_RULES", "Rule"]


@dataclass(frozen=True)
class Rule:
    """One pattern and what it yields."""

    name: str
    kind: str
    pattern: re.Pattern[str]
    render: str = "{clause}"
    scope: Literal["clause", "sentence"] = "clause"
    who: Literal["person", "any"] = "person"
    about: Literal["speaker", "project"] = "speaker"
    confidence: float = 0.8
    needs_date: bool = False  # only when the clause holds a date ("we painted ... last week")
    techy: bool = False  # only when the body names a tool, a version, a command or a Name
    stack: bool = False  # only when the body starts with a language, runtime or tool of STACK


def _en(name: str, kind: str, regex: str, render: str = "{clause}", **kw: object) -> Rule:
    return Rule(name, kind, re.compile(regex, re.IGNORECASE), render, **kw)  # type: ignore[arg-type]


def _zh(name: str, kind: str, regex: str, render: str = "{clause}", **kw: object) -> Rule:
    return Rule(name, kind, re.compile(regex), render, **kw)  # type: ignore[arg-type]


#: Names of languages, runtimes, databases and tools: "we use X" with one of these is a
#: fact about the project's stack rather than a team convention.
STACK = frozenset("""
python postgres postgresql mysql mariadb sqlite redis mongodb django flask fastapi rails react
vue angular svelte next.js nuxt node node.js deno bun typescript javascript go golang rust java
kotlin swift ruby php docker kubernetes k8s helm terraform aws gcp azure celery kafka rabbitmq
nginx graphql grpc pnpm yarn npm poetry uv pip conda vite webpack tailwind elasticsearch
clickhouse spring dotnet .net c# scala elixir haskell
""".split())

_PAST = (r"went|visited|started|finished|completed|ran|joined|attended|bought|got|adopted|"
         r"painted|took|signed up|lost|won|met|made|wrote|read|watched|saw|gave|traveled|"
         r"travelled|graduated|married|celebrated|hosted|tried|learned|learnt|quit|left|"
         r"launched|published|received|passed|broke|spent|baked|cooked|built|organized|"
         r"organised|volunteered|performed|released|sold|flew|drove|climbed|hiked|moved into")
_LIKE = (r"prefer|like|love|enjoy|adore|hate|dislike|detest|loathe|cannot stand|can not stand|"
         r"do not like|do not want|do not enjoy|would rather|really like|really love|"
         r"am (?:a )?(?:big |huge )?fan of|am not (?:a )?fan of")
_ARTIFACT = (r"tests?|test files|unit tests|fixtures|migrations|config|configs|configuration|"
             r"settings|docs|documentation|branch names|branches|commit messages|commits|"
             r"file names|filenames|functions|function names|classes|class names|variables|"
             r"constants|modules|imports|docstrings|comments|log messages|logs|prs|"
             r"pull requests|tags|releases|endpoints|env vars|scripts|templates|schemas")
_LANGS = r"chinese|english|french|german|spanish|japanese|korean|portuguese|italian|russian"

EN_RULES: tuple[Rule, ...] = (
    # --- said for the whole sentence --------------------------------------------------
    _en("en.procedure.to", "procedure",
        r"^to (?P<goal>[\w\s/-]{2,40}?)\s*[,:]\s*(?P<body>.+(?:,|;|\bthen\b).+)$",
        scope="sentence", who="any", about="project", confidence=0.7),
    _en("en.procedure.steps", "procedure",
        r"^(?:the )?steps? (?:to|for) (?P<goal>.+?) (?:is|are)\s*:?\s*(?P<body>.+)$",
        scope="sentence", who="any", about="project", confidence=0.7),
    _en("en.pitfall.marker", "pitfall",
        r"^(?:watch out|be careful|careful|heads[ -]up|note that|note|beware|gotcha|warning|"
        r"caution|fyi)\s*[:,!-]?\s+(?:that\s+)?(?P<body>(?!with\b|about\b|around\b|when\b)"
        r".{6,})$", "{body}",
        scope="sentence", who="any", about="project"),
    _en("en.pitfall.careful_with", "pitfall",
        r"^(?:be )?careful (?:with|about|around|when)\b.{6,}$", scope="sentence", who="any",
        about="project"),
    _en("en.pitfall.needs", "pitfall",
        r"^(?P<body>.+?\b(?:need|needs|require|requires) (?:a running|an? [\w-]+ running|"
        r".+? to be (?:running|installed|set|exported|started))\b.+)$", "{body}",
        scope="sentence", who="any", about="project", confidence=0.7),
    _en("en.pitfall.breaks", "pitfall",
        r"^(?P<body>.+?\b(?:does not work with|does not work on|breaks|is broken (?:on|with|in)|"
        r"fails (?:if|when|unless|on|with)|crash(?:es)? (?:if|when|on)|hangs (?:if|when|on)|"
        r"only works (?:if|when|with))\b.+)$", "{body}",
        scope="sentence", who="any", about="project", confidence=0.7),
    # --- communication style and standing instructions --------------------------------
    _en("en.style.language", "preference",
        rf"^(?:please )?(?:always )?(?:answer|reply|respond|talk|write|speak)(?: to me)? "
        rf"(?:only )?in (?P<body>{_LANGS})\b.*$", confidence=0.9),
    _en("en.style.length", "preference",
        r"^(?:please )?(?:keep|make) (?:your |the |all )?(?:answers|responses|replies|"
        r"explanations|messages|summaries|it|them) (?P<body>short|shorter|brief|concise|terse|"
        r"detailed|simple)\b.*$", confidence=0.9),
    _en("en.style.name", "preference", r"^(?:please |just )?call me (?P<body>\w[\w .'-]*)$",
        confidence=0.9),
    _en("en.preference.like", "preference",
        rf"^i (?:really |much |strongly |definitely |absolutely |kind of |also |would |"
        rf"usually |generally )*"
        rf"(?P<verb>{_LIKE})\s+(?P<body>.+)$", "{Subj} {verb3} {body}"),
    _en("en.preference.favourite", "preference",
        r"^my (?:all-time )?favou?rite (?P<what>[\w -]{1,30}?) (?:is|are) (?:still )?(?P<body>.+)$",
        "{Subj}'s favourite {what} is {body}"),
    _en("en.preference.passion", "preference",
        r"^(?P<body>[\w -]{2,40}?) is (?:my|a) (?:passion|favou?rite thing|thing i love)\b.*$",
        "{body} is {Subj}'s passion"),
    _en("en.preference.from_now_on", "preference",
        r"^(?:from now on|going forward|in (?:the )?future|henceforth)\s*[,:]?\s+(?P<body>.+)$"),
    _en("en.preference.from_now_on_end", "preference",
        r"^(?P<body>.+?)\s*,?\s+(?:from now on|going forward|in (?:the )?future)$"),
    _en("en.preference.always", "preference",
        r"^(?:please\s+)?(?P<body>(?:always|never)\s+(?!mind\b|the\b|a\b|an\b|same\b|ever\b|"
        r"been\b|was\b|is\b|again\b)\w.+)$", "{body}", confidence=0.85),
    _en("en.preference.do_not", "preference",
        r"^(?:please\s+)?(?P<body>do not\s+(?!worry|mind|bother|know|think|get|understand|see|"
        r"care|remember|have|need)\w.+)$", "{body}", confidence=0.85),
    _en("en.preference.stop", "preference",
        r"^(?:please\s+)?(?P<body>(?:stop|quit) \w+ing\b.+)$", "{body}", confidence=0.8),
    _en("en.preference.rather", "preference",
        r"^(?:please\s+)?(?P<body>(?:give|show|send|tell|answer|reply|explain|write) (?:me )?"
        r".+\b(?:rather than|instead of)\b.+)$", "{body}", confidence=0.75),
    _en("en.preference.no", "preference",
        r"^(?P<body>no (?!way|problem|worries|idea|thanks|need|one|clue)\w+(?: \w+)? "
        r"(?:in|on|for|when|inside|during|at|anywhere)\b.+)$", "{body}"),
    _en("en.preference.ask_first", "preference",
        r"^(?:please\s+)?(?P<body>(?:ask|check with me|confirm with me|tell me) "
        r"(?:first )?before .+)$", "{body}"),
    # --- decisions ------------------------------------------------------------------------
    _en("en.decision.decided", "decision",
        r"^(?:we|i|the team) (?:have |has |just |finally )?(?P<verb>decided|agreed|settled|"
        r"resolved) (?P<body>(?:to|on|that) .+)$", "{verb} {body}", about="project"),
    _en("en.decision.lets", "decision",
        r"^let us (?P<body>(?:not )?(?:go with|use|stick with|switch|move|keep|drop|adopt|pick|"
        r"choose|go for|migrate|replace|standardi[sz]e on)\b (?!it\b|that\b|this\b|them\b).+)$",
        "Decided to {body}", about="project"),
    _en("en.decision.label", "decision", r"^decision\s*:\s*(?P<body>.+)$", "Decision: {body}",
        about="project", confidence=0.9),
    _en("en.decision.went", "decision",
        r"^we (?:have |finally |eventually )?(?P<body>(?:went with|chose|picked|opted for|"
        r"are going with|will go with|switched to|migrated to|settled on) .+)$", "{body}",
        about="project"),
    # --- conventions ----------------------------------------------------------------------
    _en("en.project.we_use", "project",
        r"^we (?:only |mostly |mainly )?(?:use|target|support|run on|deploy (?:to|on)|host on|"
        r"are on) (?P<body>.+)$", who="any", about="project", stack=True),
    _en("en.convention.stated", "convention",
        r"^(?:our|the) (?:team )?(?:convention|rule|policy|standard|style|guideline)s? "
        r"(?:here |in this (?:repo|project|codebase) )?(?:is|are) (?:that |to )?(?P<body>.+)$",
        about="project", confidence=0.85),
    _en("en.convention.we", "convention",
        r"^(?:(?:in this (?:repo|project|codebase|team)|here)\s*,?\s+)?we (?P<adv>always |"
        r"usually |generally |typically |normally |never |do not |only )?(?P<verb>use|prefer|"
        r"run|write|keep|put|name|follow|squash|rebase|pin|avoid|require|store|prefix|format|tag|"
        r"document|review|deploy|merge|lint|ship|vendor|commit)\b\s*(?P<body>.*)$",
        about="project"),
    _en("en.convention.always", "convention",
        r"^(?:our|all|the) (?P<body>[\w -]{2,30}? (?:are|is|must be|should be) (?:always|never|"
        r"all)\b.+)$", about="project"),
    _en("en.convention.every", "convention",
        r"^(?:every|each|all) (?P<body>[\w -]{2,30}? (?:needs?|must|should|has to|have to|"
        r"requires?|gets?|goes|go|are|is|live|lives|need)\b.+)$", about="project"),
    _en("en.convention.artifact", "convention",
        rf"^(?:the |our |all )?(?P<body>(?:new |all |any |public |private |internal )?"
        rf"(?:{_ARTIFACT})\s+(?:go|goes|live|lives|belong|belongs|"
        rf"follow|follows|must|should|need to|needs to|are named|is named|are written|"
        rf"always|never|start with|end with|should be|must be)\b.+)$", about="project"),
    _en("en.convention.use", "convention",
        r"^(?:please\s+)?(?P<body>(?:use|prefer|name|write|prefix) (?!it\b|that\b|this\b|them\b|"
        r"the same\b)\S+.+)$", about="project", confidence=0.7),
    # --- the person -----------------------------------------------------------------------
    _en("en.profile.occupation", "profile",
        r"^i (?P<verb>am|have been|was) (?P<body>(?:a|an) (?!bit\b|little\b|lot\b|fan\b|"
        r"big fan\b|huge fan\b)\w.+)$", "{Subj} {verb3} {body}"),
    _en("en.profile.setup", "profile",
        r"^i (?P<verb>am on|am using|am running|use|work on|code on|develop on) "
        r"(?P<body>(?:a |an )?.+)$", "{Subj} {verb3} {body}", techy=True, confidence=0.7),
    _en("en.profile.trait", "profile",
        r"^i am (?P<body>(?:allergic|vegetarian|vegan|married|divorced|single|retired|"
        r"pregnant|left-handed|colou?r-?blind|deaf|diabetic|lactose intolerant|engaged|"
        r"self-employed|unemployed)\b.*)$", "{Subj} is {body}"),
    _en("en.profile.place", "profile",
        r"^i (?:just |recently |finally )?(?P<verb>live|moved|grew up|am from|come from|"
        r"am based|relocated|work|worked)\s+(?:mostly |mainly |usually |primarily )?"
        r"(?P<body>(?:in|to|from|at|near|for|as|on)\b.+)$",
        "{Subj} {verb3} {body}"),
    _en("en.event.family", "event",
        r"^my (?P<body>(?:daughter|son|wife|husband|partner|mom|mum|mother|dad|father|sister|"
        r"brother|grandma|grandmother|grandpa|grandfather|cousin|friend|best friend)\b.+?"
        r"\b(?:is getting married|got married|got engaged|is getting engaged|is having a baby|"
        r"had a baby|was born|passed away|is graduating|graduated)\b.*)$", "{Subj}'s {body}",
        confidence=0.7),
    _en("en.profile.family", "profile",
        r"^my (?P<body>(?:daughter|son|kids|children|wife|husband|partner|boyfriend|girlfriend|"
        r"mom|mum|mother|dad|father|parents|sister|brother|dog|cat|timezone|time zone|"
        r"birthday|name|job|family|grandma|grandmother|grandpa|grandfather|twins|baby)\b.+)$",
        "{Subj}'s {body}"),
    _en("en.profile.have", "profile",
        r"^i (?P<verb>have|own|have got)\s+(?P<body>(?:a|an|two|three|four|five|\d+|some) "
        r"(?!question|idea|problem|meeting|bug|minute|second|feeling|issue|call|few|quick|"
        r"lot)\w.+)$", "{Subj} {verb3} {body}"),
    _en("en.profile.ongoing", "profile",
        r"^i (?:have )?been (?P<body>(?:learning|playing|studying|practicing|practising|"
        r"training|teaching|volunteering|running|writing|living|doing|collecting|coaching)\b.+)$",
        "{Subj} has been {body}"),
    _en("en.profile.skill", "profile",
        r"^i (?P<verb>speak|play|teach|study|know how to|can speak|can play|used to \w+)\s+"
        r"(?P<body>.+)$", "{Subj} {verb3} {body}"),
    _en("en.profile.childhood", "profile",
        rf"^i (?P<verb>{_PAST}|played|studied|lived)\s+(?P<body>.+\b(?:as a (?:kid|child|teen|"
        rf"teenager)|in (?:high )?school|in college|growing up|when i was (?:young|little|a kid))"
        rf"\b.*)$", "{Subj} {verb} {body}"),
    # --- things that happened ---------------------------------------------------------
    _en("en.event.plan", "event",
        r"^i am (?P<verb>starting|launching|opening|organi[sz]ing|planning to|hosting)\s+"
        r"(?P<body>.+)$", "{Subj} is {verb} {body}", confidence=0.7),
    _en("en.event.past", "event",
        rf"^i (?:just |finally |recently |also |actually |even )?(?P<verb>{_PAST})\s+"
        rf"(?P<body>.+)$", "{Subj} {verb} {body}", confidence=0.7),
    _en("en.event.we", "event",
        rf"^we (?:just |finally |recently |also )?(?P<verb>{_PAST})\s+(?P<body>.+)$",
        "{Subj}: {clause}", needs_date=True, confidence=0.6),
    # --- the project ----------------------------------------------------------------------
    _en("en.project.uses", "project",
        r"^(?:the|this|our) (?P<what>project|repo|repository|codebase|app|application|service|"
        r"backend|frontend|front-end|back-end|api|site|website|ci|pipeline|docs|documentation|"
        r"database|db|stack|cli|build|monorepo)\s+(?P<verb>uses|is built with|is built on|"
        r"are built with|is written in|runs on|run on|is deployed (?:to|on)|is hosted on|is|"
        r"talks to|depends on|targets|requires|needs)\s+(?P<body>.+)$",
        who="any", about="project", techy=True),
    _en("en.project.it_is", "project",
        r"^(?:it is|this is) (?P<body>(?:a|an) .+?\b(?:app|application|project|service|"
        r"codebase|monorepo|library|package|api|site|cli|tool)\b.*)$", "The project is {body}",
        who="any", about="project", techy=True),
    _en("en.project.we_are_on", "project", r"^we are (?:on|running|using) (?P<body>.+)$",
        who="any", about="project", techy=True),
    _en("en.project.command", "project",
        r"^(?:you can |just |please )?(?:run|build|test|lint|format|type-?check|deploy|start|"
        r"install|serve|check|compile|bundle)\b(?: [\w\s-]{0,30}?)? (?:with|using|via|by running)"
        r" (?P<body>`[^`]+`.*|\S+.*)$", who="any", about="project", techy=True),
    _en("en.project.command_does", "project",
        r"^`?(?P<body>(?:make|npm run|pnpm|yarn|cargo|go|python3?|uv run|poetry run|just|task|"
        r"nox|tox|\./)\S*(?: [\w:./-]+)?`? (?:regenerates|generates|builds|runs|starts|deploys|"
        r"creates|installs|formats|lints|checks|cleans|resets|seeds|migrates|rebuilds|updates)\b"
        r".+)$", who="any", about="project", confidence=0.7),
    _en("en.project.to_run", "project",
        r"^to (?P<goal>[\w\s-]{2,40}?),? (?:just )?(?:run|use|type) (?P<body>`[^`]+`.*|\S+.*)$",
        who="any", about="project", techy=True),
    _en("en.project.built", "project",
        r"^(?:the )?(?:docs|documentation|frontend|backend|site|package|wheel|images?|"
        r"containers?|app)\s+(?:is|are) (?:built|generated|deployed|served|published|bundled) "
        r"(?:with|by|using|on|to) (?P<body>.+)$", who="any", about="project", techy=True),
    # --- other facts ------------------------------------------------------------------
    _en("en.fact.value", "fact",
        r"^(?:the|our) (?P<what>(?:[\w-]+ ){0,2}(?:server|host|hostname|url|endpoint|address|"
        r"port|password|limit|timeout|quota|bucket|key|token|region|domain|ip|dsn|account|"
        r"email|channel|dashboard|version|branch|database|db|cluster|queue|cache|instance))\s+"
        r"(?:is|are|lives at|is at)\s+(?P<body>.+)$",
        who="any", about="project", confidence=0.7),
    _en("en.fact.stored", "fact",
        r"^(?:the|our) (?P<body>(?:[\w-]+ ){0,2}(?:secrets?|credentials|keys|passwords|tokens|"
        r"backups|assets|dumps|certificates|certs)\s+(?:live|lives|are stored|is stored|"
        r"are kept|is kept|are|is) (?:in|on|at|under)\b.+)$", who="any", about="project",
        confidence=0.7),
    _en("en.fact.port", "fact", r"^(?P<body>port \d+ .+)$", who="any", about="project",
        confidence=0.6),
)

_ZH_TIME = (r"昨天|昨晚|前天|今天|今早|上周末?|上个?星期|上个?礼拜|上个?月|去年|前年|"
            r"[一二两三四五六七八九十几\d]+\s*(?:天|周|个星期|个月|年)以?前")
_ZH_JOB = r"(?:师|员|生|家|士|者|手|长|工|经理|老板|总监|主管|警察|律师|教授|老师|医生|护士|程序员)"

ZH_RULES: tuple[Rule, ...] = (
    # --- said for the whole sentence --------------------------------------------------
    _zh("zh.procedure.steps", "procedure", r"^(?P<goal>.{1,20}?)的?(?:步骤|流程)(?:是|如下)",
        scope="sentence", who="any", about="project", confidence=0.7),
    _zh("zh.procedure.first_then", "procedure", r"^.{0,20}先.+[，,]\s*(?:然后|再|接着).+",
        scope="sentence", who="any", about="project", confidence=0.6),
    _zh("zh.pitfall.marker", "pitfall",
        r"^(?:注意|小心|当心|千万注意|提醒一下|坑)\s*[：:，,！!]\s*(?P<body>.{3,})$", "{body}",
        scope="sentence", who="any", about="project"),
    _zh("zh.pitfall.breaks", "pitfall", r"^(?P<body>.+?(?:会导致|会报错|会崩溃|会失败|不兼容).*)$",
        "{body}", scope="sentence", who="any", about="project", confidence=0.7),
    _zh("zh.decision.decided", "decision",
        r"^(?:我们|团队|大家)?(?:最后|最终)?(?:已经)?(?:决定|定了|商量好|约好)(?P<body>.+)$",
        scope="sentence", about="project"),
    _zh("zh.decision.chose", "decision",
        r"^(?:我们|团队)?(?:最后|最终)?(?:我们)?(?:选了|选择了|选用了|采用了|定下了)(?P<body>.+)$",
        scope="sentence", about="project"),
    _zh("zh.decision.then", "decision", r"^那(?:就|我们就)(?:用|选|上|改成|换成)(?P<body>.+?)吧",
        scope="sentence", about="project"),
    _zh("zh.project.project", "project",
        r"^(?:这个|本|我们的|该|整个)?项目(?:用的是|用|使用|采用|基于|是用|是|跑在)",
        scope="sentence", who="any", about="project"),
    _zh("zh.project.command", "project",
        r"^(?:跑|运行|执行)?\s*(?:测试|单测|单元测试|构建|编译|打包|部署|启动|格式化|检查|lint)"
        r"\s*(?:用|使用|是用|的命令是|命令是)", scope="sentence", who="any", about="project"),
    _zh("zh.project.part", "project",
        r"^(?:我们的?|这个项目的?|项目的?)?(?:前端|后端|服务端|客户端|数据库|缓存|CI|ci)"
        r"(?:是用|用的是|是|用|使用|跑在)",
        scope="sentence", who="any", about="project", techy=True),
    _zh("zh.project.deploy", "project", r"^(?:部署|跑|托管)在", scope="sentence", who="any",
        about="project"),
    # --- communication style and standing instructions --------------------------------
    _zh("zh.style.length", "preference", r"^.{0,4}(?:回答|回复|说话|解释)(?:得|的)?(?:简短|简洁|短)",
        confidence=0.9),
    _zh("zh.style.language", "preference", r"^.{0,4}(?:用|说)(?:中文|英文|英语|汉语)(?:回答|回复|交流)",
        confidence=0.9),
    _zh("zh.style.name", "preference", r"^.{0,4}叫我\S", confidence=0.9),
    _zh("zh.preference.like", "preference",
        r"^我(?P<body>(?:很|最|比较|更|特别|非常|真的|也|还是|不太|不怎么|挺|还挺)?(?:喜欢|爱|讨厌|"
        r"不喜欢|受不了|偏好|"
        r"习惯|不习惯|讨厌)(?!这|那|它|你).+)$", "{subj}{body}"),
    _zh("zh.preference.from_now_on", "preference",
        r"^(?:以后|今后|从现在起|从现在开始|往后)(?!再).*(?:都|一律|统一|全部|一直|别|不要).+$"),
    _zh("zh.preference.do_not", "preference",
        r"^(?:请)?(?:小心|注意|千万)?(?:不要|别|不许|禁止|永远不要|永远别)(?!急|着急|担心|客气|紧|管|怕|"
        r"慌|介意).+$", confidence=0.85),
    _zh("zh.preference.always", "preference", r"^(?:请)?(?:总是|始终|一直|每次都|务必|永远)(?!不).+$",
        confidence=0.85),
    _zh("zh.preference.ask_first", "preference", r"^.*(?:之前|前)先(?:跟|和|问|找|让)我.*$"),
    _zh("zh.preference.next_time", "preference",
        r"^(?:下次|以后每次|每次)(?!再说).{0,10}?(?:的时候|时)?.+$", confidence=0.75),
    _zh("zh.preference.when_not", "preference",
        r"^.{1,15}?(?:的话|的时候|时)(?:就)?(?:不要|别|不许|禁止|一定要|务必)", confidence=0.75),
    # --- conventions ----------------------------------------------------------------------
    _zh("zh.convention.stated", "convention",
        r"^(?:我们|团队|组里|公司|这里|项目)?\S{0,2}?的?(?:约定|规范|规矩|惯例|规则)(?:是|：|:)",
        about="project",
        confidence=0.85),
    _zh("zh.convention.rule", "convention", r"^(?:我们|团队|公司)?(?:团队)?(?:规定|要求)",
        about="project"),
    _zh("zh.convention.we", "convention",
        r"^我们(?:这里|团队)?(?:都|一般|通常|一直|统一|只)?(?P<neg>不)?(?:用|使用|采用|写|遵循)"
        r"(?P<body>.+)$", about="project"),
    _zh("zh.convention.uniform", "convention", r"^.{1,12}?(?:统一|一律)(?:用|使用|写|放|采用|叫)",
        about="project"),
    _zh("zh.convention.place", "convention", r"^.{1,12}?(?:放在|放到|都放|统一放)", about="project"),
    _zh("zh.convention.every", "convention", r"^(?:每个|每次|所有).{1,12}?(?:都|必须|需要|要)",
        about="project"),
    _zh("zh.convention.before", "convention", r"^.{1,12}?(?:之前|前)(?:要|必须|需要|得)(?:先)?",
        about="project"),
    _zh("zh.convention.naming", "convention", r"^.{0,8}命名(?:用|采用|使用|统一|一律|要)",
        about="project"),
    # --- the person -----------------------------------------------------------------------
    _zh("zh.profile.job", "profile",
        rf"^我(?P<body>是(?!说|想|不是|不|在)(?:一名|一个|一位|个|名)?(?:.{{0,10}}?{_ZH_JOB}|做.{{1,10}}的))"
        rf"(?:[，,]|$)",
        "{subj}{body}"),
    _zh("zh.profile.place", "profile",
        r"^我(?P<body>(?:现在|目前|一直)?(?:住在|家在|来自|搬到|搬去|在.{1,8}工作|在.{1,8}上班).*)$",
        "{subj}{body}"),
    _zh("zh.profile.family", "profile",
        r"^我(?:的)?(?P<body>(?:女儿|儿子|老婆|老公|妻子|丈夫|太太|先生|妈妈|爸爸|父母|孩子|哥哥|"
        r"姐姐|弟弟|妹妹|男朋友|女朋友|对象|家人|猫|狗).+)$", "{subj}的{body}"),
    _zh("zh.profile.learning", "profile",
        r"^我(?P<body>(?:最近|现在|一直)?(?:在学|在练|学了|会说|会弹|会打|会用|精通|擅长|在准备|在备考|"
        r"在读|在考).+)$",
        "{subj}{body}"),
    _zh("zh.profile.pet", "profile", r"^我(?P<body>家?(?:养了|有)(?:一|两|三|四|\d)(?:只|条|个|位).+)$",
        "{subj}{body}"),
    _zh("zh.profile.trait", "profile", r"^我(?P<body>(?:对.{1,8}过敏|不吃.+|吃素|结婚了|单身).*)$",
        "{subj}{body}"),
    _zh("zh.fact.value", "fact",
        r"^.{0,10}?(?:地址|域名|端口|密码|密钥|账号|限流|超时|配额|IP|ip|token|Token)(?:是|为|在|：|:)",
        who="any", about="project", confidence=0.7),
    # --- things that happened ---------------------------------------------------------
    _zh("zh.event.me", "event", rf"^我(?P<body>(?:们)?.{{0,4}}?(?:{_ZH_TIME}).+)$", "{subj}{body}",
        confidence=0.7),
    _zh("zh.event.time_first", "event", rf"^(?:{_ZH_TIME})(?:我们?|咱们).+$", "{subj}：{clause}",
        confidence=0.7),
)
