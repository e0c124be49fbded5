"""A local stand-in for an OpenAI-compatible chat completions endpoint, for real pydantic-ai model strings.

`session chat NAME --model openai-chat:gpt-4o-mini` with OPENAI_BASE_URL pointing here makes real HTTP
requests through pydantic-ai's OpenAI provider to this server on 127.0.0.1 (no network beyond the
loopback). A prompt containing `[slow]` is held until `release` is set (or the client goes away):
that is a request in flight, for Ctrl-C and busy-command tests. Usage is reported from the request's
size, so the gauge moves as the context grows.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(self) -> None:
        self.held = threading.Event()
        """Set while a `[slow]` request is being held."""
        self.release = threading.Event()
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                last = body["messages"][-1]
                text = last.get("content") if isinstance(last.get("content"), str) else json.dumps(last)
                if "[slow]" in text:
                    owner.held.set()
                    owner.release.wait(60)
                    owner.held.clear()
                answer = f"echo: {text}"
                size = len(json.dumps(body["messages"])) // 4
                reply = {
                    "id": f"cmpl-{len(owner.requests)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": size, "completion_tokens": 5, "total_tokens": size + 5},
                }
                data = json.dumps(reply).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client cancelled and closed the connection
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
