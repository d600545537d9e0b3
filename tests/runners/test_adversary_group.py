"""Eleventh re-run (adversary, N1b): ``check_parent`` counts a group-writable folder as private when its group is
the user's own private group, judged from /etc/passwd and /etc/group (no other *listed* user has it as primary
group, no other member). A process may run with any uid and gid without an entry there: OpenShift's arbitrary
uids run with gid 0 and its images make their folders ``root:0`` 0775 (``chgrp -R 0 DIR && chmod -R g=u DIR``);
containers, ``setpriv`` and systemd's DynamicUser do the same. Such a gid-0 process ran code as root through
``trt-widget run``'s directory (3 runs of 3, after the N1 fix). A group-writable folder without the sticky bit
now counts as shared, whatever its group."""

from __future__ import annotations

import grp
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from other_user import can_act_as_nobody
from user_scripts import run_with_tmpdir


@pytest.fixture
def gid0_folder() -> Iterator[Path]:
    """A folder root:root 0775 under /tmp (no sticky bit), as an OpenShift-style image makes them."""
    if not can_act_as_nobody() or os.getgid() != 0:
        pytest.skip("needs root (primary group 0) and setpriv")
    base = Path(tempfile.mkdtemp(prefix="trt-widget-gid0-", dir="/tmp"))
    base.chmod(0o755)
    folder = base / "scratch"
    folder.mkdir()
    folder.chmod(0o775)
    try:
        yield folder
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="setpriv")
def test_a_temp_folder_another_member_of_our_primary_group_may_write_is_refused(gid0_folder: Path) -> None:
    planted = gid0_folder / "planted"
    as_gid0 = ["setpriv", "--reuid=nobody", "--regid=0", "--clear-groups"]
    subprocess.run([*as_gid0, "mkdir", str(planted)], check=True, timeout=60)  # another user writes it
    assert planted.stat().st_uid != os.getuid()
    planted.rmdir()
    ran = gid0_folder.parent / "ran"
    done = run_with_tmpdir(gid0_folder, ran)
    assert done.returncode != 0 and not ran.exists(), done.stderr[-2000:]
    said = f"{str(gid0_folder)!r} is writable by group {grp.getgrgid(0).gr_name!r} (any process holding"
    assert said in done.stderr and "has no sticky bit" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
