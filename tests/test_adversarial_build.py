"""The attack list: bad or hostile inputs to a Build, each with its expected outcome and "nothing lost" checks.

Every case states the input, the expected status (or the exception at construction) and a message fragment;
``test_attack`` then checks that nothing was lost: the model file is unchanged, the output is complete or absent,
no temporary file is left, no thread, file descriptor or process leaked, and the next build succeeds.
Permission failures are reproduced as root by dropping the DAC capabilities of a child Python (``setpriv``).
The other features' attacks: tests/**/test_adversarial_*.py; shared inputs: tests/attacks.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from attacks import SECRET, SMALL, _hidden, _model_naming, _refused, _unblocked, build_command

from trt_widget import Build, BuildWidget, _pool, models
from trt_widget._files import atomic_write


def _fds() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the directory's own fd, or one closed meanwhile
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
    return found


@dataclass
class Case:
    """One attack: ``options`` for Build (``{model}`` / ``{dir}`` in strings are replaced), what must happen."""

    name: str
    options: dict[str, Any]
    status: str | None = None  # expected final status; None when construction must raise
    raises: type[BaseException] | None = None
    message: str = ""  # fragment of the error / status detail / warnings
    engine_kept: bool = False  # the engine stays in memory although the build failed
    model: Any = None  # the model source; default: an ONNX file in the case's directory
    setup: Callable[[Path], object] = field(default=lambda d: None)  # its value is not used


def _symlink_output(d: Path) -> None:
    (d / "real.engine").write_bytes(b"old")
    (d / "link.engine").symlink_to(d / "real.engine")


def _stale_part(d: Path) -> None:
    (d / ".out.engine.999999999.abc.part").write_bytes(b"half")  # a writer with a pid that cannot exist


def _raises_keyboard_interrupt(network: Any) -> None:
    raise KeyboardInterrupt


def _external_data(d: Path) -> None:
    import onnx

    onnx.save_model(
        models.deep_residual(2),
        str(d / "ext.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    (d / "weights.bin").unlink()


def _long_name_model() -> Any:
    from onnx import TensorProto, helper

    name = "x" * 10_000
    graph = helper.make_graph(
        [helper.make_node("Relu", [name], ["y"])],
        "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


CASES = [
    Case("output is a device node", {"output": "/dev/full"}, raises=ValueError, message="character device"),
    Case(
        "output is a FIFO",
        {"output": "{dir}/fifo"},
        raises=ValueError,
        message="FIFO",
        setup=lambda d: os.mkfifo(d / "fifo"),
    ),
    Case("output is the model", {"output": "{model}"}, raises=ValueError, message="is the model file itself"),
    Case(
        "timing cache is the model", {"timing_cache": "{model}"}, raises=ValueError, message="is the model file itself"
    ),
    Case(
        "output and cache are one file",
        {"output": "{dir}/x", "timing_cache": "{dir}/x"},
        raises=ValueError,
        message="same file",
    ),
    Case("output through a symlink", {"output": "{dir}/link.engine"}, status="succeeded", setup=_symlink_output),
    Case(
        "stale temporary file of a killed writer", {"output": "{dir}/out.engine"}, status="succeeded", setup=_stale_part
    ),
    Case("budget beyond any timer", {"budget": 1e10}, raises=ValueError, message="budget must be at most"),
    Case("workspace beyond int64", {"workspace": 2**70}, raises=ValueError, message="workspace must be at most"),
    Case(
        "force_after with a thread",
        {"isolation": "thread", "force_after": 1.0},
        raises=ValueError,
        message="force_after needs isolation='process'",
    ),
    Case(
        "network function raises KeyboardInterrupt",
        {},
        status="cancelled",
        model=_raises_keyboard_interrupt,
        message="KeyboardInterrupt",
    ),
    Case(
        "... on a thread",
        {"isolation": "thread"},
        status="cancelled",
        model=_raises_keyboard_interrupt,
        message="KeyboardInterrupt",
    ),
    Case(
        "missing external data file",
        {},
        status="failed",
        model="{dir}/ext.onnx",
        setup=_external_data,
        message="weights.bin",
    ),
    Case("10 KB tensor name", {}, status="failed", model=_long_name_model(), message="exceeds the limit"),
    Case(
        "corrupt timing cache",
        {"timing_cache": "{dir}/bad.cache"},
        status="succeeded",
        setup=lambda d: (d / "bad.cache").write_bytes(os.urandom(300)),
    ),
]


def _fill(value: Any, d: Path, model: Path) -> Any:
    return value.format(dir=d, model=model) if isinstance(value, str) else value


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_attack(case: Case, tmp_path: Path) -> None:
    model_path = tmp_path / "model.onnx"
    model_path.write_bytes(SMALL)
    case.setup(tmp_path)
    model = _fill(case.model, tmp_path, model_path) if case.model is not None else str(model_path)
    options = {k: _fill(v, tmp_path, model_path) for k, v in case.options.items()}
    threads_before, fds_before = threading.active_count(), _fds()
    idle_before = len(_pool.pool.idle_pids())
    dev_full = os.stat("/dev/full").st_mode
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.message):
            Build(model, history=False, **options)
    else:
        build = Build(model, history=False, **options).start()
        assert build.wait(120) == case.status, (build.status_detail, build.error)
        said = " ".join([str(build.error or ""), build.status_detail, *(p["message"] for p in build.problems)])
        assert case.message in said, said
        if case.status == "failed":
            assert (build.engine is not None) == case.engine_kept
        output = options.get("output")
        if output and case.status == "succeeded":
            assert Path(output).read_bytes() == build.engine  # complete
        elif output:
            assert not Path(output).exists() or Path(output).read_bytes() != build.engine
    # nothing lost
    assert model_path.read_bytes() == SMALL
    assert os.stat("/dev/full").st_mode == dev_full and stat.S_ISCHR(dev_full)
    assert not list(tmp_path.glob(".*.part"))
    if (tmp_path / "link.engine").is_symlink():
        assert (tmp_path / "real.engine").stat().st_size > 1000  # written through the link, the link kept
    assert Build(SMALL, history=False).start().wait(120) == "succeeded"
    assert threading.active_count() <= threads_before + 2  # the worker pool's spawner and idle timers
    new = _fds() - fds_before
    assert not [f for f in new if "trt_widget" in f]
    idle_workers = len(_pool.pool.idle_pids()) - idle_before  # each idle worker holds its two pipes
    assert len([f for f in new if f.startswith("pipe:")]) <= 2 * max(0, idle_workers)


def test_save_refuses_device_nodes_and_the_model_and_keeps_a_symlink(tmp_path: Path) -> None:
    model_path = tmp_path / "model.onnx"
    model_path.write_bytes(SMALL)
    build = Build(str(model_path), history=False).start()
    assert build.wait(120) == "succeeded"
    with pytest.raises(OSError, match="character device"):
        build.save("/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with pytest.raises(ValueError, match="model file itself"):
        build.save(str(model_path))
    assert model_path.read_bytes() == SMALL
    (tmp_path / "target.engine").write_bytes(b"")
    (tmp_path / "link.engine").symlink_to("target.engine")
    build.save(str(tmp_path / "link.engine"))
    assert (tmp_path / "link.engine").is_symlink()
    assert (tmp_path / "target.engine").read_bytes() == build.engine


def test_atomic_write_gives_files_the_umask_mode_and_cleans_only_dead_writers_parts(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    live = tmp_path / f".a.bin.{os.getpid()}.x.part"  # a write in progress in this very process
    dead = tmp_path / ".a.bin.999999999.y.part"
    live.write_bytes(b"1")
    dead.write_bytes(b"2")
    atomic_write(target, b"data")
    assert target.read_bytes() == b"data"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert live.exists() and not dead.exists()


def test_timings_df_without_phases_is_an_empty_frame_with_the_columns() -> None:
    widget = BuildWidget(b"garbage", history=False)  # not started: no phases yet (a failed parse has one)
    frame = widget.timings_df()
    assert frame.empty and frame.index.name == "id"
    assert list(frame.columns) == [
        "name",
        "parent",
        "depth",
        "step",
        "num_steps",
        "start_s",
        "end_s",
        "duration_s",
        "status",
        "ended_early",
    ]
    good = BuildWidget(SMALL, history=False).start()
    assert good.wait(120) == "succeeded"
    parents = good.timings_df()["parent"]
    assert str(parents.dtype) == "Int64" and parents.isna().sum() >= 1  # roots have no parent: <NA>, not NaN


# -- permission failures, as root without DAC override -------------------------------------------------------

SETPRIV = shutil.which("setpriv")
needs_setpriv = pytest.mark.skipif(
    SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv to drop DAC capabilities"
)


def run_without_dac(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a child Python that obeys file modes although root; it prints one JSON line last."""
    assert SETPRIV is not None
    done = subprocess.run(
        [
            SETPRIV,
            "--bounding-set",
            "-dac_override,-dac_read_search,-fowner",
            "--inh-caps",
            "-dac_override,-dac_read_search,-fowner",
            sys.executable,
            "-c",
            textwrap.dedent(code),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


REPORT = """
    import json, os
    from trt_widget import Build
    b = Build({model!r}, history=False, isolation={isolation!r}, {options}).start()
    b.wait(120)
    print(json.dumps({{"status": b.status, "engine": len(b.engine or b""), "error": str(b.error or ""),
                      "problems": [p["message"] for p in b.problems],
                      "output": os.path.getsize({output!r}) if {output!r} and os.path.exists({output!r}) else None}}))
"""
# builds that use timing_cache= as NVIDIA TensorRT's do, on any backend (tests/conftest.py, nvidia_timing_cache); on a
# thread: a builder process would not have the fake
NVIDIA_CACHE_REPORT = REPORT.replace(
    "    from trt_widget import Build\n",
    "    from trt_widget import Build, _engine\n    _engine.uses_timing_cache = lambda backend: True\n",
)


@needs_setpriv
def test_an_unwritable_timing_cache_is_a_warning_and_the_engine_is_kept(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "m.onnx").write_bytes(SMALL)
    out = tmp_path / "m.engine"
    locked.chmod(0o555)
    try:
        got = run_without_dac(
            NVIDIA_CACHE_REPORT.format(
                model=str(tmp_path / "m.onnx"),
                isolation="thread",
                options=f"timing_cache={str(locked / 't.cache')!r}, output={str(out)!r}",
                output=str(out),
            ),
            tmp_path,
        )
    finally:
        locked.chmod(0o755)
    assert got["status"] == "succeeded", got
    assert got["engine"] > 0 and got["output"] == got["engine"]
    assert any("could not save" in p and "Permission denied" in p for p in got["problems"]), got["problems"]


@needs_setpriv
def test_an_unreadable_timing_cache_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "m.onnx").write_bytes(SMALL)
    cache = tmp_path / "t.cache"
    cache.write_bytes(b"x")
    cache.chmod(0o000)
    got = run_without_dac(
        NVIDIA_CACHE_REPORT.format(
            model=str(tmp_path / "m.onnx"), isolation="thread", options=f"timing_cache={str(cache)!r}", output=""
        ),
        tmp_path,
    )
    assert got["status"] == "succeeded", got
    assert any("could not read" in p for p in got["problems"]), got["problems"]
    assert "unexpected" not in got["error"]


@needs_setpriv
def test_an_unwritable_output_fails_but_keeps_the_engine_in_memory(tmp_path: Path) -> None:
    """The folder becomes unwritable while the build runs (a folder unwritable from the start is refused when
    the Build is created: tests/test_output_paths.py)."""
    (tmp_path / "m.onnx").write_bytes(SMALL)
    locked = tmp_path / "locked"
    locked.mkdir()
    target = str(locked / "m.engine")
    code = REPORT.format(
        model=str(tmp_path / "m.onnx"), isolation="process", options=f"output={target!r}", output=target
    ).replace(").start()", f")\n    os.chmod({str(locked)!r}, 0o555)\n    b.start()", 1)
    try:
        got = run_without_dac(code, tmp_path)
    finally:
        locked.chmod(0o755)
    assert got["status"] == "failed" and got["engine"] > 0, got
    assert "kept in memory" in got["error"] and "Permission denied" in got["error"]
    assert got["output"] is None and not list(locked.iterdir())


# -- external data: a model never reads a file it was not given ------------------------------------------------


def test_a_protobuf_group_hides_no_location_from_the_check() -> None:
    from trt_widget._errors import BuildError
    from trt_widget._external_data import external_locations

    for data in (
        _hidden(_model_naming("/etc/passwd")),
        b"\xa3\x06\xab\x06\x08\x01\xac\x06\xa4\x06" + _hidden(_model_naming("/etc/passwd")),
    ):
        assert external_locations(data) == ["/etc/passwd"]
    for broken in (b"\xa4\x06location", b"\xa3\x06location", b"\x07location"):  # no start, no end, wire type 7
        with pytest.raises(BuildError, match="not a well-formed ONNX protobuf"):
            external_locations(broken)


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_model_bytes_naming_any_file_are_refused_with_how_to_pass_them(
    tmp_path: Path, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret.bin").write_bytes(SECRET)
    monkeypatch.chdir(tmp_path)  # TensorRT resolves the names of a model without a directory here
    for location in (str(tmp_path / "secret.bin"), "secret.bin"):
        model = _model_naming(location)
        _refused(Build(model.SerializeToString(), isolation=isolation, history=False).start(), "pass the path")
        _refused(Build(_hidden(model), isolation=isolation, history=False).start(), "pass the path")
        _refused(Build(model, isolation=isolation, history=False).start(), "onnx.load(path)")


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_model_file_reads_external_data_only_inside_its_directory(tmp_path: Path, isolation: str) -> None:
    import onnx

    home = tmp_path / "model"
    home.mkdir()
    (tmp_path / "secret.bin").write_bytes(SECRET)
    (home / "link.bin").symlink_to(tmp_path / "secret.bin")
    (home / "sub").mkdir()
    for location, said in [
        (str(tmp_path / "secret.bin"), "no absolute paths"),
        ("../secret.bin", "no '..'"),
        ("sub/../../secret.bin", "no '..'"),
        ("link.bin", "leads outside"),
        ("sub", "not a file"),
    ]:
        onnx.save_model(_model_naming(location), str(home / "m.onnx"))
        _refused(Build(str(home / "m.onnx"), isolation=isolation, history=False).start(), repr(location), said)
        (home / "m.onnx").write_bytes(_hidden(_model_naming(location)))
        _refused(Build(str(home / "m.onnx"), isolation=isolation, history=False).start(), repr(location), said)
    (home / "sub" / "w.bin").write_bytes(bytes(64))  # its own data, in its own directory: built
    onnx.save_model(_model_naming("sub/w.bin"), str(home / "m.onnx"))
    build = Build(str(home / "m.onnx"), isolation=isolation, history=False).start()
    assert build.wait(120) == "succeeded", build.status_detail


# -- extras never hang or damage ------------------------------------------------------------------------------


def test_events_to_a_fifo_without_a_reader_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    outcome = _unblocked(fifo, lambda: Build(SMALL, history=False, events=str(fifo)), "events=<a FIFO, no reader>")
    assert isinstance(outcome, ValueError) and "no process is reading" in str(outcome), outcome
    with open(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK), "rb") as reader:  # with a reader: events flow
        build = Build(SMALL, history=False, events=str(fifo), isolation="thread").start()
        got = b""
        while b'"build_end"' not in got:
            got += reader.read() or b""
            time.sleep(0.01)
        assert build.wait(120) == "succeeded"


def test_a_tilde_path_naming_no_user_is_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    for source, output in (("~nosuchuser9/m.onnx", None), (str(model), "~nosuchuser9/m.engine")):
        with pytest.raises(ValueError, match="cannot expand '~nosuchuser9': no such user"):
            Build(source, history=False, isolation="thread", output=output)
    with pytest.raises(ValueError, match="no such user"):
        Build(str(model), history=False, events="~nosuchuser9/e.jsonl", isolation="thread")
    for command in (["build", "~nosuchuser9/m.onnx"], ["build", str(model), "-o", "~nosuchuser9/m.engine"]):
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", *command, "--plain"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
        )
        assert done.returncode in (1, 2) and "Traceback" not in done.stderr, done
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("trt-widget: error: ") and "no such user" in line, line


def test_no_output_overwrites_the_model_or_the_recording(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    with pytest.raises(ValueError, match="is the model file itself"):
        Build(str(model), history=False, events=str(model))
    with pytest.raises(ValueError, match="is the model file itself"):
        Build(str(model), history=False, events=f"{tmp_path}/./m.onnx")
    with pytest.raises(ValueError, match="same file"):
        Build(str(model), history=False, events=str(tmp_path / "x"), output=str(tmp_path / "x"))
    build = Build(str(model), history=False, isolation="thread").start()
    assert build.wait(120) == "succeeded"
    from trt_widget.report import timeline

    for write in (build.to_html, build.to_trace, lambda p: timeline.save_svg(build, p)):
        with pytest.raises(ValueError, match="is the model file itself"):
            write(str(model))
    from trt_widget.report import to_html

    with pytest.raises(ValueError, match="is the model file itself"):
        to_html(build, str(model))
    from trt_widget.serve import RemoteBuild

    with pytest.raises(ValueError, match=r"events=.* is the model file itself"):
        RemoteBuild("http://127.0.0.1:9", "token", str(model), events=str(model))
    assert model.read_bytes() == SMALL
    recording = tmp_path / "r.jsonl"
    recorded = Build(str(model), history=False, isolation="thread", events=str(recording)).start()
    recorded.wait(120)
    assert recorded.events is not None and recorded.events.join(30)  # the writer may still be catching up
    kept = recording.read_bytes()
    replay = Build.from_events(recording).start()
    replay.wait(60)
    with pytest.raises(ValueError, match="is the recording itself"):
        replay.to_html(str(recording))
    assert recording.read_bytes() == kept


@pytest.fixture(autouse=True, scope="module")
def _children_before_this_module() -> Iterator[set[int]]:
    """The processes that were there before these attacks: another module's (a Ray instance's, perhaps one left
    dead by a failed start) are not this module's leaks."""
    global _BEFORE
    _BEFORE = {p.pid for p in psutil.Process().children(recursive=True)}
    yield _BEFORE


_BEFORE: set[int] = set()


def test_no_worker_process_leaks_across_the_attacks() -> None:
    """Run last in this module: no zombies, and no more children than the pool keeps warm (+1 being warmed)."""
    children = [p for p in psutil.Process().children() if p.pid not in _BEFORE]
    assert not [p for p in children if p.status() == psutil.STATUS_ZOMBIE]
    # builder workers only: a Ray instance started in this module has children of its own
    workers = [p for p in children if "trt_widget.runners._worker" in " ".join(p.cmdline())]
    assert len(workers) <= _pool.MAX_IDLE_WORKERS + 1, [p.cmdline() for p in workers]


@pytest.mark.parametrize("dim", [1.5, float("inf"), -float("inf"), True])
def test_a_profile_dimension_that_is_not_a_whole_number_is_refused(dim: object) -> None:
    """int() made 1.5 a 1 and True a 1 without a word, and raised OverflowError for infinity (JSON's Infinity:
    a 500 from the server, an unexplained tool error over MCP)."""
    from trt_widget._options import BuildOptions

    with pytest.raises(ValueError, match=r"profile for input 'input' must be \(min, opt, max\) shapes"):
        BuildOptions.from_kwargs(profiles={"input": ((dim, 8, 8, 8), (1, 8, 8, 8), (2, 8, 8, 8))})


def test_a_profile_dimension_may_be_a_whole_float_numpy_int_or_digits() -> None:
    import numpy as np

    from trt_widget._options import BuildOptions

    profiles = {"input": ((1.0, np.int64(8), "8", 8), (1, 8, 8, 8), (2, 8, 8, 8))}
    assert BuildOptions.from_kwargs(profiles=profiles).profiles == {"input": ((1, 8, 8, 8), (1, 8, 8, 8), (2, 8, 8, 8))}


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root to mount")
def test_a_log_file_that_cannot_be_written_is_said_by_the_command(tmp_path: Path) -> None:
    """--log-file on a full disk: the build succeeded and the command said nothing (only the status detail knew,
    which a successful build does not print), so the log was lost without a word."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        with open(disk / "filler", "wb", buffering=0) as handle, contextlib.suppress(OSError):
            while handle.write(b"\0" * 4096):
                pass
        model = tmp_path / "m.onnx"
        model.write_bytes(SMALL)
        command = [sys.executable, "-m", "trt_widget", "build", str(model), "-o", str(tmp_path / "m.engine")]
        done = subprocess.run(
            [*command, "--log-file", str(disk / "build.log"), "--plain"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
        )
        assert done.returncode == 0, done.stderr
        assert "could not be written (OSError: [Errno 28]" in done.stdout + done.stderr, done.stdout[-2000:]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root to mount")
def test_an_engine_a_full_disk_refused_is_said_not_saved_by_the_command(tmp_path: Path) -> None:
    """On a full disk ``trt-widget build`` said the engine "is kept in memory: build.engine holds it", which a
    command whose process ends cannot use: it says the engine is not saved, why, and what to do."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        (disk / "m.engine").write_bytes(b"the previous engine")
        with open(disk / "filler", "wb", buffering=0) as handle, contextlib.suppress(OSError):
            while handle.write(b"\0" * 4096):
                pass
        model = tmp_path / "m.onnx"
        model.write_bytes(SMALL)
        done = build_command(model, disk / "m.engine")
        said = done.stdout + done.stderr
        assert done.returncode == 1, said[-2000:]
        assert "No space left on device" in said and "not saved" in said, said[-2000:]
        assert "build.engine" not in said and "kept in memory" not in said, said[-2000:]
        assert "another -o" in said, said[-2000:]
        assert (disk / "m.engine").read_bytes() == b"the previous engine"
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "m.engine"]  # no part file left
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root to mount")
def test_a_log_file_cut_short_by_a_full_disk_leaves_the_old_one(tmp_path: Path) -> None:
    """A write of log_file= failed mid-build (a full disk), yet the part written so far (8 KiB) replaced the old
    log: the output-path policy is the old file or the whole new one."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        (disk / "build.log").write_text("the previous build's log\n")
        with open(disk / "filler", "wb", buffering=0) as handle, contextlib.suppress(OSError):
            while handle.write(b"\0" * 4096):
                pass
        build = Build(SMALL, log_file=disk / "build.log").start()
        assert build.wait(300) and build.status == "succeeded", build.status_detail
        assert "log_file=" in build.status_detail and "could not be written" in build.status_detail
        assert (disk / "build.log").read_text() == "the previous build's log\n"
        assert sorted(p.name for p in disk.iterdir()) == ["build.log", "filler"]  # no part file left
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.parametrize(
    ("name", "value"),
    [("workspace", "9" * 400), ("workspace", "9" * 400 + "GiB"), ("budget", 10**400), ("force_after", 10**400)],
)
def test_an_option_number_too_large_for_a_float_is_a_value_error(name: str, value: object) -> None:
    """float() of it overflowed: an OverflowError traceback from the command line, a 500 from the server."""
    from trt_widget._options import BuildOptions

    with pytest.raises(ValueError, match=f"{name} must be"):
        BuildOptions.from_kwargs(**{name: value})


def test_a_workspace_of_400_digits_is_one_line_from_the_command_line(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(model), "--workspace", "9" * 400],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "workspace must be at most" in done.stderr and not (tmp_path / "m.engine").exists()
