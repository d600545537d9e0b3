"""``watch_call(fn, isolation="process")`` ends with the script that started it: a normal end or a SIGKILL of the
parent (a kernel restart) ends the function's process, and its pickled function and arguments (``call.pkl``)
are not left in the temp directory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixture_types import WaitUntil
from user_scripts import alive, own_tmpdir, script_and_model, sigkill_ends_the_grandchild

from scripts.stress_grandchild import GRANDCHILD_CALLER

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import trt_widget

    def fn(path):
        import trt_widget
        trt = trt_widget.trt
        while True:  # builds until its process is ended
            logger = trt.Logger(trt.Logger.ERROR)
            builder = trt.Builder(logger)
            network = builder.create_network(0)
            assert trt.OnnxParser(network, logger).parse(open(path, "rb").read())
            builder.build_serialized_network(network, builder.create_builder_config())

    call = trt_widget.watch_call(fn, sys.argv[1], isolation="process")
    while not (call.builds and call.builds[0].model.structure_version):
        time.sleep(0.01)
    with open(sys.argv[2] + ".part", "w") as f:
        f.write(str(call.pid))
    os.rename(sys.argv[2] + ".part", sys.argv[2])
    if sys.argv[3] == "wait":
        time.sleep(600)
    """
)


def files_under(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize("end", ["script-ends", "sigkill"])
def test_the_functions_process_ends_with_its_parent(
    tmp_path: Path, long_model_bytes: bytes, wait_until: WaitUntil, end: str
) -> None:
    script, model = script_and_model(tmp_path, SCRIPT, long_model_bytes)
    tmpdir = tmp_path / "tmp"
    env = own_tmpdir(tmpdir)
    pid_file = tmp_path / "pid"
    how = "wait" if end == "sigkill" else "end"
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        proc = subprocess.Popen([sys.executable, str(script), str(model), str(pid_file), how], env=env, stderr=err)
    wait_until(lambda: pid_file.exists() or proc.poll() is not None, timeout=120, what="the first build")
    assert pid_file.exists(), stderr.read_text()[-2000:]
    child = int(pid_file.read_text())
    assert not [name for name in files_under(tmpdir) if name.endswith("call.pkl")]  # read, then removed
    if end == "sigkill":
        proc.kill()
    assert proc.wait(120) in (0, -9)
    wait_until(lambda: not alive(child), timeout=30, what="the function's process to end")
    if end == "script-ends":
        assert files_under(tmpdir) == []


RUN_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from trt_widget import BuildWidget

    pid_file = sys.argv[1]
    child = f"import os, time; open({pid_file!r} + '.part', 'w').write(str(os.getpid())); "
    child += f"os.rename({pid_file!r} + '.part', {pid_file!r}); time.sleep(600)"
    widget = BuildWidget.run([sys.executable, "-c", child])
    while not os.path.exists(pid_file):
        time.sleep(0.01)
    print("script ends", flush=True)
    """
)


def test_a_script_ending_after_build_widget_run_ends_the_command(tmp_path: Path, wait_until: WaitUntil) -> None:
    script = tmp_path / "script.py"
    script.write_text(RUN_SCRIPT)
    tmpdir = tmp_path / "tmp"
    env = own_tmpdir(tmpdir)
    pid_file = tmp_path / "pid"
    try:  # the command sleeps 600 s: the script waited for it
        done = subprocess.run([sys.executable, str(script), str(pid_file)], env=env, capture_output=True, timeout=180)
    finally:
        if pid_file.exists() and alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), 9)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not alive(int(pid_file.read_text())), timeout=30, what="the command to end")
    assert files_under(tmpdir) == []


def test_a_sigkilled_caller_ends_a_grandchild_that_is_no_python_process(tmp_path: Path, wait_until: WaitUntil) -> None:
    """The function's process started ``sleep``: a SIGKILL of the caller ends it too (its process group)."""
    script = tmp_path / "script.py"
    script.write_text(GRANDCHILD_CALLER)
    pid_file = tmp_path / "sleep.pid"
    env = own_tmpdir(tmp_path)
    sigkill_ends_the_grandchild([sys.executable, str(script), str(pid_file)], pid_file, env, wait_until)


# The kernel signals the supervisor only after it has closed the dying caller's files, so the function's process,
# which ends itself on its connection's EOF, can end first: the supervisor saw its command gone and exited, the
# group unkilled (a sleep survived about 1 SIGKILL in 40). Here the death signal never comes at all: only the
# supervisor's own look at its watcher, once the command has ended, can end the group.
LATE_DEATH_SIGNAL = (
    textwrap.dedent(
        """
        from trt_widget.watch import _run

        _run._PRCTL = lambda *args: 0  # PR_SET_PDEATHSIG not set: the supervisor is never signalled
        """
    )
    + GRANDCHILD_CALLER
)


def test_a_grandchild_ends_when_the_function_process_ends_before_the_supervisor_is_signalled(
    tmp_path: Path, wait_until: WaitUntil
) -> None:
    script = tmp_path / "script.py"
    script.write_text(LATE_DEATH_SIGNAL)
    pid_file = tmp_path / "sleep.pid"
    env = own_tmpdir(tmp_path)
    sigkill_ends_the_grandchild([sys.executable, str(script), str(pid_file)], pid_file, env, wait_until)
