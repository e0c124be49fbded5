"""Context a coding harness puts into the conversation as a user (or developer) message: the model saw
it, but the person did not type it. Codex sends a project's AGENTS.md as `# AGENTS.md instructions for
<cwd>` with `<INSTRUCTIONS>`, its sandbox as `<environment_context>` and `<permissions instructions>`,
skills as `<skill>`; Claude Code sends `<system-reminder>` blocks. A message is such context when it
opens with one of these markers (the test Codex itself applies to its history) and holds nothing
else after the element it opens (an AGENTS.md message is all context, whatever follows its heading).

`injected(text)` names it, in a few words, so titles skip it (`porcelain/history/naming.py`) and
`session show` folds it into one line (`cli/render.py`; `--full` shows it).
"""

from __future__ import annotations

import re

_AGENTS = re.compile(r"\A\s*# AGENTS\.md instructions for (?P<where>[^\n]*)")
_TAG = re.compile(r"\A\s*<(?P<tag>[A-Za-z][\w-]*(?: instructions)?)[\s>]")
_CWD = re.compile(r"<cwd>(?P<cwd>[^<\n]*)</cwd>")
TAGS: dict[str, str] = {
    "environment_context": "environment context",
    "user_instructions": "AGENTS.md instructions",
    "permissions instructions": "permissions instructions (sandbox and approvals)",
    "skill": "skill instructions",
    "skills_instructions": "skills instructions",
    "apps_instructions": "apps instructions",
    "collaboration_mode": "collaboration mode",
    "codex_internal_context": "Codex internal context",
    "system-reminder": "system reminder",
    "user-prompt-submit-hook": "prompt hook output",
}
"""The opening tag of each kind of injected context, and how it is named."""


def injected(text: str) -> str | None:
    """What injected context `text` is (`AGENTS.md instructions for /repo`, `environment context
    (/repo)`), or None when it is not (the person's own words, or anything else)."""
    if (m := _AGENTS.match(text)) is not None:
        where = m["where"].strip()
        return f"AGENTS.md instructions for {where}" if where else "AGENTS.md instructions"
    m = _TAG.match(text)
    if m is None or (name := TAGS.get(m["tag"])) is None:
        return None
    close = text.find(f"</{m['tag']}>", m.end())
    rest = text[close + len(m["tag"]) + 3 :] if close >= 0 else ""
    if rest.strip() and injected(rest) is None:  # the person's words after it: not all injected
        return None
    if m["tag"] == "environment_context" and (cwd := _CWD.search(text)) is not None:
        return f"{name} ({cwd['cwd'].strip()})"
    return name
