"""memory/secrets.py: the detector is linear in its text, and its entropy rules are detect-secrets'.

Before, one 40 KB message shaped `a-a-a-...-token=$x` kept `session push`'s scan busy for 147 s and a
60 KB MEMORY.md kept `memory squash` busy for 142 s: the patterns backtracked quadratically. The
shapes here (tests/helpers/adversarial.py) run in a child process with a timeout, so a quadratic
scan fails the test instead of hanging it; benchmarks/bench_secrets.py times them.
"""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.adversarial import SHAPES
from helpers.procs import HELPERS
from sessionstore.memory.redact import redact
from sessionstore.memory.secrets import QUOTED_MAX, scan


def test_every_adversarial_shape_scans_in_one_pass() -> None:
    probe = (
        "from helpers.adversarial import adversarial\n"
        "from sessionstore.memory.redact import redact\n"
        "from sessionstore.porcelain.sharing.secret_scan import secret_in\n"
        "import orjson\n"
        "text = adversarial(300_000)\n"
        "redact(text)\n"
        "secret_in(orjson.dumps({'parts': [{'content': text}]}))\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,  # ~1 s each; the backtracking patterns took hours on 1 MB, minutes on this
        env={"PYTHONPATH": str(HELPERS.parent)},
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_the_dash_keyword_shape_is_not_a_secret_but_a_real_one_after_it_is() -> None:
    text = SHAPES["dash-keyword"]
    assert redact(text) == text  # `$x` names a variable
    assert redact(text[:-2] + "hunter2hunter") == text[:-2] + "[redacted]"


def test_a_variable_named_for_its_credential_is_code_not_a_secret() -> None:
    # A real Claude Code transcript read a Phoenix app.js: `params: { _csrf_token: csrfToken }` stopped
    # `session push` of the whole session (the README tour, tests/test_readme_tour.py).
    for code in ("params: { _csrf_token: csrfToken },", "api_key = apiKey", "password: db_password"):
        assert scan(code.encode()) == [], code
    for secret in ("token: csrfToken9x", "password: hunter2hunter", "api_key = 'apiKeyZ7q'"):
        assert [f.kind for f in scan(secret.encode())] == ["Secret Keyword"], secret


def test_a_quoted_string_longer_than_the_cap_is_data_not_a_key() -> None:
    blob = '"' + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * (QUOTED_MAX // 32 + 1) + '"'
    assert scan(blob.encode()) == []
    assert [f.kind for f in scan(b'"Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"')] == ["Base64 High Entropy String"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcdef0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZghijklmnopqrstuvwxyz+/=_-", min_size=9))
def test_quoted_strings_are_judged_as_detect_secrets_judges_them(secret: str) -> None:
    """Our shortcut (fewer distinct characters than the limit allows is never flagged) never changes
    a verdict of the plugins' own entropy function."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    secret = secret[:QUOTED_MAX]
    plugin = HexHighEntropyString() if all(c in "0123456789abcdefABCDEF" for c in secret) else None
    plugin = plugin or Base64HighEntropyString()
    theirs = plugin.calculate_shannon_entropy(secret) > plugin.entropy_limit
    ours = any(f.kind == plugin.secret_type for f in scan(f'x = "{secret}"'.encode()))
    if ours:
        assert theirs
    elif theirs:  # then one of detect-secrets' own heuristic filters spoke
        from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string

        assert is_sequential_string(secret) or is_potential_uuid(secret), secret
