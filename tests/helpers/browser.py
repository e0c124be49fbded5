"""Headless Chromium (Debian's package) opening a local page: the DOM after load, and a screenshot.

A fresh profile per call, and every background service that could reach the network switched off;
the page itself is a file:// URL. `dom` returns what `--dump-dom` prints: the document as the
browser built it (after any script would have run), parsed back with the stdlib by the tests.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def require_chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium not found on PATH (apt-get install chromium; .ci/run installs it)")


def _run(page: Path, *flags: str, timeout: float = 120) -> str:
    browser = require_chromium()
    with tempfile.TemporaryDirectory(prefix="sessionstore-chromium-") as profile:
        done = subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", *flags, page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dom(page: Path) -> str:
    return _run(page, "--dump-dom")


def screenshot(page: Path, png: Path, width: int = 1100, height: int = 1400) -> bytes:
    _run(page, f"--screenshot={png}", f"--window-size={width},{height}")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return data


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Element] = []
        self.text: list[str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)


VOID = {"meta", "br", "img", "input", "link", "hr", "source", "area", "base", "col", "embed", "wbr"}


class Tree(HTMLParser):
    """The elements of a document, in order, each with its attributes, parent and text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self.elements: list[Element] = []
        self._open = self.root
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs}, self._open)
        self._open.children.append(el)
        self.elements.append(el)
        if tag not in VOID:
            self._open = el

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs}, self._open)
        self._open.children.append(el)
        self.elements.append(el)

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self._open
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self._open = node.parent

    def handle_data(self, data: str) -> None:
        self._open.text.append(data)

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [
            e for e in self.elements if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
        ]
