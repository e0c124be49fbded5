"""formats/registry.py: format detection (OpenAI chat included), dispatch, clear errors for files no
reader takes, and one-way imports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.transcript_checks import (
    CODEMIE,
    CODEX,
    SPOTTER,
    flat,
)
from sessionstore.errors import ImportFormatError
from sessionstore.formats.registry import FORMATS
from sessionstore.formats.transcripts import (
    detect_format,
    export_pydantic_ai,
    read_transcript,
    read_transcripts,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [(CODEMIE, "claude-code"), (SPOTTER, "claude-code"), (CODEX, "codex")],
    ids=["codemie", "spotter", "codex"],
)
def test_detects_real_formats(path: Path, expected: str, tmp_path: Path) -> None:
    assert detect_format(path) == expected
    exported = tmp_path / "e.json"
    exported.write_bytes(export_pydantic_ai(flat(read_transcript(path))))
    assert detect_format(exported) == "pydantic-ai"


def _error(path: Path, **kwargs: str) -> str:
    with pytest.raises(ImportFormatError) as info:
        read_transcript(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_clear_errors_for_bad_files(tmp_path: Path) -> None:
    cases = {
        "binary.jsonl": (b'{"type": "user"}\n\xff\xfe\x00garbage\n', "line 2: not UTF-8"),
        "empty.jsonl": (b"", "empty"),
        "blank.json": (b"  \n\n", "empty"),
        "object.json": (b'{\n  "messages": []\n}\n', "line 1"),
        "other.jsonl": (b'{"role": "user", "content": "hi"}\n', "--format"),
        "scalars.jsonl": (
            b'{"type": "user", "message": {"content": "hi"}}\n42\n',
            "line 2: expected a JSON object",
        ),
        "bad_messages.json": (b'[{"kind": "request", "parts": [{"part_kind": "nope"}]}]', "message 0"),
        "cut_list.json": (b'[{"kind": "request", "parts": [', "not valid JSON"),
        "missing.json": (None, "no such file"),
    }
    for name, (data, expected) in cases.items():
        path = tmp_path / name
        if data is not None:
            path.write_bytes(data)
        assert expected in _error(path), name
    assert "is a directory" in _error(tmp_path)
    assert "unknown import format" in _error(CODEX, format="yaml")


def test_a_non_string_type_field_is_a_format_error_not_a_crash(tmp_path: Path) -> None:
    # A list "type" once reached a set lookup while sniffing and escaped as TypeError (unhashable).
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"type": [1], "payload": {}}\n{"type": {"a": 1}}\n')
    assert "not a known transcript format" in _error(path)


def test_taubench_openai_chat_list_is_refused_as_one_transcript(realdata: Path) -> None:
    """The registry detects OpenAI chat records (tau-bench's) itself: `read_transcript`, which gives
    one transcript, refuses a file of 200 conversations in one line naming them, and
    `read_transcripts` reads each."""
    path = realdata / "trajectories" / "taubench_gpt-4o-airline.json"
    message = _error(path)
    assert "holds 200 conversations (openai-chat)" in message and "read_transcripts" in message
    assert detect_format(path) == "openai-chat" and len(read_transcripts(path)) == 200


def test_a_list_of_other_records_names_its_first_item_and_every_format(tmp_path: Path) -> None:
    path = tmp_path / "records.json"
    path.write_text('[{"task_id": 1, "reward": 0, "info": {}, "traj": []}]')
    message = _error(path)
    assert "not pydantic-ai messages" in message
    assert "item 0 is an object with keys task_id, reward, info, traj" in message  # says what it is
    assert f"supported: {', '.join(f.described for f in list(FORMATS.values())[:-1])} or " in message


def test_the_first_item_that_is_not_a_message_is_named(tmp_path: Path) -> None:
    path = tmp_path / "mixed.json"
    path.write_text('[{"kind": "request", "parts": []}, {"kind": "tool"}, 3]')
    assert "item 1 is kind 'tool', not kind request/response" in _error(path)
    path.write_text("[[]]")
    assert "item 0 is a JSON list" in _error(path)


def test_truncated_last_line_names_the_line(tmp_path: Path) -> None:
    data = SPOTTER.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) - 200])
    lines = cut.read_bytes().count(b"\n") + 1
    message = _error(cut)
    assert f"line {lines}: Claude Code line is cut off" in message and "remove that line" in message


def test_explicit_wrong_format_suggests_the_right_one(tmp_path: Path) -> None:
    assert "--format codex" in _error(CODEX, format="claude-code")
    assert "--format claude-code" in _error(CODEMIE, format="codex")
    chat = tmp_path / "chat.json"  # OpenAI chat, detected by the registry like the others
    chat.write_text(
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}'
    )
    assert "--format openai-chat" in _error(chat, format="pydantic-ai")
    exported = tmp_path / "e.json"
    exported.write_bytes(export_pydantic_ai(flat(read_transcript(chat))))
    assert "--format pydantic-ai" in _error(exported, format="openai-chat")


def test_formats_imports_point_one_way() -> None:
    """Registry -> readers -> common: no module of formats/ imports one that imports it (issue 9)."""
    import ast

    import sessionstore.formats as pkg

    folder = Path(pkg.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sessionstore.formats."):
                found.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                found.add(node.module)
        graph[path.stem] = found

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        nexts = graph.get(start, ())
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in nexts)

    graph["registry"] |= {f.reader.split(":")[0] for f in FORMATS.values()}  # imported by name, lazily
    assert graph["common"] <= set() and graph["registry"] >= {"claude_code", "codex", "pydantic_ai"}
    assert not [m for m in graph if reaches(m, m)], graph


DEEP = b'{"a":' * 200 + b"1" + b"}" * 200


@pytest.mark.parametrize(
    ("data", "cause"),
    [
        (b'[{"kind":"request","parts":[],"x":NaN}]', "holds NaN or Infinity at line 1, column 35"),
        (b'[{"kind":"request","x":-Infinity}]', "holds NaN or Infinity"),
        (b"[" + b"[" * 1100 + b"]" * 1100 + b"]", "nests more than 1,024 levels deep"),
        (
            b'[{"kind":"request","x":"a\x00b"}]',
            "holds a raw NUL character inside a string at line 1, column 26",
        ),
        (b'[{"kind":"request","x":"\\ud800"}]', "an unpaired UTF-16 surrogate escape"),
        (b'[{"kind":"request","x":"ab', "is cut off at line 1, column 27 (truncated?)"),
    ],
    ids=["nan", "infinity", "nesting", "nul", "surrogate", "cut"],
)
def test_json_errors_name_the_real_cause(tmp_path: Path, data: bytes, cause: str) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(data)
    with pytest.raises(ImportFormatError, match=re.escape(cause)) as err:
        read_transcript(path)
    assert "\n" not in str(err.value) and "not valid JSON" in str(err.value)


def test_a_jsonl_line_names_its_json_cause(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"type":"user","message":{"role":"user","content":"hi"}}\n{"type":"user","x":NaN}\n')
    with pytest.raises(ImportFormatError, match=r"line 2: Claude Code line is not valid JSON: it holds NaN"):
        read_transcript(path)


def test_tool_arguments_nested_too_deep_to_read_back_are_refused_naming_the_line(tmp_path: Path) -> None:
    call = b'{"type":"tool_use","id":"a","name":"b","input":' + DEEP + b"}"
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_bytes(
        b'{"type":"user","message":{"role":"user","content":"hi"}}\n'
        b'{"type":"assistant","message":{"id":"m","content":[' + call + b"]}}\n"
    )
    with pytest.raises(ImportFormatError, match=r"deep.jsonl: line 2: JSON nested 204 levels deep"):
        read_transcript(jsonl)
    listed = tmp_path / "deep.json"
    listed.write_bytes(
        b'[{"kind":"response","parts":[{"part_kind":"tool-call","tool_name":"t","tool_call_id":"c","args":'
        + DEEP
        + b"}]}]"
    )
    with pytest.raises(ImportFormatError, match=r"deep.json: message 0 is nested 203 levels deep"):
        read_transcript(listed)


@pytest.mark.parametrize("path", [CODEMIE, SPOTTER, CODEX], ids=["codemie", "spotter", "codex"])
def test_json_lines_are_detected_without_parsing_the_whole_file_as_one_document(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON lines never parse as one document; parsing the whole text to find that out peaked at
    13x the file's size (orjson on a str with characters past U+FFFF): only lines are parsed."""
    import orjson

    from sessionstore.formats import registry

    real = orjson.loads
    longest = max(len(line) for line in path.read_text().split("\n"))

    def loads(data: str | bytes) -> object:
        assert len(data) <= longest, "parsed more than one line at once"
        return real(data)

    monkeypatch.setattr(registry.orjson, "loads", loads)
    assert registry._sniff(path, path.read_text()) == detect_format(path)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a": 1}\n', "--format"),  # one object alone: parsed whole, as before
        (b'{\n  "messages": []\n}\n', "line 1"),  # a pretty-printed object: its first line is no object
        (b'{"type": "user", "message": {"content": "hi"}}\n[1]\n', "line 2: expected a JSON object"),
    ],
)
def test_first_line_objects_and_whole_documents_keep_their_errors(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(data)
    assert expected in _error(path)
