"""Tenth adversarial re-run (issue 35): a temporary folder that an ACL lets another user write is as shared as
one whose mode bits do. Its stat mode shows the ACL mask as the group bits, which look like "writable by my own
primary group" and pass the check; `nobody` then swapped `trt-widget run`'s directory and ran code as root."""

from __future__ import annotations

import errno
import os
import struct
import sys
from pathlib import Path

import pytest
from user_scripts import run_with_tmpdir

_UNDEFINED = 0xFFFFFFFF


def _give_write_by_acl(folder: Path, uid: int) -> None:
    """``setfacl -m u:<uid>:rwx folder`` (no setfacl here): the POSIX ACL xattr, version 2."""
    entries = [
        (0x01, 7, _UNDEFINED),
        (0x02, 7, uid),
        (0x04, 5, _UNDEFINED),
        (0x10, 7, _UNDEFINED),
        (0x20, 5, _UNDEFINED),
    ]
    data = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)
    try:
        os.setxattr(folder, "system.posix_acl_access", data)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            pytest.skip("this file system has no POSIX ACLs")
        raise


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX ACL xattrs are Linux's")
def test_a_temp_folder_an_acl_lets_another_user_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "scratch"
    shared.mkdir()
    shared.chmod(0o755)
    _give_write_by_acl(shared, 65534)  # nobody may now rename entries here; no sticky bit
    assert shared.stat().st_mode & 0o020  # the mask shows as group-writable, with our own group
    ran = tmp_path / "ran"
    done = run_with_tmpdir(shared, ran)
    assert done.returncode != 0 and not ran.exists(), done.stderr[-2000:]
    assert "ACL" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert os.listdir(shared) == []
