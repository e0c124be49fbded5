"""SessionStore: layout, opening, listing, info without pydantic-ai, fork sharing blobs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.messages import tagged_turn
from sessionstore.errors import NotAStoreError, SessionStoreError, UnknownRevision
from sessionstore.porcelain.store import SessionStore, default_root


def test_open_creates_the_layout(tmp_path) -> None:
    store = SessionStore.open(tmp_path / "s")
    assert (store.root / "VERSION").read_text() == "1\n"
    assert (store.root / ".gitignore").read_text() == "locks/\nindex/\n"
    for sub in ("objects", "logs", "refs/checkpoints", "locks"):
        assert (store.root / sub).is_dir()
    assert store.sessions() == []


def test_open_without_create_and_foreign_versions(tmp_path) -> None:
    with pytest.raises(NotAStoreError, match="session init"):
        SessionStore.open(tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists()
    store = SessionStore.open(tmp_path / "s")
    (store.root / "VERSION").write_text("2\n")
    with pytest.raises(NotAStoreError, match="format '2'"):
        SessionStore.open(store.root)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotAStoreError, match="not a directory"):
        SessionStore.open(tmp_path / "file")


def test_a_store_that_cannot_be_created_is_a_one_line_error(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotAStoreError, match=r"cannot create a session store at .*: choose another") as err:
        SessionStore.open(tmp_path / "file" / "below")  # the OS says "Not a directory" to the mkdir
    assert "\n" not in str(err.value) and (tmp_path / "file").read_text() == "x"


def test_default_root_is_at_the_git_top_level(tmp_path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert default_root(tmp_path / "repo" / "a" / "b") == (tmp_path / "repo" / ".sessions").resolve()
    (tmp_path / "plain").mkdir()
    assert default_root(tmp_path / "plain") == (tmp_path / "plain" / ".sessions").resolve()


def test_sessions_exists_and_info(store: SessionStore) -> None:
    store.session("b").append(tagged_turn(0, 0))
    store.session("a").append(tagged_turn(0, 1, size=3))
    store.session("empty")  # opening does not create a log
    assert store.sessions() == ["a", "b"]
    assert store.exists("a") and not store.exists("empty")
    info = store.info("a")
    assert (info.name, info.count, info.checkpoints) == ("a", 3, 0)
    assert info.tokens == store.session("a").tokens > 0
    assert store.info("empty").count == 0 and store.info("empty").head is None
    assert store.infos() == [store.info("a"), store.info("b")]


def test_unknown_session_suggests_close_names(store: SessionStore) -> None:
    store.session("fix-auth").append(tagged_turn(0, 0))
    with pytest.raises(UnknownRevision, match="did you mean 'fix-auth'"):
        store.session("fix-aut", create=False)
    with pytest.raises(UnknownRevision, match="session list"):
        store.session("zzz", create=False)


def test_fork_shares_blobs_and_writes_no_object(store: SessionStore) -> None:
    source = store.session("src")
    for i in range(3):
        source.append(tagged_turn(0, i))
    objects_before = sorted(store.objects)
    fork = store.fork("src@2", "copy")
    assert sorted(store.objects) == objects_before  # nothing copied, nothing new
    assert fork.history == tagged_turn(0, 0) + tagged_turn(0, 1, size=2)
    head = fork.head
    assert head.kind == "fork" and head.extra["from"] == "src" and head.target == store.resolve("src@2").id
    assert head.blobs == [c.blob for c in source.log()[::-1][:2]]
    fork.append(tagged_turn(1, 0))
    assert store.session("src").history == source.history  # the source is untouched
    with pytest.raises(SessionStoreError, match="already exists"):
        store.fork("src", "copy")
    assert store.fsck().ok


def test_info_and_listing_never_import_pydantic_ai(store: SessionStore) -> None:
    """A read-only caller opens with warm=False: no warm-up thread, nothing heavy imported."""
    store.session("a").append(tagged_turn(0, 0))
    code = (
        "import sys, threading\n"
        "from sessionstore.porcelain.store import SessionStore\n"
        f"s = SessionStore.open({str(store.root)!r}, create=False, warm=False)\n"
        "print([s.info(n).count for n in s.sessions()], s.log('a').head().seq)\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'tiktoken', 'bpe_openai'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    counts, modules = out.stdout.splitlines()
    assert counts == "[2] 1"
    assert modules == "[]"


def test_stray_files_in_logs_are_not_sessions(store: SessionStore) -> None:
    from helpers.messages import tagged_turn

    store.session("s").append(tagged_turn(0, 0))
    (store.logs_dir / "s (copy).jsonl").write_bytes((store.logs_dir / "s.jsonl").read_bytes())
    (store.logs_dir / "d.jsonl").mkdir()
    assert store.sessions() == ["s"]
    assert store.stray_logs() == ["d.jsonl", "s (copy).jsonl"]
    assert [info.name for info in store.infos()] == ["s"]


def test_open_warms_up_the_first_append_in_the_background(tmp_path) -> None:
    """What a first append would build lazily is built on daemon threads once the store opens."""
    code = (
        "import sys, threading\n"
        "failed = []\n"
        "threading.excepthook = failed.append\n"
        "import pydantic_ai  # the agent's code first, as the README writes it (see the test below)\n"
        "from sessionstore import SessionStore\n"
        "from sessionstore.accounting import tokenizer, tokens\n"
        "from sessionstore.plumbing import codec\n"
        f"store = SessionStore.open({str(tmp_path / 's')!r}); SessionStore.open(store.root)\n"
        "warm = [t for t in threading.enumerate() if t.name.startswith('sessionstore-')]\n"
        "assert warm and all(t.daemon for t in warm), warm\n"
        "assert tokens.wait_preloaded(60)\n"
        "assert tokenizer._loaded and tokenizer._counter is not None\n"
        "writers = {'sessionstore.porcelain.session.session', 'sessionstore.plumbing.locks'}\n"
        "assert writers <= set(sys.modules)\n"
        "assert type(codec.adapter().serializer).__name__ == 'SchemaSerializer'  # built, not deferred\n"
        "assert not failed and not tokens.preload_errors, (failed, tokens.preload_errors)\n"
        "from pydantic_ai.messages import ModelRequest, UserPromptPart\n"
        "store.session('a').append([ModelRequest(parts=[UserPromptPart('hi')])], compact=False)\n"
        "print('warm')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "warm\n", out.stderr


@pytest.mark.parametrize("then", ["import pydantic_ai", "from pydantic_ai.models.test import TestModel"])
def test_pydantic_ai_imported_right_after_open_is_never_half_made(tmp_path, then: str) -> None:
    """Two threads importing pydantic-ai at once each found the other's half-made module (`ImportError:
    cannot import name ... from partially initialized module 'pydantic_ai.messages'`): the warm-up
    imports only once pydantic-ai is imported, and warms the tokenizer before that."""
    code = (
        "import sys, time\n"
        "from sessionstore import SessionStore\n"
        "from sessionstore.accounting import tokenizer, tokens\n"
        f"SessionStore.open({str(tmp_path / 's')!r})\n"
        "time.sleep(float(sys.argv[1]))\n"
        f"{then}\n"
        "assert tokens.wait_preloaded(60) and tokenizer._loaded and not tokens.preload_errors\n"
        "print('ok')\n"
    )
    for delay in ("0", "0.005", "0.02"):  # each failed before, the import meeting the warm-up's
        out = subprocess.run([sys.executable, "-c", code, delay], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout == "ok\n", (delay, out.stderr[-800:])
