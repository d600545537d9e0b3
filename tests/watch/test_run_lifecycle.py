"""``trt-widget run`` ends with its command: killed by SIGTERM, SIGHUP, ``timeout`` or SIGKILL, the command (and a
Python process it started) ends too, and nothing stays in the temp directory (SIGKILL runs no clean-up: the
next run removes what it left). A long ``TMPDIR`` (CI) does not break the socket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from fixture_types import WaitUntil
from other_user import NOBODY
from user_scripts import DIRECT_BUILD, alive, own_tmpdir, script_and_model, sigkill_ends_the_grandchild

COMMAND = textwrap.dedent(
    """
    import os, subprocess, sys, time
    ready = sys.argv[1] + ".child"  # written once the child is up, connected to trt-widget run
    child = subprocess.Popen([sys.executable, "-c", f"import time; open({ready!r}, 'w'); time.sleep(600)"])
    while not os.path.exists(ready):
        time.sleep(0.01)
    with open(sys.argv[1] + ".part", "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    os.rename(sys.argv[1] + ".part", sys.argv[1])
    time.sleep(600)
    """
)


def start(tmp_path: Path, tmpdir: Path, prefix: list[str] | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    script = tmp_path / "command.py"
    script.write_text(COMMAND)
    pids = tmp_path / "pids"
    env = own_tmpdir(tmpdir)
    run = [sys.executable, "-m", "trt_widget", "run", "--plain", "--", sys.executable, str(script), str(pids)]
    argv = [*(prefix or []), *run]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, pids


def command_pids(pids: Path, wait_until: WaitUntil) -> list[int]:
    wait_until(pids.exists, timeout=90, what="the command to start")
    return [int(p) for p in pids.read_text().split()]


def run_json(script: Path, model: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``trt-widget run --json -- python script model``, to its end."""
    command = [sys.executable, "-m", "trt_widget", "run", "--json", "--", sys.executable, str(script), str(model)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def leftovers(tmpdir: Path) -> list[str]:
    return sorted(name for name in os.listdir(tmpdir) if name.startswith("trt-widget-run-"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_that_ends_run_ends_its_command_and_leaves_nothing(
    tmp_path: Path, wait_until: WaitUntil, sig: signal.Signals
) -> None:
    tmpdir = tmp_path / "tmp"
    proc, pids = start(tmp_path, tmpdir)
    command = command_pids(pids, wait_until)
    assert leftovers(tmpdir)  # the run's directory while it runs
    proc.send_signal(sig)
    assert proc.wait(60) == 128 + sig
    wait_until(lambda: not any(alive(pid) for pid in command), timeout=30, what="the command to end")
    assert leftovers(tmpdir) == []


def test_timeout_ends_the_command_and_leaves_nothing(tmp_path: Path, wait_until: WaitUntil) -> None:
    tmpdir = tmp_path / "tmp"
    proc, pids = start(tmp_path, tmpdir, prefix=["timeout", "600"])
    command = command_pids(pids, wait_until)
    # GNU timeout's own timer signal: its time is up now, once the command runs (not after a fixed 15 s that had to
    # outlast the start); it sends the run SIGTERM and exits 124, as when its timer fires
    proc.send_signal(signal.SIGALRM)
    assert proc.wait(60) == 124
    wait_until(lambda: not any(alive(pid) for pid in command), timeout=30, what="the command to end")
    assert leftovers(tmpdir) == []


def test_a_sigkilled_run_takes_its_command_along_and_the_next_run_sweeps_its_directory(
    tmp_path: Path, wait_until: WaitUntil
) -> None:
    tmpdir = tmp_path / "tmp"
    proc, pids = start(tmp_path, tmpdir)
    command = command_pids(pids, wait_until)
    proc.kill()
    proc.wait(30)
    wait_until(lambda: not any(alive(pid) for pid in command), timeout=30, what="the command to end")
    assert len(leftovers(tmpdir)) == 1  # a SIGKILL runs no clean-up...
    env = own_tmpdir(tmpdir)
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--", sys.executable, "-c", "pass"], env=env, timeout=120
    )
    assert done.returncode == 0
    assert leftovers(tmpdir) == []  # ...the next run removes what the dead one left


def test_a_long_tmpdir_still_watches_the_builds(tmp_path: Path) -> None:
    from trt_widget.models import deep_residual, to_bytes

    tmpdir = tmp_path / ("d" * 40) / ("e" * 40)
    env = own_tmpdir(tmpdir)
    assert len(str(tmpdir)) + len("/trt-widget-run-1234567-abcdefgh/events.sock") > 108
    script, model = script_and_model(tmp_path, DIRECT_BUILD, to_bytes(deep_residual(2)))
    done = run_json(script, model, env, timeout=180)
    assert done.returncode == 0, done.stderr
    assert '"status": "succeeded"' in done.stdout and "too long" not in done.stderr
    assert leftovers(tmpdir) == []


def test_another_users_process_cannot_feed_builds_through_the_abstract_socket(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The abstract socket (long TMPDIR) has no file permissions: a connection from another user is refused."""
    import logging
    import shutil

    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    from trt_widget.watch import CommandRun

    tmpdir = tmp_path / ("d" * 50) / ("e" * 50)
    tmpdir.mkdir(parents=True)
    tmp_path.chmod(0o755)
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmpdir)
    import tempfile

    tempfile.tempdir = None
    try:
        run = CommandRun([sys.executable, "-c", "import time; time.sleep(30)"])
        run.start()
        address = ""
        deadline = time.monotonic() + 30
        while not address and time.monotonic() < deadline:
            try:
                with open(f"/proc/{run.pid}/environ", "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
                address = env.get(b"TRT_WIDGET_RUN_SOCKET", b"").decode()
            except OSError:
                time.sleep(0.05)
        assert address.startswith("@")
        fake = (  # a build_start the run takes from a process of this user's (a build "fake" shown)
            '{"build": 0, "event": "build_start", "model": "fake", "backend": "rtx", "version": "1", "options": {}, '
            '"t": 0.0}\\n'
        )
        sender = (
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.connect('\\0' + {address[1:]!r}); print('connected', flush=True); s.sendall(b'{fake}'); s.recv(1)"
        )
        with caplog.at_level(logging.WARNING, logger="trt_widget"):
            sent = subprocess.run(
                [*NOBODY, sys.executable, "-c", sender],
                timeout=60,
                capture_output=True,
            )
        assert sent.stdout == b"connected\n", sent.stderr[-1000:]  # it reached the socket: refused there
        refused = [r.getMessage() for r in caplog.records if "another user's process" in r.getMessage()]
        assert refused == ["trt-widget run: refused a connection from another user's process"], caplog.text
        assert run.builds == []
        run.terminate()
        run.result(30)
    finally:
        if old is None:
            os.environ.pop("TMPDIR")
        else:
            os.environ["TMPDIR"] = old
        tempfile.tempdir = None


FORKS = textwrap.dedent(
    """
    import multiprocessing, sys
    import tensorrt_rtx_bindings as trt

    def build(path):
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        assert trt.OnnxParser(network, logger).parse(open(path, "rb").read())
        assert builder.build_serialized_network(network, builder.create_builder_config())

    if __name__ == "__main__":
        build(sys.argv[1])  # the parent's own build first: its connection and count exist before the forks
        context = multiprocessing.get_context("fork")
        children = [context.Process(target=build, args=(sys.argv[1],)) for _ in range(3)]
        for child in children:
            child.start()
        for child in children:
            child.join()
            assert child.exitcode == 0
    """
)


def test_fork_children_relay_their_own_builds(tmp_path: Path) -> None:
    import json

    from trt_widget.models import deep_residual, to_bytes

    script, model = script_and_model(tmp_path, FORKS, to_bytes(deep_residual(2)))
    done = run_json(script, model, {**os.environ, "TRT_WIDGET_HISTORY": "off"}, timeout=300)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    starts = [e for e in events if e["event"] == "build_start"]
    assert len(starts) == 4 and len({e["pid"] for e in starts}) == 4  # the parent and three fork children
    for n in range(4):
        ends = [e for e in events if e["build"] == n and e["event"] == "build_end"]
        assert [e["status"] for e in ends] == ["succeeded"], (n, ends)


def test_a_sigkilled_run_ends_a_grandchild_that_is_no_python_process(tmp_path: Path, wait_until: WaitUntil) -> None:
    """PR_SET_PDEATHSIG reaches only the direct child: the supervisor kills the command's whole process group."""
    pid_file = tmp_path / "sleep.pid"
    shell = f"sleep 1000 & echo $! > {pid_file}.part; mv {pid_file}.part {pid_file}; wait"
    argv = [sys.executable, "-m", "trt_widget", "run", "--plain", "--", "sh", "-c", shell]
    sigkill_ends_the_grandchild(argv, pid_file, own_tmpdir(tmp_path), wait_until)


def test_a_command_that_cannot_start_is_reported(tmp_path: Path) -> None:
    """The supervisor starts the command: its failure to start still reaches the caller as before."""
    from trt_widget import BuildError
    from trt_widget.watch import CommandRun

    run = CommandRun([str(tmp_path / "no-such-program")]).start()
    with pytest.raises(BuildError, match=r"cannot run .*no-such-program.*: No such file or directory"):
        run.result(30)


def test_with_stdin_closed_the_commands_connection_is_not_its_stdin(tmp_path: Path) -> None:
    """Issue 35's third re-run: started with fd 0 closed (cron, a daemon's ``<&-``), the command's connection to
    the watcher took fd 0, the lowest free one: its stdin was the relay socket (code reading fd 0 read the watch's
    bytes). Now fd 0 is ``/dev/null`` there: it reads nothing, as a closed stdin gives nothing."""
    probe = "import os\nprint(os.path.samestat(os.fstat(0), os.stat(os.devnull)), os.read(0, 10))\n"
    run = [sys.executable, "-m", "trt_widget", "run", "--plain", "--", sys.executable, "-c", probe]
    done = subprocess.run(["sh", "-c", 'exec 0<&- "$@"', "sh", *run], capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == ["True", "b''"], (done.stdout, done.stderr)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_json_events_that_cannot_be_written_are_said_on_stderr(tmp_path: Path, small_model: Any) -> None:
    """``run --json > /dev/full`` (a full disk): every event was lost, exit code 0, and nothing said so (the relay
    swallowed the write's error; ``build --json`` warns). The command's own stdout goes to stderr (issue 39)."""
    from trt_widget.models import to_bytes

    script, model = script_and_model(tmp_path, DIRECT_BUILD, to_bytes(small_model))
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", "run", "--json", "--", sys.executable, str(script), str(model)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
        )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write to stdout ([Errno 28]") == 1, done.stderr
    assert "ENGINE " in done.stderr, done.stderr  # the command's line, on stderr


def test_an_environment_variable_with_an_empty_name_does_not_stop_the_command(tmp_path: Path) -> None:
    """POSIX lets a process's environment hold ``=value`` (an empty name; Python passes it on): the supervisor's
    ``posix_spawnp`` refused it with a ValueError traceback, and the command never ran (exit 1, nothing said)."""
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off", "": "=empty name", "KEPT": "yes"}
    run = [sys.executable, "-m", "trt_widget", "run", "--plain", "--", "sh", "-c", 'echo "ran $KEPT"']
    done = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ran", "yes"], (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr


FORKED = textwrap.dedent(
    """
    import os, signal
    from trt_widget.watch import CommandRun

    print("parent", CommandRun(["true"]).start().result(60), flush=True)
    pid = os.fork()  # multiprocessing's default on Linux: a Pool's workers
    if pid == 0:
        signal.alarm(100)  # a child that waits forever ends (before the fix it did)
        print("child", CommandRun(["true"]).start().result(60), flush=True)
        os._exit(0)
    print("forked", os.waitpid(pid, 0)[1], flush=True)
    """
)


def test_a_forked_process_starts_a_watched_command(tmp_path: Path) -> None:
    """The commands start on one launcher thread (a child's death signal follows the thread that started it): in a
    process forked after a command had run, that thread does not exist, and the next command waited forever."""
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", FORKED], capture_output=True, text=True, timeout=200, cwd=tmp_path, env=env
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the forked process's command never started: {exc.stdout!r}")
    assert done.stdout.split() == ["parent", "0", "child", "0", "forked", "0"], done.stderr


def test_the_command_gets_the_locale_as_the_user_gave_it(tmp_path: Path) -> None:
    """Started with no locale, Python coerces its own (PEP 538: ``LC_CTYPE=C.UTF-8`` in ``os.environ``), and the
    watched command inherited it, where run directly it has none; a locale the user set is passed on as it is."""
    bare = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    bare |= {"TRT_WIDGET_HISTORY": "off", "PYTHONCOERCECLOCALE": "1"}
    bare.pop("PYTHONUTF8", None)
    show = 'echo "ctype=${LC_CTYPE-unset} all=${LC_ALL-unset}"'
    run = [sys.executable, "-m", "trt_widget", "run", "--plain", "--", "sh", "-c", show]
    direct = subprocess.run(["sh", "-c", show], capture_output=True, text=True, timeout=60, env=bare)
    assert direct.stdout.split() == ["ctype=unset", "all=unset"], direct.stdout
    for env, said in ((bare, direct.stdout), ({**bare, "LC_CTYPE": "C.UTF-8"}, "ctype=C.UTF-8 all=unset\n")):
        done = subprocess.run(run, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == said.strip(), (done.stdout, done.stderr)
