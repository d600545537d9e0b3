"""Which model files another user may write (``_external_data.rewritable_by_others``): for those, a build ties the
engine to the hash of the bytes parsed, not to the file's stat (twenty-fourth re-run, D24-1), and parses them from
private memory or a private copy (W23-1). A user's private group (umask 002 systems) does not count; an ACL does."""

from __future__ import annotations

import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from trt_widget import _external_data
from trt_widget._external_data import RACY_NS, content_key, rewritable_by_others, stat_key, stat_vouches, vouching_key

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
    later = time.time_ns() + RACY_NS  # as if hashed once both had settled
    assert vouching_key(os.stat(mine), "ab", str(mine), later) == stat_key(os.stat(mine))
    assert vouching_key(os.stat(theirs), "ab", str(theirs), later) == content_key("ab") == "sha256:ab"


def test_a_stat_vouches_only_once_no_page_can_still_be_dirty(tmp_path: Path) -> None:
    """D25-1: a store through a shared map into a page already dirty changes no stat field; a page is written back
    (and its next store stamps the file) within the kernel's writeback window, which RACY_NS outlasts."""
    expire = int(Path("/proc/sys/vm/dirty_expire_centisecs").read_text())
    writeback = int(Path("/proc/sys/vm/dirty_writeback_centisecs").read_text())
    assert writeback <= 0 or max(60 * 10**9, 2 * (expire + writeback) * 10**7) <= RACY_NS
    path = _file(tmp_path, 0o644)
    info, now = os.stat(path), time.time_ns()
    assert not stat_vouches(info, str(path), now)  # just written
    assert stat_vouches(info, str(path), max(info.st_ctime_ns, info.st_mtime_ns) + RACY_NS)


def test_a_file_system_that_never_writes_back_never_vouches(tmp_path: Path) -> None:
    """tmpfs keeps its pages in memory: a store through a map into one never stamps the file again."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no /dev/shm here")
    path = shm / f"trt_widget-test-{os.getpid()}.bin"
    path.write_bytes(b"weights")
    try:
        info = os.stat(path)
        assert not stat_vouches(info, str(path), max(info.st_ctime_ns, info.st_mtime_ns) + RACY_NS)
    finally:
        path.unlink()
    info = os.stat(_file(tmp_path, 0o644))  # this folder's (the test's own disk)
    assert stat_vouches(info, None, max(info.st_ctime_ns, info.st_mtime_ns) + RACY_NS) == (
        _external_data._stamping(info.st_dev)
    )


def test_a_group_another_account_has_as_its_primary_group_is_not_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D25-2: ``useradd -g root operator`` (RHEL's operator account has gid 0): its processes may write root's
    ``rw-rw-r--`` files though root's group lists no members."""
    import pwd

    mine = _file(tmp_path, 0o664)
    assert not _rewritable(mine)
    accounts = pwd.getpwall()
    operator = pwd.struct_passwd(("operator", "x", 11, 0, "operator", "/root", "/sbin/nologin"))
    monkeypatch.setattr(pwd, "getpwall", lambda: [*accounts, operator])  # /etc/passwd with that account
    assert _rewritable(mine)
