"""Typed items from the messages a compaction replaces: deterministic, no model (DESIGN §7).

What a summary must keep, found by content rather than by position:
- constraints: the user's standing instructions and preferences however phrased (must / never / always
  / only / don't, "use X, not Y", "the user prefers", "Reply in bullet points only", limits with their
  numbers), and their markers in other languages (languages.py: "nunca borres ...", "不要删除...").
  A value-less rule right after a sentence with a value joins it ("Budget cap is $500 total. Never
  exceed without explicit approval." stays one item, with the $500);
- facts: sentences binding a value (values.py) to a name, from the user and, ranked lower, the
  assistant;
- decisions with their reasons, the assistant's stated conclusions, open questions, blocked work
  (failed tool calls, retry feedback, "blocked on" sentences), completed tool calls;
- the goal: the latest explicit goal statement in the user's own words, else the first substantive
  request; pasted instruction blocks ("IT IS CRITICAL THAT YOU FOLLOW THESE STEPS" workflows), harness
  noise (command tags, caveats, system reminders, hook feedback) and one-word acks are never the goal.
`resolve` then applies corrections: of two items with the same subject and different values, the
later is current and the earlier is marked superseded, never presented as current.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import orjson
from pydantic_ai.messages import (
    ModelMessage,
    RetryFeedbackPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from sessionstore.summary.items import Extraction, Item
from sessionstore.summary.languages import binds, is_rule, refers_back
from sessionstore.summary.sentences import split_sentences
from sessionstore.summary.text import as_text, dedupe, shorten_keeping, shorten_line, user_text
from sessionstore.summary.values import (
    PATH,
    is_path,
    moves,
    retired_paths,
    stated,
    stems,
    values,
    withdrawn,
)

__all__ = ["Extraction", "Item", "extract", "is_noise", "is_pasted", "resolve"]

_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|never|always|only|don't|do not|doesn't|does not|shouldn't|should not|should|avoid|"
    r"need to|needs to|has to|have to|required|requires?|mandatory|make sure|ensure|at most|at least|"
    r"no more than|no less than|not allowed|forbidden|prohibited|not acceptable|unacceptable|"
    r"under no circumstances|without (?:explicit |prior )?(?:approval|permission|asking|sign-off)|"
    r"stick to|stick with|prefer|prefers|preferred|preference|rather|favou?rite|likes|dislikes|hates|"
    r"would like|'d like|wants? (?:you|answers|replies|responses|everything)|no longer|from now on|"
    r"(?:i|we|they|he|she) (?:like|love|hate|dislike|enjoy)|going forward|by default)\b",
    re.I,
)
_USE_NOT = re.compile(r"\buse\b[^.?!]{1,60}?,?\s+(?:not|never|instead of|rather than|over)\b", re.I)
_LIMIT = re.compile(
    r"\b(?:cap|caps|capped|budget|limit|limits|limited|max|maximum|min|minimum|quota|threshold|deadline|"
    r"due|timeout|ceiling|allowance|exceed|no later than|sla|target|freeze|under|below|above|over|within|"
    r"less than|more than|fewer than|up to)\b",
    re.I,
)
_IMPERATIVE = re.compile(
    r"^(?:(?:please|also|and|then|from now on,?)\s+)*"
    r"(?:reply|respond|answer|format|keep|address|sign|stick|stay|limit|include|exclude|"
    r"respect|follow|speak|talk|communicate|prefix|wrap|indent|cite|quote|write (?:all|every|each|in|only)|"
    r"name (?:all|every|each)|put (?:all|every|each)|stop \w+ing|quit \w+ing)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|will use|we'll use|i'll use|going with|go with|chose|chosen|"
    r"switched to|switch to|opted|settled on|agreed|instead of|in favou?r of)\b",
    re.I,
)
_REFERS_BACK = re.compile(
    r"^(?:never|don't|do not|not|and|but|it|this|that|which|without|no)\b[^.?!]*?"
    r"\b(?:exceed|go over|go above|above|beyond|past|change|changes|move|moves|raise|increase|lower|"
    r"break|it|this|that|them)\b",
    re.I,
)
_REASON = re.compile(r"^(?:because|since|as|so|this is because|the reason)\b", re.I)
_CONCLUSION = re.compile(
    r"\b(?:root cause|the cause|caused by|turns out|found that|the (?:issue|problem|bug|fix) (?:is|was)|"
    r"this means|therefore|in summary|in conclusion|confirmed|verified|now works|works now|now passes|"
    r"all tests pass|tests pass)\b",
    re.I,
)
_BLOCKED = re.compile(
    r"\b(?:blocked|blocker|waiting (?:on|for)|can't|cannot|unable to|not able to|permission denied|"
    r"no access)\b",
    re.I,
)
_BIND = re.compile(
    r"\b(?:is|are|was|were|runs on|lives|uses|set to|changed to|moved to|owner|owned|on-call|belongs)\b"
    r"|\b(?:set|change|move|switch|update|bump|raise|lower|increase|decrease|reduce|extend|push|point|reset)\b"
    r"[^.?!]{0,80}?\bto\b"  # "Change the settings file to /etc/app.conf": a correction binds with "to"
    r"|是|为|為|は|が",  # CJK copulas bind with no space around them ("预算是500美元")
    re.I,
)
_GOAL = re.compile(
    r"\b(?:(?:my|our|the|main|overall|new|current|end|real)\s+(?:goal|objective|aim|task|mission)s?\b"
    r"|goal\s*:|objective\s*:|there is a need (?:to|for)|i (?:want|need) (?:you )?to|we (?:want|need) to|"
    r"help me|i'd like (?:you )?to|my request for|what (?:i|we) need\b|(?:i'm|i am|we're|we are) trying to|"
    r"the (?:point|aim|plan) is)",
    re.I,
)
_ACK = re.compile(
    r"^\s*(?:[a-z]|ok(?:ay)?|yes|yep|no|nope|sure|go|go on|go ahead|proceed|continue|next|thanks?|"
    r"thank you|done|great|good|lgtm|y|n)\s*[.!]*\s*$",
    re.I,
)
_NOISE = re.compile(
    r"^\s*(?:Caveat: The messages below|\[Request interrupted|\[tool output elided|"
    r"(?:Stop|SubagentStop|PreToolUse|PostToolUse|UserPromptSubmit|SessionStart|Notification)"
    r"(?: hook|:| operation)|(?>(?:<([\w-]+)[^>]*>[\s\S]*?</\1>\s*))+$)",  # atomic: one way per element
    re.I,
)
_REMINDER = re.compile(
    r"<(system-reminder|user-prompt-submit-hook|local-command-caveat|environment_context)>[\s\S]*?</\1>"
)
_PASTED = re.compile(
    r"IT IS CRITICAL THAT YOU FOLLOW|<steps\b|<workflow\b|<instructions\b|LOAD the FULL|"
    r"follow (?:its|these) directions|^# AGENTS\.md|<INSTRUCTIONS>|"
    r"You are (?:a|an) [\w -]+ (?:agent|assistant)",
    re.M,
)
_BULLET_MARK = re.compile(r"^\s*(?:[-*+•>]|\d+[.)]|#+)\s+")
_ARGUMENTS = re.compile(r"^ARGUMENTS:\s*(.+)", re.M | re.S)
_BARE = re.compile(r"[\d,.]+|Step \d+|[A-Za-z]+ \d")
_IDENT = re.compile(r"`([^`\n]{2,60})`")
_ERROR = re.compile(r"Traceback \(most recent call last\)|^\s*(?:error|fatal|exception)\b", re.I | re.M)
_KEY_ARGS = ("file_path", "path", "filename", "file", "command", "cmd", "pattern", "url", "query", "name")
_FILE_ARGS = ("file_path", "path", "filename", "file")
_COMMAND_ARGS = ("command", "cmd")
_MAX_SENTENCE = 600


def is_noise(text: str) -> bool:
    """Harness text recorded as a user prompt: caveats, command tags, hook feedback, interruptions."""
    return bool(_NOISE.match(text)) or not text.strip()


def is_pasted(text: str) -> bool:
    """A pasted instruction block (a workflow or agent-rules file), not the user's own words."""
    return bool(_PASTED.search(text)) or (len(text) > 3000 and text.count("\n#") + text.count("\n<") >= 8)


def _line(text: str, limit: int = _MAX_SENTENCE) -> str:
    flat = " ".join(text.split())
    return shorten_line(flat, values(flat), limit)


def _unbullet(text: str) -> str:
    """`text` without list markers, its lines joined by '; ': a bullet's text, never "- - item"."""
    lines = [_BULLET_MARK.sub("", line).strip() for line in text.splitlines()]
    return "; ".join(line for line in lines if line)


def _sentences(text: str) -> list[str]:
    return [s for s in (_BULLET_MARK.sub("", s).strip() for s in split_sentences(text)) if s]


def _binds(sentence: str, found: list[str]) -> bool:
    """A value bound to a name: by a verb ("is", "runs on", ...) or as `name: value` / `name = value`."""
    if not found:
        return False
    if _BIND.search(sentence) or binds(sentence):  # "is", "是", "est", "—": languages.py
        return True
    return any(re.search(rf"[:=]\s*{re.escape(v)}", sentence) for v in found)


def _strong(found: list[str]) -> bool:
    """A value worth keeping on its own (a quantity, date, version, host, name...), not only a path or
    a bare number: a user sentence stating one is a fact even without a binding verb."""
    return any(not is_path(v) and not _BARE.fullmatch(v) for v in found)


def _classify_user(sentence: str, found: list[str]) -> str | None:
    if _CONSTRAINT.search(sentence) or _USE_NOT.search(sentence) or _IMPERATIVE.match(sentence):
        return "constraint"
    if is_rule(sentence) or withdrawn(sentence):  # "nunca borres ...": languages.py; "forget the cap"
        return "constraint"
    if found and _LIMIT.search(sentence):
        return "constraint"
    if sentence.endswith("?"):
        return "question"
    if _binds(sentence, found) or _strong(found):
        return "fact"
    if _DECISION.search(sentence):
        return "decision"
    return None


def _user(text: str, ex: Extraction) -> None:
    text = _REMINDER.sub("", text).strip()
    if is_noise(text):
        return
    if is_pasted(text):
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        ex.pasted.append(_line(first, 160))
        args = _ARGUMENTS.search(text)
        if not args:
            return
        text = args.group(1).strip()
    _scan(text, ex)
    if len(text.split()) >= 3 and not _ACK.match(text):
        request = _unbullet(text)
        ex.requests.append(_line(request, 500))
        if _GOAL.search(text) or not ex.goal:
            ex.set_goal(_line(request, 600))
    previous: Item | None = None
    for sentence in _sentences(text):
        found = values(sentence)
        gone = _retire(ex, sentence, found)
        ex.retired = [p for p in ex.retired if p not in found] + gone  # a later mention takes it up again
        kind = _classify_user(sentence, found)
        back = refers_back(sentence)  # "No lo cambies", "不要改它": languages.py
        if back:
            kind = "constraint"
        joins = previous is not None and previous.values and (_REFERS_BACK.match(sentence) or back)
        if kind == "constraint" and not found and joins and previous is not None:
            previous.text = f"{previous.text} {sentence}"  # the rule stays with its value
            previous.kind = "constraint"
            continue
        previous = ex.add(kind, shorten_keeping(sentence, found, _MAX_SENTENCE), "user") if kind else None


def _retire(ex: Extraction, sentence: str, found: list[str]) -> list[str]:
    """The paths `sentence` retires (`values.retired_paths`), their successors recorded in `ex.moved`.
    A bare file name stands for the one earlier path it ends ("edit src/a.py", then "a.py is now
    src/core/a.py": src/a.py is retired too); with two such paths it is ambiguous and stands for none."""
    gone = retired_paths(sentence, found)
    moved = moves(sentence, found)
    for name in [g for g in gone if "/" not in g]:
        full = [f for f in dedupe(ex.files) if f.endswith("/" + name) and f not in found]
        if len(full) == 1:
            gone.append(full[0])
            if name in moved:
                moved[full[0]] = moved[name]
    ex.moved.update(moved)
    return gone


def _assistant(text: str, ex: Extraction) -> None:
    _scan(text, ex)
    previous: Item | None = None
    for sentence in _sentences(text):
        if len(sentence) > _MAX_SENTENCE or sentence.startswith(("|", "```", "#", '"', "{", "[", "<", "`")):
            previous = None
            continue
        if previous is not None and previous.kind == "decision" and _REASON.match(sentence):
            previous.text = f"{previous.text} {sentence}"  # the decision keeps its reason
            continue
        found = values(sentence)
        kind = None
        if _DECISION.search(sentence):
            kind = "decision"
        elif _CONCLUSION.search(sentence):
            kind = "conclusion"
        elif _BLOCKED.search(sentence):
            kind = "blocked"
        elif sentence.endswith("?") and len(sentence) < 300:
            kind = "question"
        elif _binds(sentence, found) and len(sentence) < 300:
            kind = "fact"
        previous = ex.add(kind, sentence, "assistant") if kind else None


def _scan(text: str, ex: Extraction) -> None:
    ex.files += [p.rstrip(".,;:") for p in PATH.findall(text) if is_path(p)]  # not the sentence's dot
    ex.identifiers += _IDENT.findall(text)


def _key_args(args: object) -> tuple[str, dict]:
    data = args
    if isinstance(args, str):
        try:
            data = orjson.loads(args)
        except orjson.JSONDecodeError:
            return _line(args, 80), {}
    if not isinstance(data, dict) or not data:
        return (_line(as_text(data), 80) if data else ""), {}
    keys = [k for k in _KEY_ARGS if k in data] or list(data)[:1]
    return ", ".join(f"{k}={_line(as_text(data[k]), 80)}" for k in keys[:2]), data


def extract(messages: Iterable[ModelMessage], into: Extraction | None = None) -> Extraction:
    """Typed items from `messages` (appended to `into`, e.g. a parsed previous summary); not resolved."""
    ex = into if into is not None else Extraction()
    calls: dict[str, str] = {}
    count = 0
    for msg in messages:
        count += 1
        for part in msg.parts:
            if isinstance(part, UserPromptPart):
                _user(user_text(part), ex)
            elif isinstance(part, TextPart):
                _assistant(part.content, ex)
            elif isinstance(part, ToolCallPart):
                shown, data = _key_args(part.args)
                calls[part.tool_call_id] = f"{part.tool_name}({shown})"
                ex.files += [str(data[k]) for k in _FILE_ARGS if isinstance(data.get(k), str)]
                ex.commands += [str(data[k]) for k in _COMMAND_ARGS if isinstance(data.get(k), str)]
            elif isinstance(part, ToolReturnPart):
                label = calls.get(part.tool_call_id, f"{part.tool_name}()")
                content = as_text(part.content)
                error = _ERROR.search(content)
                if part.outcome != "success" or error:
                    start = error.start() if error else 0
                    detail = " ".join(content[start : start + 300].split())
                    ex.add("blocked", f"{label} {part.outcome}: {detail}", "tool")
                else:
                    ex.add("done", label, "tool")
            elif isinstance(part, RetryFeedbackPart):
                ex.add("blocked", "output retry: " + " ".join(as_text(part.content)[:300].split()), "tool")
    ex.messages += count
    return ex


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def resolve(ex: Extraction) -> Extraction:
    """Apply corrections and drop repeats: per subject the latest value is current (DESIGN §7).

    An item is superseded when a later constraint or fact has the same subject and states none of its
    values as current (`values.stated`: "the budget is $700, not $500" states only $700). The user's
    values and the assistant's are resolved apart, except that a later user value also supersedes the
    assistant's restatement of the old one ("Noted: the budget is $500."). A user withdrawal ("forget
    the budget cap") supersedes the earlier items on its subject (`_withdraw`). Each superseded item's
    `replaced_by` is the item that superseded it. Of two items with the same words, only the later stays.
    """
    _inherit(ex.items)
    latest: dict[tuple[str, str], Item] = {}
    seen: dict[str, Item] = {}
    kept: list[Item] = []
    for item in sorted(ex.items, key=lambda i: i.order, reverse=True):
        key = _key(item.text)
        if key in seen:
            continue
        seen[key] = item
        if item.kind in ("constraint", "fact") and item.subject and item.values and not item.superseded:
            group = (item.source if item.source == "assistant" else "user", item.subject)
            mine = set(stated(item.text, list(item.values)))
            # the assistant's own later value, or the user's: a user item only yields to the user
            newer = [latest.get(group)]
            if group[0] == "assistant":
                newer.append(latest.get(("user", item.subject)))
            by = [n for n in newer if n is not None and not mine & set(stated(n.text, list(n.values)))]
            if by:
                item.superseded, item.replaced_by = True, by[-1]
            latest.setdefault(group, item)
        kept.append(item)
    ex.items = sorted(kept, key=lambda i: i.order)
    _withdraw(ex.items)
    return ex


def _inherit(items: list[Item]) -> None:
    """A correction with no subject of its own that names its old value ("不是500，是700", "500ではなく
    700", "Не 2027-01-22, а 2027-02-05", "Actually it's $700, not $500") takes the subject of the
    latest earlier item (not the assistant's) that states that value as current, so `resolve`
    supersedes it as it would "The budget is $700, not $500"."""
    bound = [i for i in sorted(items, key=lambda i: i.order) if i.kind in ("constraint", "fact")]
    for n, item in enumerate(bound):
        if item.subject or item.source == "assistant" or not item.values or withdrawn(item.text):
            continue
        now = stated(item.text, list(item.values))
        old = set(item.values) - set(now)
        if not now or not old:
            continue
        for earlier in reversed(bound[:n]):
            mine = set(stated(earlier.text, list(earlier.values)))
            if earlier.subject and earlier.source != "assistant" and old & mine and not set(now) & mine:
                item.subject = earlier.subject
                break


def _withdraw(items: list[Item]) -> None:
    """A user sentence taking something back ("forget the budget cap", "the deploy window no longer
    applies") supersedes the earlier current items whose subject words it names (or a value it names
    with a word of theirs); an item restating the subject later supersedes the withdrawal in turn."""
    for w in items:
        if w.source == "assistant" or w.kind != "constraint":
            continue
        for clause in withdrawn(w.text):
            words, named = stems(clause), set(values(clause))
            for other in items:
                if other is w or other.kind not in ("constraint", "fact") or not other.subject:
                    continue
                if not (
                    stems(other.subject) <= words or (named & set(other.values) and stems(other.text) & words)
                ):
                    continue
                if other.order < w.order and not other.superseded:
                    other.superseded, other.replaced_by = True, w
                elif (
                    other.order > w.order
                    and other.values
                    and not w.superseded
                    and other.source != "assistant"
                ):
                    w.superseded, w.replaced_by = True, other
