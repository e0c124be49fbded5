"""A real S3 API server for the tests and benchmarks: moto in server mode on 127.0.0.1, a free port.

`moto_server()` starts moto's server (this file run as a script) as a child process, waits until it
answers, and stops it when the block ends. No Docker, no network: every request goes to the loopback
address. `env` is what a process needs to reach it by obstore's conventions (AWS_ENDPOINT_URL,
credentials, region, AWS_ALLOW_HTTP for plain http), and nothing else: the tests' processes share only
the endpoint.

One change to moto's own `moto.server`: requests that write (PUT, POST, DELETE) are handled one at a
time. moto's threaded server checks `If-None-Match: *` and then stores the object in two steps, so
two racing conditional creates of one key could both succeed (seen in 1 of 50 trials of 8 threads);
S3, GCS, Azure and MinIO make that check and the write one atomic step, which the serialization
restores. Reads stay concurrent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    log: Path
    """moto's request log: one line per request it served (the benchmarks count them)."""

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def bucket(self, name: str | None = None) -> str:
        """Create a fresh bucket; its name."""
        name = name or f"b{uuid.uuid4().hex[:16]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        return name

    def requests_logged(self) -> int:
        """Requests the server has logged so far (werkzeug writes one line per request)."""
        return sum(
            1
            for line in self.log.read_text(errors="replace").splitlines()
            if '" ' in line and "HTTP/" in line
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # it answered
    except OSError:
        return False


@contextlib.contextmanager
def moto_server(log_dir: Path) -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1 for the block; its request log under `log_dir`."""
    from helpers.procs import stop  # here: this file also runs as the server, without tests/ importable

    for _attempt in range(3):  # a free port can be taken between the probe and moto's bind
        port = free_port()
        log = log_dir / f"moto-{port}.log"
        endpoint = f"http://127.0.0.1:{port}"
        with open(log, "wb") as out:
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            proc = subprocess.Popen(
                [sys.executable, __file__, str(port)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline and not _answers(endpoint):
            time.sleep(0.05)
        if proc.poll() is None and _answers(endpoint):
            break
        proc.kill()
        proc.wait()
    else:
        raise RuntimeError(f"moto server did not start: {log.read_text(errors='replace')[-2000:]}")
    try:
        yield S3Server(endpoint, log)
    finally:
        stop(proc)


def _serve(port: int) -> None:
    """moto's `moto.server` main, with writes handled one at a time (see the module docstring)."""
    import signal
    import threading

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import run_simple

    moto_app = DomainDispatcherApplication(create_backend_app)
    writing = threading.Lock()

    def app(environ, start_response):  # type: ignore[no-untyped-def]
        if environ["REQUEST_METHOD"] in ("PUT", "POST", "DELETE"):
            with writing:
                return list(moto_app(environ, start_response))
        return moto_app(environ, start_response)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    os.environ["MOTO_PORT"] = str(port)
    run_simple("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
