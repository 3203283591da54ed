"""write_atomic: content replaced whole, mode kept, symlinks never followed out of the root."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaignops.core.atomic import write_atomic
from campaignops.core.errors import InputError


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_replaces_content_and_keeps_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"old\r\n")
    script.chmod(0o755)
    inode = script.stat().st_ino
    write_atomic(script, b"new\n", root=tmp_path)
    assert script.read_bytes() == b"new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    # A new inode shows the content was renamed into place, not written over the old file.
    assert script.stat().st_ino != inode
    assert leftovers(tmp_path) == []


def test_keeps_a_restrictive_mode(tmp_path: Path) -> None:
    secret = tmp_path / "ledger.jsonl"
    secret.write_bytes(b"{}\r\n")
    secret.chmod(0o600)
    write_atomic(secret, b"{}\n")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_creates_a_missing_file_with_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / ".gitattributes", b"*.sh text eol=lf\n", root=tmp_path)
    finally:
        os.umask(old)
    created = tmp_path / ".gitattributes"
    assert created.read_bytes() == b"*.sh text eol=lf\n"
    assert stat.S_IMODE(created.stat().st_mode) == 0o644


def test_symlink_inside_root_rewrites_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_bytes(b"a\r\n")
    link = tmp_path / "sub" / "link.txt"
    link.parent.mkdir()
    link.symlink_to("../real.txt")
    write_atomic(link, b"a\n", root=tmp_path)
    assert link.is_symlink()
    assert (tmp_path / "real.txt").read_bytes() == b"a\n"
    assert leftovers(tmp_path) == leftovers(link.parent) == []


def test_symlink_out_of_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "campaign"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep\r\n")
    link = root / "queue.txt"
    link.symlink_to(outside)
    with pytest.raises(InputError, match="outside the campaign") as info:
        write_atomic(link, b"changed\n", root=root)
    assert info.value.path == "queue.txt"
    assert outside.read_bytes() == b"keep\r\n"
    assert link.is_symlink()
    assert leftovers(root) == leftovers(tmp_path) == []


def test_directory_symlink_out_of_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "campaign"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "q.txt").write_bytes(b"keep\n")
    (root / "queues").symlink_to(elsewhere)
    with pytest.raises(InputError, match="outside the campaign"):
        write_atomic(root / "queues" / "q.txt", b"changed\n", root=root)
    assert (elsewhere / "q.txt").read_bytes() == b"keep\n"


def test_without_root_any_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_bytes(b"keep\n")
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    with pytest.raises(InputError, match="symlink"):
        write_atomic(link, b"changed\n")
    assert (tmp_path / "real.txt").read_bytes() == b"keep\n"


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "link.txt"
    link.symlink_to("missing.txt")
    with pytest.raises(InputError, match="dangling"):
        write_atomic(link, b"x\n", root=tmp_path)
    assert not (tmp_path / "missing.txt").exists()


def test_a_directory_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "queues").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        write_atomic(tmp_path / "queues", b"x\n", root=tmp_path)
    assert (tmp_path / "queues").is_dir()


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        write_atomic(tmp_path / "nowhere" / "f.txt", b"x\n", root=tmp_path)


@settings(max_examples=50)
@given(old=st.binary(max_size=200), new=st.binary(max_size=200))
def test_content_round_trips(
    tmp_path_factory: pytest.TempPathFactory, old: bytes, new: bytes
) -> None:
    directory = tmp_path_factory.mktemp("rt")
    target = directory / "f.bin"
    target.write_bytes(old)
    write_atomic(target, new, root=directory)
    assert target.read_bytes() == new
    assert sorted(p.name for p in directory.iterdir()) == ["f.bin"]
