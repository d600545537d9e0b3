"""Which model files another user may write (``_external_data.rewritable_by_others``): for those, a build ties the
engine to the hash of the bytes parsed, not to the file's stat (twenty-fourth re-run, D24-1), and parses them from
private memory or a private copy (W23-1). A user's private group (umask 002 systems) does not count; an ACL does."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from trt_widget._external_data import content_key, rewritable_by_others, stat_key, vouching_key

pytestmark = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown to another user: root only")

UNDEFINED = 0xFFFFFFFF


def _acl_granting_write_to(uid: int) -> bytes:
    """A POSIX access ACL (the kernel's xattr format, version 2): owner rw, user ``uid`` rw, group r, mask rw."""
    entries = [(0x01, 6, UNDEFINED), (0x02, 6, uid), (0x04, 4, UNDEFINED), (0x10, 6, UNDEFINED), (0x20, 4, UNDEFINED)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def _file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / f"w-{mode:o}.bin"
    path.write_bytes(b"weights")
    path.chmod(mode)
    return path


def _rewritable(path: Path) -> bool:
    return rewritable_by_others(os.stat(path), str(path))


def test_only_files_another_user_may_write_count(tmp_path: Path) -> None:
    assert not _rewritable(_file(tmp_path, 0o644))
    assert _rewritable(_file(tmp_path, 0o646))  # others may write
    theirs = _file(tmp_path, 0o644)
    shutil.chown(theirs, "nobody", "nogroup")
    assert _rewritable(theirs)


def test_a_group_may_write_unless_it_is_the_users_private_group(tmp_path: Path) -> None:
    mine = _file(tmp_path, 0o664)  # root's group "root", no members: root's private group
    assert not _rewritable(mine)
    assert rewritable_by_others(os.stat(mine))  # without the file to look at: counted
    shared = _file(tmp_path, 0o664)
    shutil.chown(shared, group="nogroup")
    assert _rewritable(shared)


def test_an_acl_granting_another_user_write_counts(tmp_path: Path) -> None:
    path = _file(tmp_path, 0o644)
    try:
        os.setxattr(path, "system.posix_acl_access", _acl_granting_write_to(65534))
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs on this file system ({exc.strerror})")
    assert os.stat(path).st_mode & 0o020  # the ACL's mask shows as the group's write bit
    assert _rewritable(path)
    with open(path, "rb") as handle:  # on the descriptor too, as a build looks at it
        assert rewritable_by_others(os.fstat(handle.fileno()), handle.fileno())


def test_the_key_a_build_compares_is_the_bytes_hash_where_another_user_may_write(tmp_path: Path) -> None:
    mine, theirs = _file(tmp_path, 0o644), _file(tmp_path, 0o646)
    assert vouching_key(os.stat(mine), "ab", str(mine)) == stat_key(os.stat(mine))
    assert vouching_key(os.stat(theirs), "ab", str(theirs)) == content_key("ab") == "sha256:ab"
