"""Keyword and regex tables of the rule-based intent classifier (F02, seed 002).

Every table is compiled once, when :meth:`IntentRules.default` (or :func:`build_matcher`) runs;
classification only runs precompiled patterns. The classifier NFKC-normalizes and lower-cases
the text once, so matching is case-insensitive; write English terms and regexes in lower case.

Term conventions of :func:`build_matcher`:

* ``zh`` terms are literal strings matched anywhere (Chinese has no word boundaries);
* ``en`` terms are (lower-case) regex fragments matched on ASCII word boundaries, so ``hi``
  never matches inside ``this``; a space in a term matches any run of whitespace, ``" ?"``
  optional whitespace;
* ``regex`` terms are raw regex fragments, used as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_EN_LEFT = r"(?<![a-z0-9_])"
_EN_RIGHT = r"(?![a-z0-9_])"


@dataclass(frozen=True, slots=True)
class Matcher:
    """One named group of terms, compiled into at most two precompiled patterns.

    Chinese literals get a pattern of their own: an alternation of plain literals lets the
    regex engine skip ahead on the first character, which keeps long texts cheap.
    """

    name: str
    patterns: tuple[re.Pattern[str], ...]

    def find(self, text: str) -> str | None:
        """Return the first matched text in lower-cased ``text``, or ``None``."""
        for pattern in self.patterns:
            found = pattern.search(text)
            if found is not None:
                return found.group(0)
        return None

    def remove(self, text: str) -> str:
        """Replace every match in lower-cased ``text`` with a space."""
        for pattern in self.patterns:
            text = pattern.sub(" ", text)
        return text


def _en_fragment(term: str) -> str:
    """Turn an English fragment into regex: a space matches whitespace, ``" ?"`` optional."""
    return term.replace(" ?", "\0").replace(" ", r"\s+").replace("\0", r"\s*")


def compile_terms(
    zh: Iterable[str] = (), en: Iterable[str] = (), regex: Iterable[str] = ()
) -> tuple[re.Pattern[str], ...]:
    """Compile Chinese literals, then bounded English fragments and raw regexes together."""
    if any(isinstance(terms, str) for terms in (zh, en, regex)):
        raise TypeError("terms must be an iterable of strings, not a single string")
    patterns: list[re.Pattern[str]] = []
    literals = sorted({term.lower() for term in zh}, key=len, reverse=True)
    if literals:
        patterns.append(re.compile("|".join(re.escape(term) for term in literals)))
    words = [_en_fragment(term) for term in en]
    parts = [_EN_LEFT + "(?:" + "|".join(words) + ")" + _EN_RIGHT] if words else []
    parts += list(regex)
    if parts:
        patterns.append(re.compile("|".join(parts)))
    return tuple(patterns)


def _w(text: str) -> tuple[str, ...]:
    """Split a whitespace-separated list of terms (for terms without spaces)."""
    return tuple(text.split())


def build_matcher(
    name: str, zh: Iterable[str] = (), en: Iterable[str] = (), regex: Iterable[str] = ()
) -> Matcher:
    """Build a named :class:`Matcher` from the three kinds of terms."""
    return Matcher(name=name, patterns=compile_terms(zh, en, regex))


# --- external_action: operations on external systems -------------------------------------

_SERVICE_OBJECT = r"(?:一下|服务|实例|节点|容器|集群|进程|\s*[A-Za-z][\w.-]*)"

_ACTION: tuple[Matcher, ...] = (
    build_matcher(
        "restart",
        zh=_w("重启 重新启动 重起"),
        en=("restart(?:s|ed|ing)?", "reboot(?:s|ed|ing)?", "bounce the"),
    ),
    build_matcher(
        "start_stop",
        zh=_w("停掉 关掉 杀掉 杀死 干掉 下线 摘除节点 熔断"),
        en=(
            "kill(?:s|ed|ing)?",
            "terminate",
            "shut ?down",
            "(?:start|stop) (?:the )?(?:[\\w.-]+ )?"
            "(?:service|server|pod|job|container|instance|worker)s?",
            "drain",
            "failover",
        ),
        regex=(f"(?:启动|停止|关闭){_SERVICE_OBJECT}",),
    ),
    build_matcher(
        "cache",
        zh=_w("清理缓存 清除缓存 清空缓存 刷新缓存 删除缓存 清缓存 失效缓存"),
        en=("(?:clear|flush|purge|invalidate|evict|refresh)(?: the)? (?:\\w+ )?cache",),
        # "帮我清一下 redis 里 user:1001 的缓存": verb, then the object, then 缓存
        regex=(r"(?:清(?!楚|晰)|刷新|删除|删掉)(?:一下|掉|除|理|空)?[^，。,.!?？！\n]{0,30}?缓存",),
    ),
    build_matcher(
        "scale",
        zh=_w("扩容 缩容 扩缩容 加机器 增加副本 减少副本"),
        en=("scale (?:up|down|out|in|to)", "scale (?:the )?[\\w.-]+ (?:up|down|out|in|to)"),
        regex=(r"(?:副本|实例|pod)数?\s*(?:调|改|设|扩|缩)整?\s*(?:到|为|成)",),
    ),
    build_matcher(
        "deploy",
        zh=_w("回滚 回退版本 重新部署 部署 发布新版本 执行发布 灰度放量 切流"),
        en=(
            "roll ?back",
            "rolled back",
            "revert(?:ed)? the",
            "(?:re)?deploy(?:s|ed|ing)?",
            "release (?:the )?(?:new )?version",
            "promote the",
        ),
        regex=("切换流量",),
    ),
    build_matcher(
        "notify",
        zh=_w(
            "发送邮件 发邮件 发个邮件 发一封邮件 发送通知 发通知 发消息 发个消息 通知一下 "
            "钉钉通知 发短信"
        ),
        en=(
            "send (?:an? |the )?(?:e-?mail|message|notification|slack|sms|alert)s?",
            "e-?mail (?:the|him|her|them)",
            "notify",
            "page the on-?call",
        ),
    ),
    build_matcher(
        "ticket",
        zh=_w("创建工单 提工单 开工单 提个工单 建工单 建个工单 开个工单 提交工单"),
        en=(
            "(?:create|open|file|raise|submit) (?:an? |the )?(?:new )?"
            "(?:ticket|issue|incident|jira)s?",
        ),
    ),
    build_matcher(
        "execute",
        zh=_w(
            "执行脚本 运行脚本 执行命令 跑一下脚本 封禁 拉黑 解封 修改配置 更新配置 删除数据 删掉"
        ),
        en=(
            "(?:run|execute) (?:the |this |a )?(?:script|command|job|playbook|migration)",
            "(?:block|ban|unblock) (?:the )?(?:ip|user)",
            "(?:update|change|modify) (?:the )?config(?:uration)?",
            "drop (?:the )?table",
            "delete (?:the |this |all )?\\w+",
        ),
    ),
)

# --- external_data: real data from external systems --------------------------------------

_DATA: tuple[Matcher, ...] = (
    build_matcher(
        "logs",
        zh=_w("日志 报错信息 错误信息 异常堆栈 堆栈信息"),
        en=("logs?", "log entries", "log lines", "stack ?traces?", "error messages"),
    ),
    build_matcher(
        "metrics",
        zh=_w("指标 监控 错误率 延迟 耗时 响应时间 命中率 吞吐 告警 慢查询 内存使用 内存占用 负载"),
        en=(
            "metrics?",
            "latency",
            "p50",
            "p90",
            "p95",
            "p99",
            "qps",
            "rps",
            "throughput",
            "error ?rates?",
            "(?:cpu|memory|disk) (?:usage|utili[sz]ation|load)",
            "hit ?rate",
            "dashboards?",
            "alerts?",
            "alarms?",
            "response times?",
            "slow quer(?:y|ies)",
        ),
        regex=(r"(?<![a-z0-9])[45]xx(?![a-z0-9])",),
    ),
    build_matcher(
        "trace",
        zh=_w("链路 调用链"),
        en=("traces?", "trace[\\s_-]?ids?"),
        regex=(r"trace[-_ ]?id\s*[:=：]\s*[\w-]+",),
    ),
    build_matcher(
        "weather",
        zh=_w("天气 气温 下雨 下雪 空气质量 温度多少 多少度"),
        en=_w("weather temperature forecast raining snowing humidity"),
    ),
    build_matcher(
        "time",
        zh=_w("几点 现在时间 当前时间 什么时间了 几号 星期几"),
        en=(
            "what time",
            "what's the time",
            "current time",
            "time now",
            "local time",
            "what is the time",
            "what(?:'s| is) the date",
            "what day is it",
        ),
    ),
    build_matcher(
        "finance",
        zh=_w("股价 股票 汇率 币价 行情 大盘 涨跌 指数涨 指数跌 涨了吗 跌了吗 涨幅 跌幅"),
        en=("stocks?", "stock price", "share price", "exchange rate", "bitcoin price", "price of"),
    ),
    build_matcher(
        "news",
        zh=_w("新闻 头条 热搜 最新消息 资讯"),
        en=("news", "headlines?", "trending"),
    ),
    build_matcher(
        "search",
        zh=_w("搜索一下 搜一下 搜搜 上网查 网上查 联网查 联网搜索 百度一下 谷歌一下"),
        en=(
            "search (?:the )?(?:web|internet|online)",
            "search for",
            "google",
            "look up",
            "browse",
        ),
    ),
    build_matcher(
        "status",
        zh=_w("服务状态 运行状态 健康状态 健康检查 发布记录 部署记录 变更记录 在线人数"),
        en=(
            "status of",
            "uptime",
            "health (?:of|check)",
            "is [\\w.-]+ (?:up|down)",
            "(?:deploy(?:ment)?|release|change) history",
            "recent (?:deploys|deployments|releases|changes)",
        ),
    ),
    build_matcher(
        "window",
        regex=(
            r"(?:最近|过去|近)\s*(?:\d+|[一二两三四五六七八九十半]+)\s*(?:个)?\s*"
            r"(?:秒|分钟|分|小时|钟头|天|日|周)",
            _EN_LEFT
            + _en_fragment(
                "(?:last|past|previous) (?:\\d+ )?(?:seconds?|minutes?|mins?|hours?|h|days?)"
            )
            + _EN_RIGHT,
        ),
    ),
)

# --- chat: greetings and small talk ------------------------------------------------------

_CHAT: tuple[Matcher, ...] = (
    build_matcher(
        "greeting",
        zh=_w("你好 您好 嗨 哈喽 哈啰 早上好 上午好 下午好 晚上好 早安 晚安 大家好 在吗 在不在"),
        en=(
            "hi",
            "hello",
            "hey",
            "hiya",
            "yo",
            "howdy",
            "greetings",
            "good (?:morning|afternoon|evening|night)",
        ),
    ),
    build_matcher(
        "thanks",
        zh=_w("谢谢 多谢 感谢 辛苦了 谢啦"),
        en=("thank you", "thanks?", "thx", "ty", "cheers", "much appreciated", "appreciate it"),
    ),
    build_matcher(
        "smalltalk",
        zh=_w(
            "你好吗 最近好吗 最近怎么样 你是谁 你叫什么 你叫什么名字 你能做什么 你会什么 "
            "你会做什么 介绍一下你自己 介绍下你自己 自我介绍 再见 拜拜 回头见 好的 好滴 "
            "收到 明白 了解 知道了 嗯嗯 嗯 哈哈 没问题 可以的 行吧 是的 对的"
        ),
        en=(
            "how are you(?: doing)?",
            "how's it going",
            "how is it going",
            "what'?s up",
            "sup",
            "who are you",
            "what are you",
            "what can you do",
            "introduce yourself",
            "nice to meet you",
            "bye",
            "goodbye",
            "see you",
            "see ya",
            "ok(?:ay)?",
            "got it",
            "cool",
            "great",
            "nice",
            "awesome",
            "sounds good",
            "lol",
            "haha",
            "sure",
            "yes",
            "yep",
            "no",
            "nope",
            "you're welcome",
        ),
    ),
)

_CHAT_FILLER = build_matcher(
    "filler",
    zh=_w("呀 啊 哈 呢 吧 哦 喔 啦 嘛 哇 你 您 们 小助手 助手 机器人 非常 很 多 了"),
    en=_w(
        "there everyone all guys friend bot assistant weir so much very a lot again "
        "for the help your you again today bro man mate and"
    ),
)

# --- route and guard helpers -------------------------------------------------------------

_MULTI_STEP = build_matcher(
    "multi_step",
    zh=_w("对比 比较 然后 并且 同时 以及 顺便 关联 结合 分别 再看"),
    en=(
        "and then",
        "then",
        "compare",
        "comparing",
        "versus",
        "vs\\.?",
        "correlate",
        "along with",
        "as well as",
        "both",
        "together with",
        "cross-check",
    ),
)

_CONCEPT = build_matcher(
    "concept",
    zh=_w(
        "什么是 是什么 什么叫 有什么区别 的区别 区别是什么 原理 为什么 如何理解 "
        "解释一下 介绍一下 讲讲 讲一下 概念 如何 怎样 最佳实践 怎么理解 怎么实现 "
        "怎么设计 怎么优化 怎么配置 怎么做 怎么用 怎么写"
    ),
    en=(
        "what (?:is|are) (?:an?|the difference)",
        "what are",
        "what does",
        "difference between",
        "differences between",
        "explain",
        "how (?:does|do|to|should|can i|can we|would)",
        "why (?:do|does|is|are|should|would)",
        "concept of",
        "best practices?",
        "meaning of",
        "define",
        "definition of",
        "tell me about",
    ),
)

_CONCRETE = build_matcher(
    "concrete",
    zh=_w("我们的 我的 线上 生产环境 现在 当前 今天 明天 昨天 刚才 立即 马上 实时 最新"),
    en=(
        "our",
        "my",
        "prod",
        "production",
        "right now",
        "now",
        "currently",
        "today",
        "tomorrow",
        "yesterday",
        "latest",
    ),
    regex=(
        # service-like names: user-service, auth-gateway, order-api, payment-svc ...
        r"(?<=[a-z0-9])[-_](?:service|svc|gateway|gw|api|server|db|worker|cache|web|app)"
        r"(?![a-z0-9])",
        r"\d+\s*(?:分钟|小时|天)",
        _EN_LEFT + _en_fragment("(?:last|past) \\d+"),
        r"trace[-_ ]?id\s*[:=：]",
        r"\b\d{1,3}(?:\.\d{1,3}){3}\b",
    ),
)

# --- self-disclosure: the user tells something about themselves ------------------------
# "我叫小明，我喜欢打篮球" is conversation, not a question for the knowledge base: it is
# chat unless it also asks something.

_SELF_DISCLOSURE = build_matcher(
    "self",
    zh=_w("我叫 我的名字是 我是 我喜欢 我爱 我不喜欢 我讨厌 我住在 我来自 我在做 我的工作是"),
    en=(
        "my name is",
        "call me",
        "i am",
        "i'm",
        "i like",
        "i love",
        "i enjoy",
        "i hate",
        "i don't like",
        "i live in",
        "i come from",
        "i work (?:as|at|on)",
    ),
)

_ABOUT_ME = build_matcher(
    "about_me",
    zh=_w("我叫什么 我是谁 我喜欢什么 我爱什么 我的名字 我住在哪 我来自哪 你记得我"),
    en=(
        "my name",
        "who am i",
        "what do i (?:like|love|enjoy)",
        "where do i (?:live|come from)",
        "do you remember me",
        "what do you know about me",
    ),
)

_QUESTION = build_matcher(
    "question",
    zh=_w("吗 什么 怎么 为什么 哪 谁 几 多少 如何 是否"),
    en=("what", "why", "how", "when", "where", "who", "which", "can you", "could you"),
    regex=(r"[?？]",),
)

_CONTENT_CHARS = re.compile(r"[a-zA-Z0-9\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class IntentRules:
    """All tables of the classifier, precompiled; build custom ones for tests or tenants.

    Attributes:
        action: matchers of ``external_action`` (operations on external systems).
        data: matchers of ``external_data``; each matcher is one data domain.
        chat: matchers of ``chat`` (greetings, thanks, small talk, acknowledgements).
        chat_filler: words ignored when deciding whether a message is *mostly* greeting.
        chat_leftover_max: at most this many content characters (letters, digits, CJK) may be
            left once greetings and filler are removed for the message to stay ``chat``.
        multi_step: markers of a request for several things at once (data → ReAct route).
        context_domains: data domains that never count towards "several things" (the time
            window qualifies another request, it is not one).
        concept: conceptual-question markers ("什么是", "explain", "difference between").
        concrete: markers of a concrete target (service name, time window, "our", "now").
            A conceptual question with no concrete target is knowledge, even if it names an
            operation or a data source ("what is a trace id?").
        self_disclosure: the user telling about themselves ("我叫", "I love"): chat, when
            the message asks nothing (``question`` finds nothing).
        question: question words and marks.
        about_me: questions about the user ("我叫什么", "what is my name"): chat, answered
            from the conversation and memory rather than the knowledge base.
        max_scan_chars: only this many leading characters are scanned, which bounds latency.
    """

    action: tuple[Matcher, ...]
    data: tuple[Matcher, ...]
    chat: tuple[Matcher, ...]
    chat_filler: Matcher
    chat_leftover_max: int
    multi_step: Matcher
    context_domains: frozenset[str]
    concept: Matcher
    concrete: Matcher
    self_disclosure: Matcher = _SELF_DISCLOSURE
    question: Matcher = _QUESTION
    about_me: Matcher = _ABOUT_ME
    max_scan_chars: int = 2000

    @classmethod
    def default(cls) -> IntentRules:
        """Return the built-in Chinese and English tables."""
        return _DEFAULT


def content_length(text: str) -> int:
    """Count letters, digits and CJK characters: what is left that carries meaning."""
    return len(_CONTENT_CHARS.findall(text))


_DEFAULT = IntentRules(
    action=_ACTION,
    data=_DATA,
    chat=_CHAT,
    chat_filler=_CHAT_FILLER,
    chat_leftover_max=4,
    multi_step=_MULTI_STEP,
    context_domains=frozenset({"window"}),
    concept=_CONCEPT,
    concrete=_CONCRETE,
)
