"""Settings: precedence defaults < pyproject < env < flags, provenance, and every refusal."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sessionstore.accounting import settings as settings_mod
from sessionstore.accounting.settings import Settings, find_pyproject
from sessionstore.errors import SettingsError


def write_pyproject(directory: Path, body: str) -> Path:
    path = directory / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n\n[tool.sessionstore]\n' + body)
    return path


def load(tmp_path: Path, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
    return Settings.load(start=tmp_path, env=env or {}, overrides=overrides)


def test_every_field_declares_a_known_kind() -> None:
    """The dataclass is the one list of settings: each field says how it is parsed and checked."""
    kinds = {f.name: f.metadata.get(settings_mod.KIND) for f in dataclasses.fields(Settings)}
    assert kinds == settings_mod.KINDS
    for name in kinds:  # a kind the checks know: a value of no kind is refused with what is allowed
        with pytest.raises(SettingsError, match=f"invalid {name} = .* must be "):
            Settings(**{name: object()})


def test_defaults_match_design(tmp_path: Path) -> None:
    s = load(tmp_path)
    assert s == Settings()
    assert s.context_window_tokens == 1_048_576
    assert (s.full_reserve_fraction, s.micro_reserve_fraction) == (0.20, 0.40)
    assert (s.keep_recent_tokens, s.micro_keep_recent_tokens) == (20_000, 4_000)
    assert s.protected_tools == () and s.tool_priority == {}
    assert (s.ultimate_keep_checkpoints, s.memory_max_lines, s.memory_max_bytes) == (3, 200, 25_000)
    assert s.compaction_enabled and s.ultimate_compaction_enabled and s.memory_compression_enabled
    assert (s.model, s.lock_timeout_s) == ("extractive", 10.0)
    assert s.tokenizer == "bpe-openai"
    assert set(s.sources().values()) == {"default"}


def test_the_tokenizer_setting_takes_a_backend_name_and_refuses_others(tmp_path: Path) -> None:
    assert load(tmp_path, env={"SESSIONSTORE_TOKENIZER": " TikToken "}).tokenizer == "tiktoken"
    with pytest.raises(
        SettingsError, match=r"invalid tokenizer = 'sentencepiece'.*one of bpe-openai, tiktoken"
    ):
        load(tmp_path, env={"SESSIONSTORE_TOKENIZER": "sentencepiece"})


def test_precedence_pyproject_env_flag(tmp_path: Path) -> None:
    pyproject = write_pyproject(
        tmp_path, "context_window_tokens = 1000\nkeep_recent_tokens = 5\nmodel = 'a'\n"
    )
    s = load(
        tmp_path,
        env={"SESSIONSTORE_KEEP_RECENT_TOKENS": "6", "SESSIONSTORE_MODEL": "b"},
        model="c",
        memory_max_lines=None,  # an unset flag
    )
    assert (s.context_window_tokens, s.keep_recent_tokens, s.model) == (1000, 6, "c")
    src = s.sources()
    assert src["context_window_tokens"] == f"pyproject.toml ({pyproject})"
    assert src["keep_recent_tokens"] == "env SESSIONSTORE_KEEP_RECENT_TOKENS"
    assert src["model"] == "flag"
    assert src["memory_max_lines"] == "default"


def test_nearest_pyproject_upward(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "memory_max_lines = 7\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_pyproject(deep) == tmp_path / "pyproject.toml"
    assert load(deep).memory_max_lines == 7
    write_pyproject(tmp_path / "a", "memory_max_lines = 9\n")
    assert load(deep).memory_max_lines == 9


def test_pyproject_without_table_is_defaults(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load(tmp_path) == Settings()


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("compaction_enabled", "false", False),
        ("compaction_enabled", "ON", True),
        ("compaction_enabled", "0", False),
        ("context_window_tokens", "128_000", 128_000),
        ("full_reserve_fraction", "0.1", 0.1),
        ("lock_timeout_s", "2", 2.0),
        ("protected_tools", "read_file, bash", ("read_file", "bash")),
        ("protected_tools", '["a,b", "c"]', ("a,b", "c")),
        ("protected_tools", "", ()),
        ("tool_priority", '{"bash": 2}', {"bash": 2}),
        ("model", "openai:gpt-4o", "openai:gpt-4o"),
    ],
)
def test_env_parsing(tmp_path: Path, key: str, text: str, expected: Any) -> None:
    s = load(tmp_path, env={"SESSIONSTORE_" + key.upper(): text})
    assert getattr(s, key) == expected


def test_foreign_env_vars_are_not_settings(tmp_path: Path) -> None:
    env = {"SESSIONSTORE_DIR": "/x", "SESSIONSTORE_COMPACT_THRESHOLD": "5", "SESSIONSTORE_OTHER": "1"}
    assert load(tmp_path, env=env) == Settings()


def test_toml_int_accepted_for_float(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "lock_timeout_s = 3\n")
    s = load(tmp_path)
    assert s.lock_timeout_s == 3.0 and isinstance(s.lock_timeout_s, float)


REFUSALS = [
    ("context_window_tokens", -1),
    ("context_window_tokens", 0),
    ("context_window_tokens", 1.5),
    ("context_window_tokens", True),
    ("keep_recent_tokens", -5),
    ("full_reserve_fraction", 0),
    ("full_reserve_fraction", 1),
    ("micro_reserve_fraction", 1.2),
    ("micro_reserve_fraction", float("nan")),
    ("compaction_enabled", "yes"),
    ("protected_tools", "bash"),
    ("protected_tools", [1]),
    ("tool_priority", {"bash": "high"}),
    ("tool_priority", ["bash"]),
    ("model", ""),
    ("lock_timeout_s", -1),
    ("memory_max_bytes", 0),
]


@pytest.mark.parametrize(("key", "value"), REFUSALS)
def test_refused_as_flag(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(SettingsError, match=rf"invalid {key} = .*\(from flag\): must be "):
        load(tmp_path, **{key: value})


@pytest.mark.parametrize(
    ("key", "value"), [r for r in REFUSALS if not isinstance(r[1], float) or r[1] == r[1]]
)
def test_refused_in_pyproject(tmp_path: Path, key: str, value: Any) -> None:
    literal = {True: "true", False: "false"}.get(value) if isinstance(value, bool) else None
    if literal is None:
        literal = repr(value).replace("'", '"')
        if isinstance(value, dict):
            literal = "{ " + ", ".join(f'{k} = "{v}"' for k, v in value.items()) + " }"
    pyproject = write_pyproject(tmp_path, f"{key} = {literal}\n")
    with pytest.raises(SettingsError, match=rf"invalid {key} = .*pyproject.toml \({pyproject}\)"):
        load(tmp_path)


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("context_window_tokens", "lots"),
        ("context_window_tokens", "-3"),
        ("full_reserve_fraction", "half"),
        ("compaction_enabled", "maybe"),
        ("tool_priority", "{not json"),
        ("tool_priority", '{"a": 1.5}'),
    ],
)
def test_refused_in_env(tmp_path: Path, key: str, text: str) -> None:
    name = "SESSIONSTORE_" + key.upper()
    with pytest.raises(SettingsError, match=rf"invalid {key} = .*\(from env {name}\)"):
        load(tmp_path, env={name: text})


@pytest.mark.parametrize(("micro", "full"), [(0.2, 0.2), (0.1, 0.3)])
def test_micro_must_reserve_more_than_full(tmp_path: Path, micro: float, full: float) -> None:
    with pytest.raises(SettingsError, match=r"micro_reserve_fraction .* greater than full_reserve_fraction"):
        load(tmp_path, micro_reserve_fraction=micro, full_reserve_fraction=full)


def test_cross_rule_names_sources(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "full_reserve_fraction = 0.5\n")
    with pytest.raises(SettingsError, match=r"\(from default\).*\(from pyproject.toml"):
        load(tmp_path)


def test_unknown_pyproject_key_refused(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "context_window = 5\n")
    with pytest.raises(SettingsError, match=r"unknown setting 'context_window'.*context_window_tokens"):
        load(tmp_path)


def test_unknown_override_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="unknown setting 'bogus'"):
        load(tmp_path, bogus=1)


def test_broken_toml_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.sessionstore\n")
    with pytest.raises(SettingsError, match="cannot read"):
        load(tmp_path)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(SettingsError, match="context_window_tokens"):
        Settings(context_window_tokens=-1)
    assert Settings(protected_tools=["a"]).protected_tools == ("a",)  # type: ignore[arg-type]
    assert Settings(model="x").sources()["model"] == "argument"


def test_as_dict_is_json_ready(tmp_path: Path) -> None:
    d = load(tmp_path, protected_tools=["bash"]).as_dict()
    assert d["protected_tools"] == ["bash"]
    assert list(d) == [f.name for f in dataclasses.fields(Settings)]


def test_a_pyproject_is_parsed_once_and_an_edit_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomllib

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.sessionstore]\ncontext_window_tokens = 4000\n")
    parses = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parses.append(1) or real(text))
    first = Settings.load(start=tmp_path, env={})
    assert Settings.load(start=tmp_path, env={}) == first and first.context_window_tokens == 4000
    assert len(parses) == 1  # the second open reused the parsed table
    pyproject.write_text("[tool.sessionstore]\ncontext_window_tokens = 8000\n")  # another size: an edit
    assert Settings.load(start=tmp_path, env={}).context_window_tokens == 8000 and len(parses) == 2


def test_a_pyproject_that_cannot_name_our_table_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone else's project: no key can be [tool.sessionstore] without the word (or a \u escape),
    # so tomllib is never run, not even on a file it would refuse.
    import tomllib

    parses = []
    real = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parses.append(1) or real(text))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "other"\n[tool.ruff\n')  # not even valid TOML
    assert Settings.load(start=tmp_path, env={}).as_dict() == Settings().as_dict() and parses == []
    pyproject.write_text('[tool]\n"session\\u0073tore" = { context_window_tokens = 4000 }\n')
    assert Settings.load(start=tmp_path, env={}).context_window_tokens == 4000 and parses == [1]
    pyproject.write_text("[tool]\nsessionstore.context_window_tokens = 5000\n")
    assert Settings.load(start=tmp_path, env={}).context_window_tokens == 5000 and parses == [1, 1]
