"""Blobs: named by the sha256 of their exact bytes, verified on read, never overwritten."""

from __future__ import annotations

import hashlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore.errors import CorruptObjectError
from sessionstore.plumbing.objects import HASH_AT_ONCE, ObjectStore, hash_aside, hash_bytes, is_object_id


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=2048))
def test_write_read_round_trip(tmp_path_factory, data: bytes) -> None:
    objects = ObjectStore(tmp_path_factory.mktemp("o"))
    oid = objects.write(data)
    assert oid == hashlib.sha256(data).hexdigest() == hash_bytes(data)
    assert objects.path(oid) == objects.dir / oid[:2] / oid[2:]
    assert objects.read(oid) == data and objects.exists(oid)
    assert list(objects) == [oid]


def test_an_existing_object_is_kept_and_touched_not_rewritten(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    oid = objects.write(b"same")
    path = objects.path(oid)
    os.utime(path, (1_600_000_000, 1_600_000_000))
    inode = path.stat().st_ino
    assert objects.write(b"same") == oid
    assert path.stat().st_ino == inode  # the same file, not a replacement
    assert path.stat().st_mtime > 1_600_000_000  # gc's grace counts from now
    assert not list(objects.stray_temps())


def test_an_object_pruned_between_check_and_touch_is_written_again(tmp_path, monkeypatch) -> None:
    # gc deleting an unreachable object just as a writer found it made the writer's touch raise
    # FileNotFoundError out of the append.
    objects = ObjectStore(tmp_path)
    oid = objects.write(b"same")
    real_utime = os.utime

    def pruned_first(path, *args, **kwargs) -> None:
        os.unlink(path)
        real_utime(path, *args, **kwargs)

    monkeypatch.setattr(os, "utime", pruned_first)
    assert objects.write(b"same") == oid
    monkeypatch.undo()
    assert objects.read(oid) == b"same"


def test_a_flipped_byte_is_named_on_read(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    oid = objects.write(b'{"kind":"request"}\n')
    path = objects.path(oid)
    data = bytearray(path.read_bytes())
    data[3] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match=oid[:12]) as err:
        objects.read(oid)
    assert "corrupt" in str(err.value)


def test_a_missing_object_is_named(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    oid = "ab" * 32
    with pytest.raises(CorruptObjectError, match=f"object {oid[:12]} is missing"):
        objects.read(oid)


@pytest.mark.parametrize("bad", ["", "abc", "g" * 64, "A" * 64, "../" + "a" * 61])
def test_malformed_ids_never_become_paths(tmp_path, bad: str) -> None:
    assert not is_object_id(bad)
    with pytest.raises(CorruptObjectError, match="malformed object id"):
        ObjectStore(tmp_path).path(bad)


def test_iteration_skips_temps_and_strays(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    oid = objects.write(b"x")
    (objects.dir / oid[:2] / ".tmp-crashed").write_bytes(b"half")
    (objects.dir / "zz").mkdir()
    (objects.dir / "README").write_text("not an object")
    assert list(objects) == [oid]
    assert [p.name for p in objects.stray_temps()] == [".tmp-crashed"]
    objects.path(oid).unlink()
    assert not objects.exists(oid) and list(objects) == []


def _blobs(objects: ObjectStore, sizes: list[int]) -> list[str]:
    return [objects.write(bytes([65 + i % 26]) * n + str(i).encode() + b"\n") for i, n in enumerate(sizes)]


SIZES = {"one": [10], "several": [3000 * (i % 3) for i in range(40)]}


@pytest.mark.parametrize("sizes", SIZES.values(), ids=SIZES.keys())
def test_load_hands_verified_blobs_in_order(tmp_path, sizes: list[int]) -> None:
    objects = ObjectStore(tmp_path)
    oids = _blobs(objects, sizes)
    assert objects.load(oids, lambda data: [len(d) for d in data]) == [
        n + len(str(i)) + 1 for i, n in enumerate(sizes)
    ]


@pytest.mark.parametrize("sizes", SIZES.values(), ids=SIZES.keys())
def test_load_names_a_corrupt_blob_before_decoding(tmp_path, sizes: list[int]) -> None:
    objects = ObjectStore(tmp_path)
    oids = _blobs(objects, sizes)
    path = objects.path(oids[-1])
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))
    seen: list[list[bytes]] = []
    with pytest.raises(CorruptObjectError, match=oids[-1][:12]):
        objects.load(oids, seen.append)
    assert seen == []  # decode never runs on a store with a bad blob
    os.unlink(objects.path(oids[0]))
    with pytest.raises(CorruptObjectError, match=f"{oids[0][:12]} is missing"):
        objects.load(oids, list)  # the first bad blob in order is the one named


# -- hostile entries at an object's path (DESIGN §2: an object that is not a regular file is refused) --


def test_a_directory_at_a_blobs_path_is_not_taken_for_the_blob(tmp_path) -> None:
    from sessionstore.errors import SessionStoreError

    objects = ObjectStore(tmp_path)
    data = b'{"x":1}\n'
    path = objects.path(hash_bytes(data))
    path.mkdir(parents=True)
    with pytest.raises(SessionStoreError, match=r"is a directory, not a blob; move it out"):
        objects.write(data)
    with pytest.raises(CorruptObjectError, match="not a regular file"):
        objects.read(hash_bytes(data))
    path.rmdir()
    assert objects.read(objects.write(data)) == data


def test_a_wrong_sized_file_at_a_blobs_path_is_replaced_by_the_right_bytes(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    data = b'{"x":1}\n'
    oid = objects.write(data)
    objects.path(oid).write_bytes(data[:3])  # truncated behind the store's back
    assert objects.write(data) == oid
    assert objects.read(oid) == data


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "dangling link"])
def test_non_regular_objects_neither_hang_nor_flood_the_reader(tmp_path, kind: str) -> None:
    import os

    objects = ObjectStore(tmp_path)
    oid = hash_bytes(b"anything")
    path = objects.path(oid)
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)  # a blocking open would wait for a writer forever
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")  # an unbounded read would fill memory
    else:
        path.symlink_to(tmp_path / "nowhere")
    with pytest.raises(CorruptObjectError, match="not a regular file"):
        objects.read(oid)
    assert list(objects) == []
    assert [what for _, what in objects.irregular()] == ["a FIFO" if kind == "fifo" else "a symlink"]


def test_a_symlinked_objects_directory_is_refused(tmp_path) -> None:
    from sessionstore.errors import SessionStoreError

    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "objects").symlink_to(outside)
    objects = ObjectStore(tmp_path / "store")
    with pytest.raises(SessionStoreError, match=r"objects is a symlink"):
        objects.write(b"x")
    with pytest.raises(SessionStoreError, match=r"objects is a symlink"):
        objects.load([hash_bytes(b"x")], lambda blobs: blobs)
    assert list(outside.iterdir()) == []


def test_settle_pruning_puts_back_what_is_needed_and_deletes_the_rest(tmp_path) -> None:
    objects = ObjectStore(tmp_path)
    kept, dropped = objects.write(b"needed\n"), objects.write(b"garbage\n")
    for oid in (kept, dropped):  # a gc that crashed between renaming aside and unlinking
        os.rename(objects.path(oid), objects.path(oid).with_name(".gc-" + objects.path(oid).name))
    assert objects.settle_pruning({kept}) == 1
    assert objects.read(kept) == b"needed\n" and not objects.exists(dropped)
    assert list(objects.pruning_leftovers()) == []
    assert objects.settle_pruning({kept}) == 0  # nothing left to settle


@pytest.mark.parametrize("decode_fails", [False, True])
def test_a_big_load_hashed_while_decoding_still_names_the_bad_blob(tmp_path, decode_fails: bool) -> None:
    """Past HASH_ASIDE the blobs are hashed on a thread while `decode` runs: a bad blob still raises
    CorruptObjectError, whatever `decode` returned or raised on its bytes."""
    from sessionstore.plumbing.objects import HASH_ASIDE

    objects = ObjectStore(tmp_path)
    oids = _blobs(objects, [HASH_ASIDE // 2, HASH_ASIDE // 2 + 10, 100])
    good: list[list[bytes]] = []
    assert objects.load(oids, lambda data: good.append(data) or len(data)) == 3
    assert [hash_bytes(d) for d in good[0]] == oids
    path = objects.path(oids[1])
    data = bytearray(path.read_bytes())
    data[HASH_ASIDE // 4] ^= 0x01  # a flipped bit deep inside the second blob
    path.write_bytes(bytes(data))

    def decode(blobs: list[bytes]) -> int:
        if decode_fails:
            raise ValueError("unparsable")
        return len(blobs)

    with pytest.raises(CorruptObjectError, match=oids[1][:12]):
        objects.load(oids, decode)


@pytest.mark.parametrize("existing", [False, True])
def test_a_failed_background_check_stores_nothing_and_names_its_error(tmp_path, existing: bool) -> None:
    # The check runs beside the write and gates the object's naming: a refusal leaves no object and
    # no temp file (or an existing object untouched), and the caller gets the check's own error.
    objects = ObjectStore(tmp_path)
    data = b'{"kind":"request"}\n'
    if existing:
        oid = objects.write(data)
        os.utime(objects.path(oid), (1_600_000_000, 1_600_000_000))

    def refuse(blob: bytes) -> None:
        assert blob == data
        raise ValueError("would not read back")

    with pytest.raises(ValueError, match="would not read back"):
        objects.write_in_background(data, refuse).result()
    assert not list(objects.stray_temps())
    if existing:
        assert objects.path(oid).stat().st_mtime == 1_600_000_000
    else:
        assert list(objects) == []
    seen: list[bytes] = []
    assert objects.write_in_background(data, seen.append).result() == hash_bytes(data)
    assert seen == [data] and objects.read(hash_bytes(data)) == data


def test_a_background_write_stages_its_bytes_before_the_check_runs_on_the_callers_thread(tmp_path) -> None:
    # The bytes are in their temp file (its sync under way on the worker) while the caller's own
    # thread checks them; the name appears only once the check has passed.
    import threading

    objects = ObjectStore(tmp_path)
    data = b'{"kind":"response"}\n'
    seen: list[tuple[bool, list[bool], bool]] = []

    def check(blob: bytes) -> None:
        fan = objects.path(hash_bytes(blob)).parent
        temps = [p.read_bytes() == blob for p in fan.iterdir() if p.name.startswith(".tmp-")]
        seen.append(
            (threading.current_thread() is threading.main_thread(), temps, objects.exists(hash_bytes(blob)))
        )

    assert objects.write_in_background(data, check).result() == hash_bytes(data)
    assert seen == [(True, [True], False)]
    assert objects.read(hash_bytes(data)) == data and not list(objects.stray_temps())


def test_an_interrupted_check_propagates_and_leaves_the_worker_free_and_no_temp_file(tmp_path) -> None:
    # A KeyboardInterrupt in the caller's check goes on at once; the worker, told the gate is shut,
    # drops the temp file, and the next write of the process is not stuck behind it.
    objects = ObjectStore(tmp_path)

    def interrupted(blob: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        objects.write_in_background(b'{"kind":"request"}\n', interrupted)
    data = b'{"kind":"response"}\n'
    assert objects.write_in_background(data, lambda blob: None).result(timeout=30) == hash_bytes(data)
    assert list(objects) == [hash_bytes(data)] and not list(objects.stray_temps())


def test_hash_aside_gives_the_sha256_small_at_once_large_on_the_hashing_thread() -> None:
    small, large = b"x" * (HASH_AT_ONCE - 1), b"y" * (HASH_AT_ONCE + 1)
    done = hash_aside(small)
    assert done.done() and done.result() == hash_bytes(small)
    assert hash_aside(large).result(timeout=10) == hash_bytes(large)
