"""The counting process's side: `python -m sessionstore.accounting.count_worker BACKEND`.

A child of a writing process (`count_process` starts it) that loads one tokenizer backend and then
answers requests on its stdin/stdout until its stdin closes (its parent exited or let it go). It
imports only the tokenizer module: no store, no pydantic, nothing that writes.

The wire format, both directions little-endian:

- request: `u32 n`, then `n` times `u32 length` + that many bytes (the text, UTF-8 with lone
  surrogates passed through, `surrogatepass`, so every Python `str` makes the trip unchanged);
- answer: `u64` the `time.monotonic_ns()` at which the counts were done (the parent's clock too:
  CLOCK_MONOTONIC is one per machine, so the parent sees how long the child really took), then `n` x
  `u64`, each text's count by the backend's `count`, in order;
- once at start, before any request is read: one byte, `R` (the backend loaded) or `F` (it did
  not: the process exits after it, and the parent counts on its own thread).

A count here is the same call on the same `str` the parent's own backend would make, so the answer
is exactly what the parent would have counted (tests/accounting/test_count_process.py compares them
on ../shared/realdata and on hypothesis texts).
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import time

__all__ = [
    "LOADED",
    "NOT_LOADED",
    "decode_request",
    "encode_answer",
    "encode_request",
    "main",
    "read_exactly",
]

LOADED = b"R"
NOT_LOADED = b"F"
_U32 = struct.Struct("<I")


def encode_request(texts: list[str]) -> bytes:
    """The request for `texts` (see the module's wire format)."""
    parts = [_U32.pack(len(texts))]
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        parts.append(_U32.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def decode_request(read: object) -> list[str] | None:
    """One request read with `read(n) -> bytes` (exactly n bytes, or b"" at end of input); None at end."""
    head = read(4)  # type: ignore[operator]
    if not head:
        return None
    (n,) = _U32.unpack(head)
    texts = []
    for _ in range(n):
        (size,) = _U32.unpack(read(4))  # type: ignore[operator]
        texts.append(read(size).decode("utf-8", "surrogatepass"))  # type: ignore[operator]
    return texts


def encode_answer(counts: list[int], done_ns: int) -> bytes:
    return struct.pack(f"<{len(counts) + 1}Q", done_ns, *counts)


def read_exactly(fd: int, n: int) -> bytes:
    """Exactly `n` bytes from `fd`, or b"" when it ends first (the other side is gone)."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return b""
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(argv: list[str]) -> int:
    from sessionstore.accounting import tokenizer

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; stdin's end stops us
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    try:
        counter = tokenizer.load_backend(argv[0])
    except Exception:
        _write_all(stdout, NOT_LOADED)
        return 1
    _write_all(stdout, LOADED)

    def read(n: int) -> bytes:
        data = read_exactly(stdin, n)
        if len(data) != n and n:
            raise EOFError
        return data

    while True:
        try:
            texts = decode_request(read)
        except EOFError:
            return 0
        if texts is None:
            return 0
        try:
            counts = [counter.count(text) for text in texts]
            _write_all(stdout, encode_answer(counts, time.monotonic_ns()))
        except BrokenPipeError:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
