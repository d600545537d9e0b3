"""Eleventh adversarial re-run (issue 35, N1): a temporary folder writable by the user's primary group counted as
private. Where users share a primary group (SUSE's ``users``, an HPC project group) every member may rename what
is in it: a member swapped ``trt-widget run``'s directory for one holding their code, which ran as the victim. A
group-writable folder without the sticky bit now counts as shared, whatever its group: the N1 fix's test of "the
user's own private group" read /etc/passwd and /etc/group, but a process may hold any group without an entry there
(N1b, N1c: tests/runners/test_adversary_group.py)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget._leftovers import UnsafeTempDir, check_parent, private_dir

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX users and groups")


def _someone_elses_primary_group() -> grp.struct_group | None:
    """A group that is another (real, existing) user's primary group: ``daemon``'s on Debian."""
    for user in pwd.getpwall():
        if user.pw_uid != os.getuid() and user.pw_gid not in (0, os.getgid()):
            try:
                return grp.getgrgid(user.pw_gid)
            except KeyError:
                continue
    return None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_a_temp_folder_writable_by_a_primary_group_other_users_share_is_refused(tmp_path: Path) -> None:
    """Real users: ``trt-widget run`` whose primary group is also another user's, in a 0775 folder of that group
    (as a SUSE user's folder of group ``users``): refused before the command runs, saying why."""
    group = _someone_elses_primary_group()
    if group is None:
        pytest.skip("no other user with a primary group of their own here")
    shared = tmp_path / "project"
    shared.mkdir()
    os.chown(shared, os.getuid(), group.gr_gid)
    shared.chmod(0o775)  # writable by the group, no sticky bit
    ran = tmp_path / "ran"
    command = [sys.executable, "-m", "trt_widget", "run", "--", sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    done = subprocess.run(
        ["setpriv", f"--regid={group.gr_gid}", "--clear-groups", *command],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(shared), "TRT_WIDGET_HISTORY": "off"},
    )
    assert done.returncode != 0 and not ran.exists(), done.stderr[-2000:]
    assert f"writable by group {group.gr_name!r} (any process holding" in done.stderr, done.stderr[-2000:]
    assert "/dev/shm" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert os.listdir(shared) == []


@pytest.fixture
def group_writable(tmp_path: Path) -> Path:
    """A 0775 folder of this process's own user and primary group (a user-private group's, with umask 002)."""
    folder = tmp_path / "g"
    folder.mkdir()
    folder.chmod(0o775)
    assert folder.stat().st_gid == os.getgid()
    return folder


def test_even_a_user_private_groups_folder_is_refused_unless_sticky(group_writable: Path) -> None:
    """N1c: a process holding the user's private group as a supplementary group (Kubernetes ``fsGroup``, docker's
    ``--group-add``) is listed nowhere, and wrote such a folder; only the mode bits say who may write."""
    with pytest.raises(UnsafeTempDir, match=r"no sticky bit \(chmod g-w or chmod \+t\)") as refused:
        private_dir("trt-widget-run-", str(group_writable))
    assert "(any process holding that group, listed or not)" in str(refused.value)
    assert "/dev/shm" in str(refused.value)
    assert os.listdir(group_writable) == []
    group_writable.chmod(0o1775)  # sticky, as /tmp: no one may rename what is not theirs
    assert check_parent(str(group_writable)) == str(group_writable)
    group_writable.chmod(0o755)  # or not writable by the group
    assert check_parent(str(group_writable)) == str(group_writable)
