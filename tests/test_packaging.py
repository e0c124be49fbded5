"""The top-level `hooks/pre-commit` and `MEMORY.md.template` are the sources; the packaged copies that
`session hooks install` and `session memory init` use must be byte-identical to them."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGED = REPO / "src" / "sessionstore" / "templates"


@pytest.mark.parametrize(
    ("source", "copy"),
    [(REPO / "hooks" / "pre-commit", PACKAGED / "pre-commit"),
     (REPO / "hooks" / "post-merge", PACKAGED / "post-merge"),
     (REPO / "MEMORY.md.template", PACKAGED / "MEMORY.md.template")],
)  # fmt: skip
def test_packaged_copy_is_byte_identical_to_its_source(source: Path, copy: Path) -> None:
    assert source.read_bytes() == copy.read_bytes(), f"copy {source} over {copy} (the source wins)"


def test_the_bundled_example_is_as_long_as_the_tests_say() -> None:
    from helpers.cli import EXAMPLE, EXAMPLE_MESSAGES, EXAMPLE_TURNS
    from sessionstore.formats.transcripts import read_transcript

    steps = read_transcript(EXAMPLE).steps
    assert (len(steps), sum(len(s.messages) for s in steps)) == (EXAMPLE_TURNS, EXAMPLE_MESSAGES)
