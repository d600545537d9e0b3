"""Twenty-fifth adversarial re-run (issue 35): D24-1's fix lets a file's stat key stand for its bytes again where,
by the file's owner, group and mode *now*, only this user may write it (``_external_data.vouching_key``,
``rewritable_by_others``). But write access through a shared map is a property of the process that holds the map,
not of the file's metadata: a store through a page already dirty changes the bytes and no stat field.

- D25-1: a map taken while the other user could write outlives the revocation (``chown``/``chmod go-w``, a folder
  taken over): the file then looks private, its stat key vouches, the hash cache is used, and a store through the
  old map after the hash files the engine of the stored weights under the real weights' key
  (/srv/adv25/takeover.sh).
- D25-2: the private-group exception counts a group's members from ``/etc/group`` only; a user whose *primary*
  group (``/etc/passwd``) is this user's private group may write a ``rw-rw-r--`` file of theirs
  (/srv/adv25/private_group.sh: ``useradd -g alice``). Here: ``nobody`` with root's group, gid 0, as its primary
  group, against root's private group ``root`` (no listed members).

Real ``nobody`` processes, real RTX builds; the lasting form (no race at build time)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from external_weight import N, model_with_external_weight

from trt_widget import Build

POISON = (b"POISONED-WEIGHTS-the-trusted-model-never-had\n" * 40)[: N * 4]

# the other user's side: map w.bin shared and writable, store its own bytes (the stamp), then on "go" the poison
WRITER = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED)
m[:] = m[:]
print("stamped", flush=True)
sys.stdin.readline()
key = lambda: (lambda s: (s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns))(os.fstat(fd))
before = key()
m[:] = bytes.fromhex(sys.argv[2])
print("same" if key() == before else "stamped-again", flush=True)
"""


def _build(model: Path, output: Path, cache: Path) -> bytes:
    """A thread-runner ``--reuse`` build of ``model``; the engine's bytes."""
    build = Build(str(model), output=str(output), reuse=True, reuse_dir=str(cache), isolation="thread",
                  history=False)  # fmt: skip
    build.start()
    build.wait(300)
    assert build.status == "succeeded", (build.status, build.error)
    return output.read_bytes() if output.exists() else (build.engine or b"")


def _poison_after_the_hash(shared: Path, tmp_path: Path, writer_ids: list[str], revoke: bool) -> None:
    """The lasting form: the writer maps and stamps ``w.bin``; (``revoke``: root takes the folder over); root's
    first build remembers the hash by the stat key; the writer stores the poison through its map and goes; the
    cache's engine is evicted; the shared model's next build and then a trusted copy's."""
    folder, trusted, cache = shared / "model", tmp_path / "trusted", tmp_path / "cache"
    folder.mkdir(mode=0o755)
    trusted.mkdir()
    model = model_with_external_weight(folder)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(folder / "w.bin", trusted / "w.bin")  # the real weights
    if revoke:
        for path in (folder, model, folder / "w.bin"):
            shutil.chown(path, "nobody", "nogroup")  # the shared model folder's owner, for now
    else:
        (folder / "w.bin").chmod(0o664)  # root:root rw-rw-r--: root's private group may write it
    writer = subprocess.Popen(
        [*writer_ids, sys.executable, "-c", WRITER, str(folder / "w.bin"), POISON.hex()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "stamped"
        if revoke:  # root takes the folder over: root's own, no group or other write
            for path in (folder, model, folder / "w.bin"):
                os.chown(path, 0, 0)
                path.chmod(0o755 if path.is_dir() else 0o644)
        time.sleep(2.5)  # the last change lies 2 s before the hash: the hash cache remembers it
        _build(model, tmp_path / "first.engine", cache)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        stored = writer.stdout.readline().strip()
    finally:
        writer.stdin.close()
        writer.wait(30)
        writer.stdout.close()
    if stored != "same":
        pytest.skip(f"the page was written back meanwhile (the map's store stamped the file again): {stored}")
    assert (folder / "w.bin").read_bytes() == POISON
    for entry in cache.glob("*.engine*"):
        entry.unlink()  # evicted: the next build of the shared model must build
    assert POISON[:40] in _build(model, tmp_path / "second.engine", cache)  # built from the file's bytes now
    third = _build(trusted / "m.onnx", tmp_path / "third.engine", cache)
    assert POISON[:40] not in third, "the trusted model's build reused the stored weights' engine"


@pytest.mark.slow
def test_a_map_kept_after_the_write_access_is_revoked_never_gets_its_weights_reused(
    shared: Path, tmp_path: Path
) -> None:
    _poison_after_the_hash(shared, tmp_path, ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], True)


@pytest.mark.slow
def test_a_user_whose_primary_group_is_our_private_group_never_gets_its_weights_reused(
    shared: Path, tmp_path: Path
) -> None:
    import grp

    if grp.getgrgid(0).gr_mem or grp.getgrgid(0).gr_name != "root":
        pytest.skip("root's group is not a private group here")
    # nobody with gid 0 as its primary group (as /etc/passwd gives RHEL's 'operator', or 'useradd -g root')
    _poison_after_the_hash(shared, tmp_path, ["setpriv", "--reuid=nobody", "--regid=0", "--clear-groups"], False)
