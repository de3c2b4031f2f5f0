"""The content-addressed blob store: write-once, hash-verified on read, atomic on write."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeexec.audit.blobs import KEY_FILE, BlobStore
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import BlobRef


def _files(root: Path) -> list[Path]:
    """The blob files below ``root`` (not the store's key)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != KEY_FILE)


def test_put_returns_the_sha256_and_size_and_get_returns_the_bytes(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    ref = store.put(b"hello\n")
    assert ref == BlobRef(sha256=hashlib.sha256(b"hello\n").hexdigest(), size=6)
    assert store.get(ref) == b"hello\n"
    assert store.get(ref.uri) == b"hello\n"
    assert ref in store
    assert ref.uri in store


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=2048))
def test_any_bytes_round_trip(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    store = BlobStore(tmp_path_factory.mktemp("blobs"))
    assert store.get(store.put(data)) == data


def test_blobs_are_stored_under_a_keyed_name_sharded_by_its_first_two_hex_digits(
    tmp_path: Path,
) -> None:
    store = BlobStore(tmp_path)
    ref = store.put(b"x")
    path = store.location(ref)
    assert path.read_bytes() == b"x"
    assert path.parent == tmp_path / path.name[:2]
    assert len(path.name) == 64 and path.name != ref.sha256
    assert _files(tmp_path) == [path]


def test_put_is_write_once_and_does_not_rewrite_an_existing_blob(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    first = store.put(b"same")
    path = store.location(first)
    inode = path.stat().st_ino
    assert store.put(b"same") == first
    assert path.stat().st_ino == inode
    assert _files(tmp_path) == [path]


def test_empty_blob_is_stored(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    ref = store.put(b"")
    assert ref.size == 0
    assert store.get(ref) == b""


def test_get_of_an_absent_blob_raises_key_error(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    with pytest.raises(KeyError):
        store.get(BlobRef(sha256="0" * 64, size=0))
    assert BlobRef(sha256="0" * 64, size=0) not in store


def test_get_verifies_the_hash_and_reports_corruption(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    ref = store.put(b"original")
    store.location(ref).write_bytes(b"tampered")
    with pytest.raises(AuditError, match="corrupt"):
        store.get(ref)


@pytest.mark.parametrize(
    "uri",
    [
        "sha256:" + "a" * 64,
        "blob://sha256:" + "A" * 64,
        "blob://sha256:abc",
        "blob://md5:" + "a" * 64,
    ],
)
def test_malformed_uris_are_rejected(tmp_path: Path, uri: str) -> None:
    store = BlobStore(tmp_path)
    with pytest.raises(ValueError, match="not a blob reference"):
        store.get(uri)


@pytest.mark.parametrize("digest", ["../../etc/passwd", "a" * 63, "a" * 64 + "\n", "/" + "a" * 63])
def test_a_ref_whose_digest_is_not_hex_never_becomes_a_path(tmp_path: Path, digest: str) -> None:
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(ValueError, match="not a sha256 digest"):
        store.get(BlobRef(sha256=digest, size=0))
    with pytest.raises(ValueError, match="not a sha256 digest"):
        _ = BlobRef(sha256=digest, size=0) in store


def test_a_failed_write_raises_audit_error_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(tmp_path)

    def failing_rename(src: str, dst: str, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(AuditError, match="cannot write blob"):
        store.put(b"data")
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [KEY_FILE]


def test_fsync_mode_writes_durably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    store = BlobStore(tmp_path, fsync=True)
    assert store.get(store.put(b"durable")) == b"durable"
    # The key, then its directory entry (once per store); the blob, then its directory entry.
    assert len(synced) == 4


def test_concurrent_puts_of_the_same_bytes_yield_one_intact_blob(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    payload = os.urandom(256 * 1024)
    refs: list[BlobRef] = []
    threads = [threading.Thread(target=lambda: refs.append(store.put(payload))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(refs)) == 1
    assert store.get(refs[0]) == payload
    assert len(_files(tmp_path)) == 1


def test_put_file_stores_the_file_contents(tmp_path: Path) -> None:
    source = tmp_path / "artifact.txt"
    source.write_bytes(b"artifact")
    store = BlobStore(tmp_path / "blobs")
    assert store.get(store.put_file(source)) == b"artifact"


def test_a_root_that_cannot_be_created_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigurationError, match="cannot open blob store root="):
        BlobStore(blocker / "blobs")


# -- the store is the host's: keyed names, private modes, no link ever followed -------------------


def test_a_symlink_planted_as_a_shard_is_never_written_through(tmp_path: Path) -> None:
    # Issue 10 item 1: a link at every shard name, whatever the naming, points at a victim dir.
    root, victim = tmp_path / "blobs", tmp_path / "victim"
    victim.mkdir(mode=0o700)
    store = BlobStore(root)
    for shard in range(256):
        (root / f"{shard:02x}").symlink_to(victim, target_is_directory=True)
    with pytest.raises(AuditError, match="cannot write blob sha256="):
        store.put(b"the cell's stdout")
    assert list(victim.iterdir()) == []


def test_a_symlink_planted_at_a_blob_name_is_replaced_not_followed(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    ref = BlobRef(sha256=hashlib.sha256(b"payload").hexdigest(), size=7)
    path = store.location(ref)
    path.parent.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_bytes(b"host file")
    path.symlink_to(victim)
    with pytest.raises(AuditError, match="cannot read blob"):
        store.get(ref)  # never read through the link
    assert ref not in store
    assert store.put(b"payload") == ref
    assert victim.read_bytes() == b"host file"
    assert not path.is_symlink() and store.get(ref) == b"payload"


def test_a_blob_root_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "blobs").symlink_to(tmp_path / "real")
    with pytest.raises(ConfigurationError, match="is a symbolic link"):
        BlobStore(tmp_path / "blobs")


def test_blob_names_are_keyed_per_store_and_unguessable_without_the_key(tmp_path: Path) -> None:
    # Issue 10 item 3: a name derived from the content alone can be probed with stat().
    first, second = BlobStore(tmp_path / "one"), BlobStore(tmp_path / "two")
    ref = first.put(b"code=4821\n")
    assert second.put(b"code=4821\n") == ref  # the same reference...
    assert first.location(ref).name != second.location(ref).name  # ...under different names
    assert not (tmp_path / "one" / ref.sha256[:2] / ref.sha256).exists()
    key = (tmp_path / "one" / KEY_FILE).read_bytes()
    assert len(key) == 32
    expected = hmac.new(key, bytes.fromhex(ref.sha256), hashlib.sha256).hexdigest()
    assert first.location(ref).name == expected
    assert BlobStore(tmp_path / "one").location(ref) == first.location(ref)  # the key persists


def test_the_store_is_private_directories_0700_files_0600(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.put(b"a")
    store.put(b"b")
    for path in [tmp_path / "blobs", *(tmp_path / "blobs").rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        assert path.lstat().st_uid == os.geteuid()


def test_a_damaged_key_is_a_configuration_error(tmp_path: Path) -> None:
    BlobStore(tmp_path / "blobs")
    (tmp_path / "blobs" / KEY_FILE).write_bytes(b"short")
    with pytest.raises(ConfigurationError, match="holds 5 bytes, not 32"):
        BlobStore(tmp_path / "blobs")


def test_a_chmod_of_the_store_root_is_caught_at_the_next_put(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    store.put(b"before")
    (tmp_path / "blobs").chmod(0o755)  # what a cell sharing the host's uid can do
    with pytest.raises(AuditError, match=r"the \(uid, mode\) of root=.* changed"):
        store.put(b"after")
