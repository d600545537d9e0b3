"""What a SIGKILLed parent (a kernel restart) left of a build's hand-over (the model's copy in ``/dev/shm``, RAM
until reboot, and a directory in ``$TMPDIR``) is removed by the next process that builds; the hand-over leaves no
empty directory behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_types import WaitUntil
from other_user import as_nobody
from user_scripts import own_tmpdir, run_with_tmpdir, script_and_model

# The kernel here allows process_vm_writev; where it does not (Yama ptrace_scope 3, a seccomp filter, not Linux)
# the model bytes go through files: this script takes that path by saying the calls are unavailable.
BUILD = textwrap.dedent(
    """
    import sys, time
    from trt_widget import Build
    from trt_widget.runners import _memory

    if sys.argv[2] == "files":
        _memory._CALLS = None
    build = Build(open(sys.argv[1], "rb").read(), history=False).start()
    if sys.argv[3] == "wait":
        while not build.model.structure_version:
            time.sleep(0.01)
        print("BUILDING", flush=True)
        time.sleep(600)
    build.wait()
    print("ENDED", build.status, flush=True)
    """
)


def model_copies(size: int) -> list[Path]:
    """Directories in /dev/shm holding a model copy of ``size`` bytes (whatever their names)."""
    found = []
    for entry in Path("/dev/shm").iterdir():
        with contextlib.suppress(OSError):
            if (entry / "model.onnx").stat().st_size == size:
                found.append(entry)
    return found


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs a writable /dev/shm")
def test_a_killed_parents_model_copy_is_removed_by_the_next_build(
    tmp_path: Path, long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    script, model = script_and_model(tmp_path, BUILD, long_model_bytes)
    tmpdir = tmp_path / "tmp"
    env = own_tmpdir(tmpdir)
    killed = subprocess.Popen(
        [sys.executable, str(script), str(model), "files", "wait"], env=env, stdout=subprocess.PIPE, text=True
    )
    assert killed.stdout is not None and killed.stdout.readline().startswith("BUILDING")
    left = model_copies(len(long_model_bytes))
    assert left
    killed.kill()
    killed.wait()
    killed.stdout.close()
    assert all(d.exists() for d in left) and os.listdir(tmpdir)  # a SIGKILL runs no clean-up
    done = subprocess.run(
        [sys.executable, str(script), str(model), "copy", "end"], env=env, capture_output=True, text=True, timeout=300
    )
    assert "ENDED succeeded" in done.stdout, done.stderr[-2000:]
    assert not any(d.exists() for d in left)  # the next build removed the dead one's model copy...
    assert os.listdir(tmpdir) == []  # ...and its directory here, and left none of its own


def test_a_directory_named_with_a_pid_too_large_for_the_kernel_is_passed_over(shared: Path) -> None:
    """Another user's ``trt-widget-run-99999999999999999999999-x`` (or ``-\u00b2-x``) in /tmp (or ``trt_widget-`` in
    /dev/shm) made the sweep's os.kill raise OverflowError: every ``trt-widget run``, process build and
    ``watch_call(isolation="process")`` of every user of the machine failed with a traceback."""
    from trt_widget._leftovers import private_dir

    huge = "9" * 23
    names = [f"{prefix}{pid}-x" for prefix in ("trt_widget-", "trt-widget-run-") for pid in (huge, "\u00b2")]
    for name in names:  # "\u00b2" (superscript two): str.isdigit() says yes, int() raises ValueError
        as_nobody("mkdir", str(shared / name), timeout=30)
    made = Path(private_dir("trt_widget-", str(shared)))
    assert made.is_dir() and (shared / f"trt_widget-{huge}-x").is_dir()  # another user's: left as it is
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--", sys.executable, "-c", "print('ran')"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(shared), "TRT_WIDGET_HISTORY": "off"},
    )
    assert done.returncode == 0 and done.stdout.splitlines() == ["ran"], done.stderr[-2000:]


def test_a_temp_folder_others_may_write_without_the_sticky_bit_is_refused_by_run_and_by_a_build(
    tmp_path: Path, onnx_path: Path
) -> None:
    """In a ``TMPDIR`` writable by others without the sticky bit, ``nobody`` renamed each ``trt-widget-run-*``
    directory aside and made one of the same name holding a ``sitecustomize.py``: it ran inside the user's command
    (as root, 3 runs of 3). The builder process's work directories (the engine read back) are made the same way.
    Both are refused, saying why, and nothing is made there."""
    small = onnx_path
    unsafe = tmp_path / "scratch"
    unsafe.mkdir()
    unsafe.chmod(0o777)  # no sticky bit
    env = {**os.environ, "TMPDIR": str(unsafe), "TRT_WIDGET_HISTORY": "off"}
    ran = tmp_path / "ran"
    done = run_with_tmpdir(unsafe, ran)
    assert done.returncode != 0 and not ran.exists(), done.stdout
    assert "sticky" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    script = tmp_path / "b.py"
    script.write_text(
        "import sys\nfrom trt_widget import Build\n"
        "b = Build(sys.argv[1], history=False, isolation='process').start()\nb.wait()\nprint(b.status, b.error)\n"
    )
    built = subprocess.run(
        [sys.executable, str(script), str(small)], capture_output=True, text=True, timeout=300, env=env
    )
    assert built.stdout.startswith("failed") and "sticky" in built.stdout, (built.stdout, built.stderr[-2000:])
    assert os.listdir(unsafe) == []
    unsafe.chmod(0o1777)  # the same folder with the sticky bit, as /tmp: used
    built = subprocess.run(
        [sys.executable, str(script), str(small)], capture_output=True, text=True, timeout=300, env=env
    )
    assert built.stdout.startswith("succeeded"), (built.stdout, built.stderr[-2000:])


def test_bundle_refuses_a_temp_folder_others_may_write_without_the_sticky_bit(tmp_path: Path, onnx_path: Path) -> None:
    """``bundle`` logs the build into a temporary folder and packs that log into the report made to be shared: in
    such a ``TMPDIR`` another user could swap the folder and have their link (to a secret of yours) packed."""
    unsafe = tmp_path / "scratch"
    unsafe.mkdir()
    unsafe.chmod(0o777)
    out = tmp_path / "report.zip"
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "bundle", str(onnx_path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(unsafe), "TRT_WIDGET_HISTORY": "off"},
    )
    assert done.returncode == 1 and not out.exists(), done.stderr[-2000:]
    assert "sticky" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert os.listdir(unsafe) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_a_sticky_temp_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    """The owner of a sticky folder may still rename anything in it: a ``TMPDIR`` another user owns is theirs."""
    from trt_widget._leftovers import UnsafeTempDir, private_dir

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o1777)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(UnsafeTempDir, match="owned by another user"):
        private_dir("trt-widget-run-", str(theirs))
    assert os.listdir(theirs) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_refused_temp_folder_fails_a_build_with_an_explained_error(tmp_path: Path, onnx_path: Path) -> None:
    """Adversary-10 F7: a 0700 ``TMPDIR`` of mine inside a 0777 folder without the sticky bit (a Kubernetes
    ``emptyDir`` /tmp) failed a process build with "unexpected UnsafeTempDir" and a traceback in ``build.error``,
    advising "a folder of yours" (which this one is). The error names the folder and a way out that works."""
    from trt_widget._leftovers import check_parent

    shared = tmp_path / "emptydir"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit
    mine = shared / "mine"
    mine.mkdir(mode=0o700)
    script = tmp_path / "b.py"
    script.write_text(
        "import sys\nfrom trt_widget import Build\n"
        "b = Build(sys.argv[1], history=False, isolation='process').start()\nb.wait()\nprint(b.status)\n"
        "print(b.error)\n"
    )
    env = {**os.environ, "TMPDIR": str(mine), "TRT_WIDGET_HISTORY": "off"}
    built = subprocess.run(
        [sys.executable, str(script), str(onnx_path)], capture_output=True, text=True, timeout=300, env=env
    )
    status, _, error = built.stdout.partition("\n")
    assert status == "failed", (built.stdout, built.stderr[-2000:])
    assert "Traceback" not in built.stdout and "unexpected" not in error, built.stdout
    assert repr(str(shared)) in error and "sticky" in error and "/dev/shm" in error, error
    assert os.listdir(mine) == []
    if os.path.isdir("/dev/shm") and os.stat("/dev/shm").st_mode & 0o1002 != 0o0002:  # the advice is accepted
        assert check_parent("/dev/shm") == os.path.realpath("/dev/shm")


NEVER_A_PID = 9_999_999  # above the kernel's largest pid_max (4,194,304): no process has it, in any namespace


def test_the_sweep_removes_a_directory_whose_lock_is_free_and_keeps_one_whose_lock_is_held(tmp_path: Path) -> None:
    """Adversary-10 F3: the sweep decided by pid whether a directory's maker had ended. It now removes a directory
    only when it can take its lock file's lock: one held by a live process stays whatever its name's pid says; one
    without a lock file (an earlier version's) is left alone."""
    from trt_widget._leftovers import LOCK_NAME, private_dir, remove_private_dir, sweep

    prefix = "trt_widget-"

    def made(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir(mode=0o700)
        (folder / LOCK_NAME).write_bytes(b"")
        return folder

    free = made(f"{prefix}{NEVER_A_PID}-free")  # its maker ended
    held = made(f"{prefix}{NEVER_A_PID}-held")  # its maker lives in another PID namespace: its pid means nothing here
    older = tmp_path / f"{prefix}{NEVER_A_PID}-older"  # no lock file
    older.mkdir(mode=0o700)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\nsys.stdin.read()",
            str(held / LOCK_NAME),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert sweep(prefix, str(tmp_path)) == [str(free)]
        assert held.is_dir() and older.is_dir() and not free.exists()
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(30)
        holder.stdout.close()
    # private_dir's directory: its lock held by this process until remove_private_dir, never free in between
    mine = private_dir("trt-widget-run-", str(tmp_path))
    sweep_args = "import sys\nfrom trt_widget._leftovers import sweep\nprint(sweep(*sys.argv[1:]))"
    other = subprocess.run(
        [sys.executable, "-c", sweep_args, "trt-widget-run-", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.stdout == "[]\n" and os.path.isdir(mine), other.stderr[-2000:]
    remove_private_dir(mine)
    assert not os.path.exists(mine)
    assert sweep(prefix, str(tmp_path)) == []  # once per process: the second call looks no more


SWEEP_FROM_ELSEWHERE = textwrap.dedent(
    """
    import os, sys
    from trt_widget._leftovers import sweep
    from trt_widget.runners._process import WORK_PREFIX

    print(os.getpid())
    for parent in sys.argv[1:]:
        print(sorted(n for n in os.listdir(parent) if n.startswith(WORK_PREFIX)))
        print(sweep(WORK_PREFIX, parent))
    """
)

# a process build whose hand-over goes through files (as on hosts without process_vm_*), its builder process
# paused (SIGSTOP) while it builds: its work directories are in use until the test lets it go on
PAUSED_BUILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from trt_widget import Build
    from trt_widget.runners import _memory

    _memory._CALLS = None
    build = Build(open(sys.argv[1], "rb").read(), history=False).start()
    while not build.model.structure_version:
        time.sleep(0.01)
    os.kill(build.child_pid, signal.SIGSTOP)
    print("PAUSED", build.done(), flush=True)
    sys.stdin.readline()
    os.kill(build.child_pid, signal.SIGCONT)
    build.wait()
    print("ENDED", build.status, build.error, flush=True)
    """
)


def in_new_pid_namespace(pid: int) -> list[str]:
    """A command prefix: in ``pid``'s mount namespace (its /dev/shm), as pid 1 of a new PID namespace."""
    return ["nsenter", f"--target={pid}", "--mount", "--", "unshare", "--pid", "--fork", "--mount-proc"]


def _namespaces_unavailable() -> str:
    """Why this host cannot run a process in a PID namespace of its own beside one with its own ``/dev/shm``."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "needs root on Linux to make namespaces"
    if not (shutil.which("unshare") and shutil.which("nsenter")):
        return "needs util-linux's unshare and nsenter"
    for probe in (
        ["unshare", "--pid", "--fork", "--mount-proc", "true"],
        ["unshare", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /dev/shm"],
    ):
        if subprocess.run(probe, capture_output=True, timeout=60).returncode != 0:
            return f"{' '.join(probe)} is not permitted here"
    return ""


def test_a_sweep_from_another_pid_namespace_leaves_a_live_builds_work_directories(
    tmp_path: Path, long_model_bytes: bytes
) -> None:
    """Adversary-10 F3: with ``/dev/shm`` shared between containers (``docker --ipc=host``, a Kubernetes pod; all
    root), a process of another PID namespace cannot see a live build's pid: its sweep removed that build's work
    directory, and the build (files hand-over) failed with FileNotFoundError. Real namespaces: the build runs with a
    /dev/shm of its own (a tmpfs in a mount namespace, so no other build on this host is touched), and the sweep
    runs as pid 1 of a new PID namespace that shares that /dev/shm and the build's TMPDIR."""
    why = _namespaces_unavailable()
    if why:
        pytest.skip(why)
    script, model = script_and_model(tmp_path, PAUSED_BUILD, long_model_bytes)
    tmpdir = tmp_path / "tmp"
    env = own_tmpdir(tmpdir)
    own_shm = 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$0" "$@"'
    build = subprocess.Popen(
        ["unshare", "--mount", "sh", "-c", own_shm, sys.executable, str(script), str(model)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert build.stdout is not None and build.stdin is not None
        paused = build.stdout.readline()
        if paused != "PAUSED False\n":  # its stderr is read only once it ended: it may wait on its stdin
            build.kill()
            build.wait(30)
            raise AssertionError((paused, build.stderr.read()[-2000:] if build.stderr else ""))
        swept = subprocess.run(
            [*in_new_pid_namespace(build.pid), sys.executable, "-c", SWEEP_FROM_ELSEWHERE, "/dev/shm", str(tmpdir)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        lines = swept.stdout.splitlines()
        assert swept.returncode == 0 and len(lines) == 5, swept.stderr[-2000:]
        assert lines[0] == "1"  # pid 1 of its own namespace: the build's pid means nothing there
        assert lines[1] != "[]" and lines[3] != "[]"  # the live build's directories, in /dev/shm and TMPDIR...
        assert lines[2] == "[]" and lines[4] == "[]"  # ...are left alone
        build.stdin.write("go on\n")
        build.stdin.flush()
        ended = build.stdout.readline()
        assert ended == "ENDED succeeded None\n", (ended, build.stderr.read()[-2000:] if build.stderr else "")
        assert build.wait(120) == 0
    finally:
        if build.poll() is None:
            build.kill()
            build.wait(30)
        for stream in (build.stdin, build.stdout, build.stderr):
            if stream is not None:
                stream.close()
    assert os.listdir(tmpdir) == []
