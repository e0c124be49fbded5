"""Redaction: the shapes MEMORY.md holds, idempotence, and ordinary text left alone (every credential
format: tests/memory/test_secret_formats.py)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.memory.redact import REDACTED, find_secret, find_secret_in, redact, redactions
from sessionstore.memory.secrets import scan

# Fake credentials assembled at run time so secret scanners do not flag this file.
SECRETS = {
    "openai": "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "anthropic": "sk-" + "ant-api03-" + "Zx9Cv8Bn7Mq6Wr5Et4Ty3Ui2Op1As0Df",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "github-classic": "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
    "github-oauth": "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github-pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_vendor_token_is_redacted(name: str) -> None:
    secret = SECRETS[name]
    out = redact(f"- 2026-11-29 fix-auth: used {secret} to call the API")
    assert secret not in out
    assert REDACTED in out
    assert out.startswith("- 2026-11-29 fix-auth: used ")


def test_bearer_token_keeps_the_scheme() -> None:
    out = redact("curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706abcdef' https://x")
    assert out == "curl -H 'Authorization: Bearer [redacted]' https://x"


def test_pem_private_key_block_is_redacted_whole() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zx\nq2Lw9==\n-----END RSA PRIVATE KEY-----"
    out = redact(f"key:\n{block}\nafter")
    assert out == f"key:\n{REDACTED}\nafter"


def test_truncated_pem_block_is_redacted_to_its_end() -> None:
    out = redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    assert "b3BlbnNz" not in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2hunter", "password=[redacted]"),
        ("DB_PASSWORD: 's3cr3t!x'", "DB_PASSWORD: '[redacted]'"),
        ('secret = "abcd1234"', 'secret = "[redacted]"'),
        ("token=abc123def", "token=[redacted]"),
        ("api_key: 0123456789", "api_key: [redacted]"),
    ],
)
def test_assignments_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_ordinary_text_is_not_redacted() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    text = "\n".join(
        [
            f"- blob {digest} and commit 9f2c1e4a7b3d",
            "- keep_recent_tokens = 20000 and max_tokens: 4096",
            "- the tokenizer counts tokens; task-runner and disk-usage are fine",
            "- `jwt` (Bearer Authorization) provider; password=$DB_PASSWORD from env; token: <your token>",
            "- AKIA is the AWS prefix; sk-learn is a library",
        ]
    )
    assert redact(text) == text


@pytest.mark.parametrize(
    "code",
    [
        "authConfig.GEMINI_API_KEY = env.GEMINI_API_KEY;",  # from a real Claude Code transcript
        "api_key = os.environ.get('API_KEY')",
        "token: self.settings.token,",
        "password = getpass()",
    ],
)
def test_code_that_reads_a_secret_from_elsewhere_is_not_redacted(code: str) -> None:
    """A value that is a dotted name or a call is a reference, not a secret (push refused such code)."""
    assert redact(code) == code


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


_FRAGMENTS = [
    "password=hunter2hunter",
    "api_key = env.KEY",
    "sk-ant-" + "a" * 20,
    "xsk-ant-" + "a" * 20,
    "Bearer abc123def456ghi789",
    "AKIA" + "A" * 16,
    "ghp_" + "a1" * 18,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
    "TOKEN: abcd1234",
    "tokens: 20000",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=30), max_size=8).map(" ".join))
def test_find_secret_finds_exactly_what_redact_would_change(text: str) -> None:
    found = find_secret(text)
    assert (found is None) == (redact(text) == text), (found, text)
    if found:
        assert found in {f.kind for f in scan(text.encode())}


def test_find_secret_names_the_kind() -> None:
    assert find_secret("x" * 5000 + " GITHUB=ghp_" + "a1" * 18) == "GitHub Token"
    assert find_secret("x" * 5000 + " GITHUB ghp_" + "a1" * 18) == "GitHub Token"
    assert find_secret("nothing to see, 20000 tokens") is None


def test_redactions_name_kind_and_line() -> None:
    text = "# Notes\n- fine\n- used password=hunter2hunter and ghp_" + "a1" * 18 + "\n"
    out, done = redactions(text)
    assert out == "# Notes\n- fine\n- used password=[redacted] and [redacted]\n"
    assert [(r.kind, r.line) for r in done] == [("Secret Keyword", 3), ("GitHub Token", 3)]
    assert done[0].describe() == "redacted a secret (Secret Keyword) on line 3"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=30), max_size=8).map(" ".join))
def test_the_byte_scan_agrees_with_the_text_scan(text: str) -> None:
    assert find_secret_in(text.encode()) == find_secret(text)
