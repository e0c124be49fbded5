"""What callers of formats/ use, in one place: reading a transcript in any format into pydantic-ai
messages (`read_transcript`, `read_transcripts`), detecting one (`detect_format`), writing a history
out (`export_pydantic_ai`), and the steps they give.

Pure conversion: nothing in formats/ touches a store. Each reader turns a file into `ImportedStep`s (one
per user turn, plus compaction steps) that the store persists; the rules they share are in `common`.
Imports point one way: this module -> `registry` (the formats, detection, dispatch) -> the readers
(`pydantic_ai`, `claude_code`, `codex`, `openai_chat`) -> `common`.
"""

from __future__ import annotations

from sessionstore.formats.common import ImportedStep, ImportedTranscript, split_steps, starts_turn
from sessionstore.formats.pydantic_ai import export_pydantic_ai
from sessionstore.formats.registry import FORMATS, detect_format, read_transcript, read_transcripts

__all__ = [
    "FORMATS",
    "ImportedStep",
    "ImportedTranscript",
    "detect_format",
    "export_pydantic_ai",
    "read_transcript",
    "read_transcripts",
    "split_steps",
    "starts_turn",
]
