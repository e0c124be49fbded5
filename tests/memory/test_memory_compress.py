"""compress_memory_file: offline and model paths, fallbacks, the caps, and the real codemie AGENTS.md."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from sessionstore.accounting.settings import Settings
from sessionstore.memory.compress import compress_lines, compress_memory_file
from sessionstore.memory.document import heading_of, headings, join_lines, split_lines

SMALL = Settings(memory_max_lines=30, memory_max_bytes=25_000)


def _memory(bullets: int) -> list[str]:
    lines = ["# Memory", "", "## Project", "- uses click", "- uses click", "", "## Session notes", ""]
    return lines + [f"- 2026-{9 + i // 28:02d}-{1 + i % 28:02d} s{i}: summary {i}" for i in range(bullets)]


def _prompt_text(messages: list[ModelMessage]) -> str:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return "".join(str(part.content) for part in request.parts if isinstance(part, UserPromptPart))


def _answering(transform: object) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert info.instructions and "data, not instructions" in info.instructions
        text = _prompt_text(messages)
        body = text.split("<memory-file>\n", 1)[1].rsplit("</memory-file>", 1)[0]
        return ModelResponse(parts=[TextPart(transform(body))])  # type: ignore[operator]

    return FunctionModel(respond)


def test_offline_dedupes_folds_and_fits() -> None:
    lines = _memory(60)
    result = compress_lines(lines, SMALL)
    assert result.method == "extractive"
    assert len(result.lines) <= 30
    assert result.lines.count("- uses click") == 1
    assert result.lines[-10:] == lines[-10:]
    assert any(line.startswith("- 2026-09 (") for line in result.lines)
    assert compress_lines(result.lines, SMALL).lines == result.lines


def test_model_answer_is_used_when_valid() -> None:
    lines = _memory(60)

    def merge(body: str) -> str:
        kept = [line for line in split_lines(body) if not line.startswith("- 2026-09")]
        return "```markdown\n" + join_lines(["# Memory", "## Project", "- uses click", *kept[6:]]) + "```"

    result = compress_lines(lines, SMALL, model=_answering(merge))
    assert result.method == "llm"
    assert result.notes == []
    assert headings(result.lines) == headings(lines)
    assert len(result.lines) <= 30
    assert result.lines[-10:] == lines[-10:]
    assert "- 2026-09-01 s0: summary 0" in result.removed


def test_model_dropping_newest_bullets_gets_them_back() -> None:
    lines = _memory(60)
    skeleton_only = _answering(lambda body: "# Memory\n## Project\n## Session notes\n")
    result = compress_lines(lines, SMALL, model=skeleton_only)
    assert result.method == "llm"
    assert result.lines[-10:] == lines[-10:]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (lambda body: "  \n\n", "blank"),
        (lambda body: "# Memory\n## Session notes\n- 2026-10-01 x: y\n", "lost heading '## Project'"),
    ],
)
def test_bad_model_answers_fall_back_offline(answer: object, reason: str) -> None:
    lines = _memory(60)
    result = compress_lines(lines, SMALL, model=_answering(answer))
    assert result.method == "extractive"
    assert result.notes == [f"model answer rejected ({reason}); used the offline path"]
    assert result.lines == compress_lines(lines, SMALL).lines


def test_raising_model_falls_back_offline() -> None:
    def boom(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("network down")

    result = compress_lines(_memory(60), SMALL, model=FunctionModel(boom))
    assert result.method == "extractive"
    assert "ConnectionError: network down" in result.notes[0]


def test_lines_given_directly_are_redacted_before_the_model_sees_them() -> None:
    seen: list[str] = []

    def record(body: str) -> str:
        seen.append(body)
        return body

    compress_lines(
        [*_memory(40), "- 2026-10-20 leak: password=hunter2hunter"], SMALL, model=_answering(record)
    )
    assert seen and "hunter2" not in seen[0] and "password=[redacted]" in seen[0]


def test_disabled_compression_only_clamps() -> None:
    settings = Settings(memory_max_lines=30, memory_max_bytes=25_000, memory_compression_enabled=False)
    result = compress_lines(_memory(60), settings)
    assert result.method == "clamp"
    assert not any(line.startswith("- 2026-09 (") for line in result.lines)
    assert len(result.lines) == 30


def test_file_under_cap_only_loses_exact_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(join_lines(_memory(3)))
    update = compress_memory_file(path, Settings())
    assert update.changed and update.method == "dedupe" and update.removed == ["- uses click"]
    assert not compress_memory_file(path, Settings()).changed


def test_file_check_mode_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    text = join_lines(_memory(60))
    path.write_text(text)
    update = compress_memory_file(path, SMALL, check=True)
    assert update.changed and path.read_text() == text


def test_file_secrets_redacted_before_model_and_file(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text(join_lines([*_memory(40), "- 2026-10-20 leak: password=hunter2hunter"]))
    seen: list[str] = []

    def record(body: str) -> str:
        seen.append(body)
        return body

    update = compress_memory_file(path, SMALL, model=_answering(record))
    assert seen and "hunter2" not in seen[0]
    assert "hunter2" not in path.read_text()
    assert any(note.startswith("redacted a secret (Secret Keyword) on line ") for note in update.notes)


def test_real_codemie_agents_md_compresses_under_the_cap(tmp_path: Path, realdata: Path) -> None:
    source = realdata / "memory" / "codemie-code_AGENTS.md"
    path = tmp_path / "MEMORY.md"
    path.write_bytes(source.read_bytes())
    original = split_lines(source.read_text("utf-8"))
    assert len(original) == 271
    update = compress_memory_file(path, Settings())
    lines = split_lines(path.read_text("utf-8"))
    assert update.changed and len(lines) <= 200 and len(path.read_bytes()) <= 25_000
    assert headings(lines) == headings(original)
    assert len(update.removed) == update.lines_before - update.lines_after
    # The fenced and tabled structure survives: fences stay balanced.
    assert sum(line.startswith("```") for line in lines) % 2 == 0
    assert not compress_memory_file(path, Settings(), only_past_caps=True).changed


MEMORY_LINE = st.one_of(
    st.sampled_from(["", "# Top", "## Session notes", "## Facts", "```", "| a |", "  - sub", "- same fact"]),
    st.builds(
        lambda d, n: f"- 2026-{d % 3 + 9:02d}-{d:02d} s{n}: did {n}", st.integers(1, 28), st.integers(0, 9)
    ),
    st.text(alphabet="abc xyz", min_size=1, max_size=20).map(lambda s: "- " + s),
)


def _each_heading_once(found: list[str]) -> list[str]:
    """The first of each heading path (each heading above it and itself: level and title, any case):
    squash merges a repeated path, and keeps one title under two parents twice (issue 28)."""
    seen: set[object] = set()
    path: tuple[tuple[int, str], ...] = ()
    out = []
    for line in found:
        key = heading_of(line)
        if key is None:
            continue
        while path and path[-1][0] >= key[0]:
            path = path[:-1]
        path = (*path, (key[0], key[1].casefold()))
        if path not in seen:
            seen.add(path)
            out.append(line)
    return out


@hyp_settings(max_examples=120, deadline=None)
@given(st.lists(MEMORY_LINE, max_size=80), st.integers(5, 40))
@example(["## Session notes", "# Top", "## Session notes"], 5)  # one title under two parents
def test_squash_keeps_headings_fits_and_is_idempotent(lines: list[str], max_lines: int) -> None:
    caps = Settings(memory_max_lines=max_lines, memory_max_bytes=25_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "MEMORY.md"
        path.write_text(join_lines(lines))
        compress_memory_file(path, caps, only_past_caps=True)
        once = split_lines(path.read_text())
        assert headings(once) == _each_heading_once(headings(lines))
        assert len(once) <= max(max_lines, len(headings(lines)))
        assert not compress_memory_file(path, caps, only_past_caps=True).changed


def test_a_298_line_squash_keeps_every_old_note_as_a_month_fold() -> None:
    """The issue's case: 100 session notes over four months plus 190 lines of facts."""
    import re

    facts = ["# M", "", "## Conventions", *[f"- rule number {i} of the team" for i in range(192)], ""]
    notes = ["## Session notes", ""]
    notes += [f"- 2026-{6 + i // 25:02d}-{1 + i % 25:02d} s{i}: did task {i}" for i in range(100)]
    lines = facts + notes
    assert len(lines) == 298
    result = compress_lines(lines, Settings(memory_max_lines=200))
    assert len(result.lines) <= 200
    folds = [re.match(r"- 2026-\d\d \((\d+) sessions\)", line) for line in result.lines]
    kept = sum(int(m.group(1)) for m in folds if m)
    bullets = sum(1 for line in result.lines if re.match(r"- 2026-\d\d-\d\d s\d+:", line))
    assert kept + bullets == 100  # every note is either still there or counted in its month's fold
