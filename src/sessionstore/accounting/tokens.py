"""Local token estimates for pydantic-ai messages (DESIGN §6).

Counts are cl100k_base token counts as tiktoken's `encode_ordinary` gives them, so text that looks like
a special token (`<|endoftext|>` in a transcript) is counted as text instead of raising. Which exact
backend counts, when it loads and what is cached is `tokenizer`'s job. Nothing loads on import: `session
log`, `list` and `gauge` import the accounting layer without ever counting.

pydantic-ai is never imported here at module level: parts are dispatched on their `part_kind` string,
so the estimator also works on anything shaped like a part (and costs nothing to import).

Estimates are additive by construction: a history costs the sum of its messages, a message the sum of
its parts plus a fixed framing overhead. That is what lets a per-message cache (and the `sizes` list
persisted in each commit) replace re-tokenizing. Every constant below errs high, never low: the
estimate decides when compaction fires, and firing late is the failure that matters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..plumbing import codec, forks
from . import tokenizer

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = [
    "MEDIA_TOKENS",
    "MESSAGE_OVERHEAD",
    "NOT_SENT_KINDS",
    "PART_OVERHEAD",
    "count_text",
    "estimate_message",
    "estimate_messages",
    "estimate_part",
    "estimate_tool_definitions",
    "estimate_total",
    "preload",
    "texts_of",
    "wait_preloaded",
]

MEDIA_TOKENS = 765
"""Fixed cost of one image, audio, video, document or binary item. 765 is OpenAI's estimate for a
1024x1024 image in high detail (85 base + 4 tiles x 170): a typical screenshot. We never decode media
to measure it; a constant keeps estimates deterministic and cheap."""

PART_OVERHEAD = 4
"""Framing a provider adds around each part (role markers, content-block wrappers, tool ids)."""

MESSAGE_OVERHEAD = 3
"""Framing per message: OpenAI's documented 3 tokens per chat message (`<|start|>role ... <|end|>`)."""

NOT_SENT_KINDS = frozenset({"capability-load-delta", "instruction-baseline"})
"""Part kinds pydantic-ai records in history but never sends (its docs say `prepare_messages` drops
them), so they cost nothing. Every other kind, including ones this module does not know, costs tokens."""


def count_text(text: str) -> int:
    """Tokens in `text` under cl100k_base (`encode_ordinary`), or ceil(len/4) if no backend loads.

    Counted by `tokenizer.count`: the configured exact backend, with repeated long texts counted once.
    """
    found = getattr(_gathering, "texts", None)
    if found is not None:
        found.append(text)
        return 0
    return tokenizer.count(text)


_gathering = threading.local()


def texts_of(msgs: Iterable[ModelMessage]) -> list[str]:
    """Every text `estimate_messages(msgs)` counts, in order, without counting any (this thread
    only): what `count_process` sends ahead, so the estimate after it is made of cache hits."""
    _gathering.texts = found = []
    try:
        estimate_messages(msgs)
    finally:
        _gathering.texts = None
    return found


_warmed: set[Callable[[], object]] = set()
_warming: list[threading.Thread] = []
_warm_lock = threading.Lock()


def preload(*also: Callable[[], object]) -> None:
    """Start loading, on a daemon thread, what a process's first write would otherwise wait for.

    Each of `also` (a store's own lazy imports and serializers), pydantic's message serializers
    (`codec.warm_up`), then the tokenizer's table (`tokenizer.backend`), in that order on one thread:
    the order a first write needs them, so a write that arrives meanwhile waits for each in turn
    (imports, the adapter build and the tokenizer load each take a lock: nothing runs twice, nothing
    is half-built). One thread rather than one each: measured in benchmarks/bench_perf.py, threads
    competing for the GIL made a write 300 ms after open wait 40-60 ms instead of ~10 ms. Each step
    runs once per process, however often and from however many stores this is called. A step that
    fails is ignored: the write that needs the same thing reports the error. Both stores call this
    when they open (`SessionStore.open`, `FileConversationStore`).
    """
    forks.guard()  # a fork waits for the step in progress: see `_run_quietly`
    with _warm_lock:
        steps = (*also, codec.warm_up, tokenizer.backend) if codec.messages_loaded() else (tokenizer.backend,)
        todo = [fn for fn in steps if fn not in _warmed]  # imports only once pydantic-ai is: see codec
        _warmed.update(todo)
        if not todo:
            return
        thread = threading.Thread(target=_run_quietly, args=(todo,), name="sessionstore-warm-up", daemon=True)
        _warming.append(thread)
    thread.start()


def _after_fork_in_child() -> None:
    global _warm_lock
    _warm_lock = threading.Lock()  # a parent thread may have held it; the warm-up threads are gone
    _warming.clear()


forks.in_child(_after_fork_in_child)

preload_errors: list[str] = []
"""What a warm-up step raised, if anything (diagnostics; tests assert it stays empty): never printed
from the thread, never raised, since the write that needs the same thing reports it itself."""


def _run_quietly(steps: list[Callable[[], object]]) -> None:
    """Each step under `forks.quiet()`: a fork waits for the step in progress, so a child never
    inherits an import lock or the tokenizer's lock held by this thread (it would wait forever)."""
    for step in steps:
        try:
            with forks.quiet():
                step()
        except Exception as err:
            preload_errors.append(f"{getattr(step, '__qualname__', step)}: {type(err).__name__}: {err}")


def wait_preloaded(timeout: float | None = None) -> bool:
    """Wait for every warm-up `preload` started (e.g. a server before it accepts requests); True when
    all of them have finished within `timeout` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with _warm_lock:
        threads = [*_warming, *tokenizer.preloading()]
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)


def _json_text(value: Any) -> str:
    """Compact JSON for anything (dataclasses, datetimes, bytes): how structured data reaches a model."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        # orjson refuses integers beyond 64 bits (tool arguments may hold them): the stdlib does not
        import json

        return json.dumps(value, default=_json_default, ensure_ascii=False, separators=(",", ":"))


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"  # raw media is costed by MEDIA_TOKENS, not by its base64 text
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "__dict__"):
        return vars(value)  # a non-dataclass object: its fields are what would be sent
    return repr(value)


def _is_media(item: Any) -> bool:
    kind = getattr(item, "kind", None)
    return kind in {"image-url", "audio-url", "video-url", "document-url", "binary", "uploaded-file"}


def _user_content_tokens(content: Any) -> int:
    """A user prompt: text counted, each media item at MEDIA_TOKENS, cache markers free."""
    if isinstance(content, str):
        return count_text(content)
    total = 0
    for item in content:
        if isinstance(item, str):
            total += count_text(item)
        elif _is_media(item):
            total += MEDIA_TOKENS
        elif getattr(item, "kind", None) == "cache-point":
            continue  # a provider cache marker, not content
        elif getattr(item, "kind", None) in {"text-content", "structured-content"}:
            text = item.content or _json_text(getattr(item, "value", ""))
            total += count_text(text)
        else:
            total += count_text(_json_text(item))
    return total


def _tool_return_tokens(part: Any) -> int:
    """Tool name + the text the model is shown for the result (pydantic-ai's own rendering) + media."""
    files = list(getattr(part, "files", ()))
    render = getattr(part, "model_response_str", None)
    if callable(render):
        text = render()
    else:
        content = part.content
        text = "" if content is None else _json_text(content)
    return count_text(part.tool_name) + count_text(text) + MEDIA_TOKENS * len(files)


def _tool_call_tokens(part: Any) -> int:
    """Tool name + arguments as JSON; args may be a dict, a JSON (or broken) string, or None."""
    args = part.args
    if args is None:
        args_text = "{}"
    elif isinstance(args, str):
        args_text = args
    else:
        args_text = _json_text(args)
    return count_text(part.tool_name) + count_text(args_text)


def _retry_tokens(part: Any) -> int:
    """Retry prompts and feedback: the text pydantic-ai renders for the model, else the raw content."""
    render = getattr(part, "model_response", None)
    text = render() if callable(render) else _json_text(part.content)
    tool_name = getattr(part, "tool_name", None) or ""
    return count_text(tool_name) + count_text(text)


def _speech_tokens(part: Any) -> int:
    if part.transcript:
        return count_text(part.transcript)
    return MEDIA_TOKENS if part.audio is not None else 0


def estimate_part(part: Any) -> int:
    """Estimated tokens one message part costs when sent, including PART_OVERHEAD.

    Dispatches on `part.part_kind`. Kinds in NOT_SENT_KINDS cost 0; unknown kinds are counted by
    their JSON text so a new pydantic-ai part type is over- rather than under-estimated.
    """
    kind = getattr(part, "part_kind", None)
    if kind in NOT_SENT_KINDS:
        return 0
    if kind in ("system-prompt", "text", "thinking"):
        body = count_text(part.content)
    elif kind == "compaction":
        body = count_text(part.content or "")
    elif kind == "user-prompt":
        body = _user_content_tokens(part.content)
    elif kind in ("tool-call", "builtin-tool-call"):
        body = _tool_call_tokens(part)
    elif kind in ("tool-return", "builtin-tool-return"):
        body = _tool_return_tokens(part)
    elif kind in ("retry-prompt", "retry-feedback"):
        body = _retry_tokens(part)
    elif kind == "instruction-delta":
        body = count_text(str(part.id or "")) + count_text(part.content or "")
    elif kind == "tool-availability-delta":
        body = count_text(" ".join(part.tools_added))
    elif kind == "file":
        body = MEDIA_TOKENS
    elif kind == "speech":
        body = _speech_tokens(part)
    else:
        body = count_text(_json_text(part))
    return body + PART_OVERHEAD


def estimate_message(msg: ModelMessage) -> int:
    """Estimated tokens of one message: its parts, the request's instructions, and MESSAGE_OVERHEAD.

    A request's `instructions` are counted on every request that carries them. pydantic-ai sends only
    the newest request's instructions, so this errs high by design (and keeps estimates additive).
    """
    total = MESSAGE_OVERHEAD + sum(estimate_part(part) for part in msg.parts)
    instructions = getattr(msg, "instructions", None) if msg.kind == "request" else None
    if instructions:
        total += count_text(instructions) + PART_OVERHEAD
    return total


def estimate_messages(msgs: Iterable[ModelMessage]) -> list[int]:
    """Per-message estimates, in order; `sum()` of the list is the history's estimate."""
    return [estimate_message(msg) for msg in msgs]


def estimate_total(msgs: Sequence[ModelMessage]) -> int:
    """The history's local estimate: the sum of its messages' estimates (additive by definition)."""
    return sum(estimate_messages(msgs))


def estimate_tool_definitions(tools: Iterable[Any]) -> int:
    """Tokens of the tool definitions a request carries beside its messages (pydantic-ai's
    `ToolDefinition`s: the function and output tools of `ModelRequestParameters`): each tool's name,
    description and parameters' JSON schema, plus `PART_OVERHEAD`.

    Providers render definitions their own way (OpenAI as a typed namespace, Anthropic as JSON), so
    this is the JSON text's count, which is about what the compact renderings cost. The integration
    adds it to what a request measures only until a provider usage measures the request itself
    (a measured prefix already holds the definitions: `integrations.protect`)."""
    total = 0
    for tool in tools:
        schema = getattr(tool, "parameters_json_schema", None)
        total += PART_OVERHEAD + count_text(str(getattr(tool, "name", "")))
        total += count_text(getattr(tool, "description", None) or "")
        total += count_text(_json_text(schema)) if schema else 0
    return total
