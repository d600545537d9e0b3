"""Eleventh adversarial re-run (issue 35, N1): a temporary folder writable by the user's primary group counted as
private. Where users share a primary group (SUSE's ``users``, an HPC project group) every member may rename what
is in it: a member swapped ``trt-widget run``'s directory for one holding their code, which ran as the victim. A
group-writable folder now counts as private only where its group is the user's own private group."""

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
    assert f"writable by group {group.gr_name!r}, which other users share" in done.stderr, done.stderr[-2000:]
    assert "/dev/shm" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert os.listdir(shared) == []


class Users:
    """The user and group entries ``pwd``/``grp`` answer with: a machine's accounts, which a test cannot make."""

    def __init__(self, users: list[tuple[str, int, int]], groups: list[tuple[str, int, list[str]]]) -> None:
        self.users = [pwd.struct_passwd((name, "x", uid, gid, "", "/", "/bin/sh")) for name, uid, gid in users]
        self.groups = [grp.struct_group((name, "x", gid, members)) for name, gid, members in groups]

    def getpwall(self) -> list[pwd.struct_passwd]:
        return self.users

    def getpwuid(self, uid: int) -> pwd.struct_passwd:
        for user in self.users:
            if user.pw_uid == uid:
                return user
        raise KeyError(uid)

    def getgrgid(self, gid: int) -> grp.struct_group:
        for group in self.groups:
            if group.gr_gid == gid:
                return group
        raise KeyError(gid)


@pytest.fixture
def group_writable(tmp_path: Path) -> Path:
    """A 0775 folder of this process's own user and primary group."""
    folder = tmp_path / "g"
    folder.mkdir()
    folder.chmod(0o775)
    assert folder.stat().st_gid == os.getgid()
    return folder


def _accounts(monkeypatch: pytest.MonkeyPatch, users: Users) -> None:
    monkeypatch.setattr(pwd, "getpwall", users.getpwall)
    monkeypatch.setattr(pwd, "getpwuid", users.getpwuid)
    monkeypatch.setattr(grp, "getgrgid", users.getgrgid)


ME, GROUP = os.getuid(), os.getgid()


def test_a_user_private_group_counts_as_private(monkeypatch: pytest.MonkeyPatch, group_writable: Path) -> None:
    _accounts(monkeypatch, Users([("me", ME, GROUP), ("bob", ME + 1, GROUP + 1)], [("me", GROUP, ["me"])]))
    assert check_parent(str(group_writable)) == str(group_writable)


@pytest.mark.parametrize(
    ("users", "why"),
    [
        # SUSE: both users' primary group is `users`
        (Users([("me", ME, GROUP), ("bob", ME + 1, GROUP)], [("users", GROUP, [])]), "group 'users', which other"),
        # a group named as the user, that is another user's primary group too
        (Users([("me", ME, GROUP), ("bob", ME + 1, GROUP)], [("me", GROUP, [])]), "group 'me', which other"),
        # a group named as the user that lists another member
        (Users([("me", ME, GROUP)], [("me", GROUP, ["me", "bob"])]), "group 'me', which other users share"),
        # a project group (an HPC site's), no one else's primary group in the local files (LDAP without enumeration)
        (Users([("me", ME, GROUP)], [("proj", GROUP, [])]), "group 'proj', which other users share"),
        # the group cannot be looked up
        (Users([("me", ME, GROUP)], []), f"group {GROUP}, which cannot be looked up"),
        # the user has no name (a container's uid without a passwd entry)
        (Users([], [("me", GROUP, [])]), "group 'me', which other users share"),
    ],
)
def test_a_group_other_users_may_share_is_refused(
    monkeypatch: pytest.MonkeyPatch, group_writable: Path, users: Users, why: str
) -> None:
    _accounts(monkeypatch, users)
    with pytest.raises(UnsafeTempDir, match="no sticky bit") as refused:
        private_dir("trt-widget-run-", str(group_writable))
    assert why in str(refused.value) and "/dev/shm" in str(refused.value)
    assert os.listdir(group_writable) == []
    group_writable.chmod(0o1775)  # sticky, as /tmp: no one may rename what is not theirs
    assert check_parent(str(group_writable)) == str(group_writable)
