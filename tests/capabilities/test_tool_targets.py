"""Tools open what was checked: bound paths beneath a root, URLs pinned to the checked address.

Every path case runs twice, with ``openat2`` and with the ``O_NOFOLLOW`` walk the gateway falls
back to where the kernel lacks it; each run proves which resolver it used.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.capabilities import targets as tool_targets
from safeexec.capabilities.gateway import BoundPath, CapabilitySet, CheckedURL, Url, tool
from safeexec.capabilities.targets import TargetRefused
from safeexec.model.codec import JSONValue


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Force one resolver and fail the test if the other one is used."""
    used: list[str] = []
    real_openat2, real_walk = tool_targets._openat2, tool_targets._walk

    def openat2(*args: object) -> int:
        used.append("openat2")
        return real_openat2(*args)  # type: ignore[arg-type]

    def walk(*args: object) -> int:
        used.append("walk")
        return real_walk(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tool_targets, "_openat2", openat2)
    monkeypatch.setattr(tool_targets, "_walk", walk)
    monkeypatch.setattr(tool_targets, "_use_openat2", request.param == "openat2")
    yield request.param
    assert set(used) <= {request.param}, used


def call(*args: JSONValue) -> JSONValue:
    return {"args": list(args), "kwargs": {}}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ with a file, a subdirectory, and a secret beside root that no tool may reach."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("inside")
    (root / "top.txt").write_text("top")
    (tmp_path / "secret.txt").write_text("SECRET")
    return root


def _reader(root: Path, seen: list[BoundPath] | None = None) -> CapabilitySet:
    @tool(root=root, effects=["read"])
    def read(path: Path) -> str:
        if seen is not None:
            seen.append(path)  # type: ignore[arg-type]
        return path.read_text()

    caps = CapabilitySet()
    caps.grant(read)
    return caps


def test_a_path_resolves_to_a_bound_path_that_reads_the_file(tree: Path, resolver: str) -> None:
    seen: list[BoundPath] = []
    caps = _reader(tree, seen)
    assert caps.invoke("read", call("sub/f.txt")).value == "inside"
    assert caps.invoke("read", call("./sub//f.txt")).value == "inside"
    assert caps.invoke("read", call("sub/../top.txt")).value == "top"
    assert [type(p) for p in seen] == [BoundPath] * 3
    assert seen[0].relative == "sub/f.txt" and seen[2].relative == "top.txt"


@pytest.mark.parametrize(
    "attempt",
    ["../secret.txt", "sub/../../secret.txt", "sub/../..//secret.txt", "/etc/passwd", "a\x00b"],
)
def test_dot_dot_and_absolute_paths_never_leave_the_root(
    tree: Path, resolver: str, attempt: str
) -> None:
    reply = _reader(tree).invoke("read", call(attempt))
    assert not reply.ok and "SECRET" not in reply.error


def test_a_symlink_anywhere_on_the_path_is_refused(tree: Path, resolver: str) -> None:
    (tree / "leaf").symlink_to(tree.parent / "secret.txt")
    (tree / "hop").symlink_to(tree.parent)
    (tree / "inner").symlink_to(tree / "sub")  # even one that stays beneath the root
    caps = _reader(tree)
    for attempt in ("leaf", "hop/secret.txt", "inner/f.txt"):
        reply = caps.invoke("read", call(attempt))
        assert not reply.ok, attempt
        assert "SECRET" not in reply.error


def test_a_hard_link_to_a_file_elsewhere_is_not_read(tree: Path, resolver: str) -> None:
    os.link(tree.parent / "secret.txt", tree / "linked.txt")
    reply = _reader(tree).invoke("read", call("linked.txt"))
    assert not reply.ok and "SECRET" not in reply.error and "hard links" in reply.error


def test_a_leaf_swapped_for_a_symlink_after_the_check_is_not_followed(
    tree: Path, resolver: str
) -> None:
    secret = tree.parent / "secret.txt"

    @tool(root=tree, effects=["read"])
    def read(path: Path) -> str:
        # The sandbox wins the race: between the check and the open the file becomes a link.
        (tree / "top.txt").unlink()
        (tree / "top.txt").symlink_to(secret)
        return path.read_text()

    caps = CapabilitySet()
    caps.grant(read)
    reply = caps.invoke("read", call("top.txt"))
    assert not reply.ok and "SECRET" not in reply.error


def test_a_directory_swapped_mid_call_keeps_the_checked_directory(
    tree: Path, resolver: str
) -> None:
    (tree.parent / "f.txt").write_text("SECRET")

    @tool(root=tree, effects=["read"])
    def read(path: Path) -> str:
        # The checked directory moves away and a link to the host takes its name.
        (tree / "sub").rename(tree / "moved")
        (tree / "sub").symlink_to(tree.parent)
        return path.read_text()

    caps = CapabilitySet()
    caps.grant(read)
    assert caps.invoke("read", call("sub/f.txt")).value == "inside"


def test_a_fifo_at_the_path_fails_without_blocking_the_host(tree: Path, resolver: str) -> None:
    os.mkfifo(tree / "pipe")
    reply = _reader(tree).invoke("read", call("pipe"))  # a blocking open would hang here
    assert not reply.ok and "regular file" in reply.error


def test_a_bound_path_is_dead_after_its_call(tree: Path, resolver: str) -> None:
    kept: list[BoundPath] = []
    caps = _reader(tree, kept)
    assert caps.invoke("read", call("top.txt")).ok
    with pytest.raises(ValueError, match="is over"):
        kept[0].read_text()


def test_a_bound_path_has_no_pathname_and_no_public_constructor(tree: Path) -> None:
    seen: list[BoundPath] = []
    _reader(tree, seen).invoke("read", call("top.txt"))
    with pytest.raises(TypeError):
        os.fspath(seen[0])  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="no public constructor"):
        BoundPath()
    with pytest.raises(AttributeError):
        seen[0].relative = "x"


def test_writes_create_files_through_the_directory_descriptor(tree: Path, resolver: str) -> None:
    @tool(root=tree, effects=["write"])
    def save(path: Path, text: str) -> int:
        return path.write_text(text)

    caps = CapabilitySet()
    caps.grant(save)
    assert caps.invoke("save", call("sub/new.txt", "hello")).value == 5
    assert (tree / "sub" / "new.txt").read_text() == "hello"
    (tree / "sub" / "dangling").symlink_to(tree.parent / "created-outside.txt")
    assert not caps.invoke("save", call("sub/dangling", "x")).ok
    assert not (tree.parent / "created-outside.txt").exists()


def test_the_walk_takes_over_when_the_kernel_lacks_openat2(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_openat2(*args: object) -> int:
        raise OSError(errno.ENOSYS, "no openat2")

    monkeypatch.setattr(tool_targets, "_openat2", no_openat2)
    monkeypatch.setattr(tool_targets, "_use_openat2", True)
    caps = _reader(tree)
    assert caps.invoke("read", call("sub/f.txt")).value == "inside"
    assert tool_targets._use_openat2 is False  # decided once, then the walk is used directly
    (tree / "hop").symlink_to(tree.parent)
    assert not caps.invoke("read", call("hop/secret.txt")).ok


def test_the_kernel_here_has_openat2() -> None:
    # Otherwise the openat2 runs above would silently be walks.
    fd = os.open("/", os.O_PATH)
    try:
        os.close(tool_targets._openat2(fd, "tmp", tool_targets._DIR_FLAGS, 0x08))
    finally:
        os.close(fd)


# -- URLs --------------------------------------------------------------------------------------


def _fetcher(answers: dict[str, list[list[str]]], asked: list[str]) -> CapabilitySet:
    """A gateway whose resolver answers from ``answers`` (successive answers per name)."""

    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[host].pop(0)

    @tool(effects=["network"])
    def fetch(url: Url) -> str:
        checked = url  # what the tool receives
        assert isinstance(checked, CheckedURL)
        return f"{checked.address}:{checked.port}{checked.path}"

    caps = CapabilitySet(resolve=resolve)
    caps.grant(fetch)
    return caps


def test_a_url_is_resolved_once_and_pinned_to_the_checked_address() -> None:
    asked: list[str] = []
    # A rebinding name: public when checked, loopback on any later lookup.
    caps = _fetcher({"rebind.test": [["93.184.215.14"], ["127.0.0.1"]]}, asked)
    reply = caps.invoke("fetch", call("https://rebind.test/a?b=1"))
    assert reply.value == "93.184.215.14:443/a?b=1"
    assert asked == ["rebind.test"]


@pytest.mark.parametrize(
    "answer",
    [["127.0.0.1"], ["93.184.215.14", "10.0.0.7"], ["::1"], ["::ffff:127.0.0.1"], []],
)
def test_a_name_with_any_private_or_loopback_answer_is_refused(answer: list[str]) -> None:
    asked: list[str] = []
    reply = _fetcher({"evil.test": [answer]}, asked).invoke("fetch", call("http://evil.test/"))
    assert not reply.ok and asked == ["evil.test"]


def test_connect_refuses_a_forbidden_pinned_address_without_connecting() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    hits: list[bool] = []

    def accept() -> None:
        try:
            listener.accept()[0].close()
            hits.append(True)
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    port = listener.getsockname()[1]
    forged = CheckedURL(
        url=f"http://x.test:{port}/",
        scheme="http",
        host="x.test",
        port=port,
        address="127.0.0.1",
        path="/",
    )
    with pytest.raises(OSError, match="forbidden"):
        forged.connect(timeout=0.5)
    thread.join()
    listener.close()
    assert hits == []


def test_target_refusals_quote_at_most_a_bounded_prefix() -> None:
    with pytest.raises(TargetRefused) as info:
        CheckedURL._check("ftp://" + "x" * 100_000)
    assert len(str(info.value)) < 400


def test_a_vanished_root_is_a_refusal_not_a_gateway_crash(tree: Path) -> None:
    caps = _reader(tree)
    (tree / "sub" / "f.txt").unlink()
    (tree / "sub").rmdir()
    (tree / "top.txt").unlink()
    tree.rmdir()
    reply = caps.invoke("read", call("top.txt"))
    assert not reply.ok and "root cannot be opened" in reply.error


def test_the_openat2_call_reads_no_process_wide_cache(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``struct.pack(fmt)`` looks ``fmt`` up in a cache the whole process shares: a str subclass
    claiming to equal ``"QQQ"`` plants another format there (``resolve`` then packs as a bool,
    RESOLVE_NO_XDEV). The resolver's ``open_how`` is compiled once and never looked up."""

    class Lying(str):
        def __eq__(self, other: object) -> bool:
            return other == "QQQ" or str.__eq__(self, other)

        def __hash__(self) -> int:
            return hash("QQQ")

    (tree.parent / "outside" / "d").mkdir(parents=True)
    (tree.parent / "outside" / "d" / "secret.txt").write_text("SECRET")
    (tree / "hop").symlink_to("../outside")  # relative: RESOLVE_NO_XDEV alone would follow it
    monkeypatch.setattr(tool_targets, "_use_openat2", True)
    struct._clearcache()  # type: ignore[attr-defined]
    try:
        struct.pack(Lying("QQ?7x"), 0, 0, True)
        assert struct.pack("QQQ", 0, 0, 14)[16:] == b"\x01" + bytes(7)  # the cache is poisoned
        reply = _reader(tree).invoke("read", call("hop/d/secret.txt"))
    finally:
        struct._clearcache()  # type: ignore[attr-defined]
    assert not reply.ok and "SECRET" not in reply.error
