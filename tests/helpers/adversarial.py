"""Texts shaped to make a backtracking secret scan quadratic, each ~40 KB; `adversarial(n)` joins them
to about n bytes (issue 29: one 40 KB `a-a-a-...-token=$x` message made `session push` take 147 s)."""

from __future__ import annotations

SHAPES = {
    "dash-keyword": "a-" * 20_000 + "token=$x",
    "assignments": "password= " * 4_000,
    "url-no-at": "://user:pass" * 3_400,
    "key-headers": "-----BEGIN RSA PRIVATE KEY-----!" * 1_250,
    "quoted-base64": '"Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" ' * 1_100,
    "quoted-hex": '"9f8e7d6c5b4a39281706" ' * 1_800,
    "bearer": "Bearer 1 " * 4_400,
    "aws-prefixes": "AKIA" * 10_000,
    "jwt-dots": "eyJa." * 8_000,
    "slack-dashes": "xoxb-" + "1-" * 20_000,
    "long-token": "x" * 40_000,
}


def adversarial(size: int) -> str:
    """The shapes in turn, repeated until the text is `size` characters (one line each)."""
    pieces: list[str] = []
    total = 0
    while total < size:
        for shape in SHAPES.values():
            pieces.append(shape)
            total += len(shape) + 1
    return "\n".join(pieces)[:size]
