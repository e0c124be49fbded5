"""`session config` and `session gauge`: output, provenance, errors as one line, no heavy imports."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from sessionstore.cli.main import cli
from sessionstore.porcelain.store import SessionStore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in (
        "SESSIONSTORE_COMPACT_THRESHOLD",
        "SESSIONSTORE_MODEL",
        "SESSIONSTORE_CONTEXT_WINDOW_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.sessionstore]\ncontext_window_tokens = 200000\n")
    return tmp_path


@pytest.fixture
def store(project: Path) -> Path:
    root = project / ".sessions"
    session = SessionStore.open(root).session("demo")
    session.append(
        [ModelRequest(parts=[UserPromptPart("hello " * 650)]), ModelResponse(parts=[TextPart("ok")])]
    )
    return root


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_config_shows_sources(project: Path) -> None:
    code, out, _ = run("config", env={"SESSIONSTORE_KEEP_RECENT_TOKENS": "7"})
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "200000" in lines["context_window_tokens"]
    assert f"pyproject.toml ({project / 'pyproject.toml'})" in lines["context_window_tokens"]
    assert lines["keep_recent_tokens"].endswith("# env SESSIONSTORE_KEEP_RECENT_TOKENS")
    assert lines["model"].endswith("# default") and '"extractive"' in lines["model"]


def test_config_json(project: Path) -> None:
    code, out, _ = run("config", "--json")
    data = orjson.loads(out)
    assert code == 0
    assert data["context_window_tokens"] == {
        "value": 200000,
        "source": f"pyproject.toml ({project / 'pyproject.toml'})",
    }
    assert data["protected_tools"] == {"value": [], "source": "default"}


def test_config_refuses_bad_setting_in_one_line(project: Path) -> None:
    code, out, err = run("config", env={"SESSIONSTORE_FULL_RESERVE_FRACTION": "2"})
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "full_reserve_fraction" in err and "between 0 and 1" in err


def test_gauge_plain(store: Path) -> None:
    code, out, _ = run("--store", str(store), "gauge", "demo", "--plain")
    assert code == 0
    assert out.startswith("○ ") and "of 200k estimate · micro in " in out and out.endswith("full at 80%\n")
    assert "\x1b[" not in out


def test_gauge_json_uses_window_and_levels(store: Path) -> None:
    code, out, _ = run("--store", str(store), "gauge", "demo", "--json", "--window", "1000")
    data = orjson.loads(out)
    assert code == 0
    assert (data["session"], data["window"], data["micro_level"], data["full_level"]) == (
        "demo",
        1000,
        600,
        800,
    )
    assert 600 < data["used"] <= 800 and data["band"] == "yellow"


def test_gauge_honours_threshold_override(store: Path) -> None:
    code, out, _ = run(
        "--store", str(store), "gauge", "demo", "--json", env={"SESSIONSTORE_COMPACT_THRESHOLD": "100"}
    )
    assert code == 0 and orjson.loads(out)["band"] == "red"


def test_gaugeunknown_session(store: Path) -> None:
    code, _, err = run("--store", str(store), "gauge", "dmeo")
    assert code == 2 and "'demo'" in err


def test_gauge_starts_without_pydantic_ai(store: Path) -> None:
    code = (
        "import sys\n"
        "from sessionstore.cli.main import cli\n"
        f"try:\n    cli(['--store', {str(store)!r}, 'gauge', 'demo', '--plain'])\n"
        "except SystemExit as exit:\n    assert not exit.code, exit.code\n"
        "bad = [m for m in ('pydantic_ai', 'tiktoken') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=store.parent)
    assert done.returncode == 0, done.stderr
    assert "of 200k" in done.stdout


def test_gauge_reads_recorded_capacity_and_measured_prefix(project: Path) -> None:
    from pydantic_ai.usage import RequestUsage

    root = project / ".sessions"
    session = SessionStore.open(root).session("m")
    response = ModelResponse(
        parts=[TextPart("hi")],
        usage=RequestUsage(input_tokens=100_000, output_tokens=10),
        model_name="gpt-4o",
        provider_name="openai",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compaction policy is not under test here
        commit = session.append([ModelRequest(parts=[UserPromptPart("hello")]), response])
    assert commit.extra["capacity"] == 128_000 and commit.extra["measured"] == 100_010
    code, out, _ = run("--store", str(root), "gauge", "m", "--json")
    data = orjson.loads(out)
    assert code == 0 and data["measured"] is True
    # min(recorded capacity, configured 200k); used is the measured prefix, not the local estimate
    assert (data["window"], data["used"], data["band"]) == (128_000, 100_010, "yellow")
    code, out, _ = run("--store", str(root), "gauge", "m", "--json", "--model", "extractive")
    assert orjson.loads(out)["window"] == 200_000  # an explicit model wins over the recorded one
