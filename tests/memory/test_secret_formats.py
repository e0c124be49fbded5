"""29 credential formats: each is redacted from MEMORY.md and refused by the push scan, named by kind.

Before this detector, 11 of these 29 passed both: the 9 of issue 29 (PGP private key blocks, a bare AWS
secret key, Stripe `sk_live_`, Hugging Face `hf_`, `postgres://user:pass@` URLs, npm `_authToken`,
GitLab `glpat-`, Azure `AccountKey=`, SendGrid keys) and a Slack webhook URL and a PyPI token. Fake
credentials are assembled at run time so scanners skip this file.
"""

from __future__ import annotations

import orjson
import pytest

from sessionstore.memory.redact import REDACTED, find_secret, redactions
from sessionstore.porcelain.sharing.secret_scan import secret_in

B64 = "Zx9Cv8Bn7Mq6Wr5Et4Ty3Ui2Op1As0DfGh"
PGP = (
    "-----BEGIN PGP "
    + "PRIVATE KEY BLOCK-----\n\nlQOYBF3x9k8BCAC7\nq2Lw9ZdE==\n=Ab3d\n-----END PGP PRIVATE KEY BLOCK-----"
)
FORMATS: dict[str, tuple[str, str]] = {  # name: (text holding it, the secret that must go)
    "openai": ("key sk-proj-{}", "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    "openai-legacy": ("{}", "sk-" + "Ab3dEf6hIj9kLm2nOp5q" + "T3BlbkFJ" + "Rs8tUv1wXy4zAb3dEf6h"),
    "anthropic": ("{}", "sk-" + "ant-api03-" + "Zx9Cv8Bn7Mq6Wr5Et4Ty3Ui2Op1As0Df"),
    "aws-key-id": ("{}", "AKIA" + "IOSFODNN7EXAMPL3"),
    "github-classic": ("{}", "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"),
    "github-oauth": ("{}", "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"),
    "github-pat": ("{}", "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    "slack": ("{}", "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    "slack-webhook": (
        "{}",
        "https://hooks.slack.com/services/" + "T0A1B2C3D/B0A1B2C3D/Zx9Cv8Bn7Mq6Wr5Et4Ty3Ui2",
    ),
    "google": ("{}", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "jwt": (
        "{}",
        "eyJhbGciOiJIUzI1NiJ9"
        + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    "bearer": ("curl -H 'Authorization: Bearer {}'", "9f8e7d6c5b4a39281706abcdef"),
    "rsa-private-key": (
        "{}",
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zx\nq2Lw9==\n-----END RSA PRIVATE KEY-----",
    ),
    "openssh-private-key": ("{}", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"),
    "password": ("password={}", "hunter2hunter"),
    "api-key": ("api_key: {}", "0123456789"),
    "token": ('token = "{}"', "abc123def456"),
    "client-secret": ("CLIENT_SECRET={}", "q8Zr-22kLmX0"),
    "aws-secret-assignment": ("aws_secret_access_key = {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "pypi": ("{}", "pypi-AgEIcHlwaS5vcmc" + "A" * 30 + "Zx9Cv8Bn7Mq6Wr5Et4Ty3Ui2Op1As0Df" + "b" * 20),
    # these, and the Slack webhook and PyPI token above, passed before
    "pgp-private-key": ("{}", PGP),
    "aws-secret-bare": ("the key is {} (rotate it)", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "stripe": ("{}", "sk_" + "live_" + "51H8zQ2eZvKYlo2C0aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    "hugging-face": ("HF={}", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    "postgres-url": ("DATABASE_URL=postgres://app:{}@db.internal:5432/prod", "Zr8q-hunter2"),
    "npm": ("//registry.npmjs.org/:_authToken={}", "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "gitlab": ("{}", "glpat-" + "Ab3dEf6hIj9kLm2nOp5q"),
    "azure": (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={};",
        ("Ab3dEf6hIj9kLm2nOp5q" * 5)[:86] + "==",
    ),
    "sendgrid": (
        "{}",
        "SG." + "Ab3dEf6hIj9kLm2nOp5qRs" + "." + "Tu1vWx4yZa7bCd0eFg3hIj6kLm9nOp2qRs5tUv8wXy1",
    ),
}


def test_there_are_29_formats() -> None:
    assert len(FORMATS) == 29


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_is_redacted_from_memory_naming_kind_and_line(name: str) -> None:
    template, secret = FORMATS[name]
    text = f"## Notes\n\n- 2026-11-29 fix-auth: {template.format(secret)} done\n"
    out, done = redactions(text)
    assert secret not in out and REDACTED in out, out
    assert done and done[0].line == 3 and done[0].kind, done
    assert out.startswith("## Notes\n\n- 2026-11-29 fix-auth: ")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_format_is_found_in_a_session_blob_as_push_sends_it(name: str) -> None:
    """A blob is JSONL of messages: the scan sees the text a message holds (quotes escaped)."""
    template, secret = FORMATS[name]
    message = {"parts": [{"part_kind": "user-prompt", "content": template.format(secret)}], "kind": "request"}
    kind = secret_in(orjson.dumps(message) + b"\n")
    assert kind == find_secret(template.format(secret)) and kind, name
