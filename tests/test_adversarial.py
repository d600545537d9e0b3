"""The attack list: bad or hostile inputs, each with its expected outcome and "nothing lost" checks.

Every case states the input, the expected status (or the exception at construction) and a message fragment;
``run_case`` then checks that nothing was lost: the model file is unchanged, the output is complete or absent,
no temporary file is left, no thread, file descriptor or process leaked, and the next build succeeds.
Permission failures are reproduced as root by dropping the DAC capabilities of a child Python (``setpriv``).
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

from trt_widget import Build, BuildWidget, _pool, models
from trt_widget._files import atomic_write
from trt_widget.runners import _process

SMALL = models.deep_residual(2).SerializeToString()


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
    setup: Callable[[Path], None] = field(default=lambda d: None)


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
    idle_before = len(_process.pool.idle_pids())
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
    idle_workers = len(_process.pool.idle_pids()) - idle_before  # each idle worker holds its two pipes
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
    return json.loads(done.stdout.strip().splitlines()[-1])


REPORT = """
    import json, os
    from trt_widget import Build
    b = Build({model!r}, history=False, isolation={isolation!r}, {options}).start()
    b.wait(120)
    print(json.dumps({{"status": b.status, "engine": len(b.engine or b""), "error": str(b.error or ""),
                      "problems": [p["message"] for p in b.problems],
                      "output": os.path.getsize({output!r}) if {output!r} and os.path.exists({output!r}) else None}}))
"""


@needs_setpriv
@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_an_unwritable_timing_cache_is_a_warning_and_the_engine_is_kept(tmp_path: Path, isolation: str) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "m.onnx").write_bytes(SMALL)
    out = tmp_path / "m.engine"
    locked.chmod(0o555)
    try:
        got = run_without_dac(
            REPORT.format(
                model=str(tmp_path / "m.onnx"),
                isolation=isolation,
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
        REPORT.format(
            model=str(tmp_path / "m.onnx"), isolation="process", options=f"timing_cache={str(cache)!r}", output=""
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

SECRET = b"SECRET!!" * 8  # 64 bytes: exactly the 16 floats of the tensor below, so TensorRT would accept them


def _model_naming(location: str) -> Any:
    """y = x + w, with w (16 floats) stored as external data at ``location``."""
    from onnx import TensorProto, helper

    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 16], data_location=TensorProto.EXTERNAL)
    entry = weight.external_data.add()
    entry.key, entry.value = "location", location
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        initializer=[weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


HIDING_GROUP = b"\xa3\x06\xa4\x06"  # an empty unknown group (field 100): protobuf skips it, a naive scan stops


def _hidden(model: Any) -> bytes:
    """The model's bytes behind an unknown group: the same model to protobuf (and so to TensorRT's parser)."""
    import onnx

    data = HIDING_GROUP + model.SerializeToString()
    assert onnx.load_from_string(data).graph.initializer[0].external_data == model.graph.initializer[0].external_data
    return data


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


def _refused(build: Any, *fragments: str) -> None:
    assert build.wait(120) == "failed", build.status_detail
    assert SECRET not in (build.engine or b"")
    for fragment in ("external data", *fragments):
        assert fragment in str(build.error), build.error


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


def test_a_ray_task_gets_no_directory_so_external_data_is_refused_at_the_driver(
    tmp_path: Path, ray_session: Any
) -> None:
    import onnx

    from trt_widget.ray import RayRunner

    (tmp_path / "w.bin").write_bytes(SECRET)
    onnx.save_model(_model_naming("w.bin"), str(tmp_path / "m.onnx"))
    build = Build(str(tmp_path / "m.onnx"), runner=RayRunner(), history=False).start()
    _refused(build, "Ray task", "embed the weights")
    _refused(Build(_model_naming("/etc/passwd").SerializeToString(), runner=RayRunner(), history=False).start())
    _refused(Build(_hidden(_model_naming("/etc/passwd")), runner=RayRunner(), history=False).start())


@pytest.mark.parametrize("executor", ["local", pytest.param("ray", marks=pytest.mark.ray)])
def test_serve_uploads_name_no_server_file(tmp_path: Path, executor: str, request: pytest.FixtureRequest) -> None:
    import httpx

    from trt_widget.serve import ServerThread

    if executor == "ray":
        request.getfixturevalue("ray_session")
    data = tmp_path / "data"
    (tmp_path / "secret.bin").write_bytes(SECRET)
    with (
        ServerThread(data=data, executor=executor, max_concurrent=2) as server,
        httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http,
    ):
        own = ("meta.json", "events.jsonl", "model.onnx")  # the build directory's own files
        uploads = [_model_naming(location).SerializeToString() for location in (*own, str(tmp_path / "secret.bin"))]
        uploads += [_model_naming("../../../secret.bin").SerializeToString(), _hidden(_model_naming("meta.json"))]
        for upload in uploads:
            reply = http.post("/builds", content=upload, params={"name": "m"})
            assert reply.status_code == 201, reply.text
            build_id = reply.json()["id"]
            deadline = time.monotonic() + 120
            while (info := http.get(f"/builds/{build_id}").json())["status"] not in ("failed", "succeeded"):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            text = json.dumps(info)
            assert info["status"] == "failed" and "external data" in text and "embed the weights" in text, text
            assert str(data) not in text and "/tmp" not in text.replace(str(tmp_path / "secret.bin"), ""), text


# -- nothing untrusted reaches a terminal raw ------------------------------------------------------------------

EVIL = "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31m\r\x9b31m\u202eevil"


def _evil_recording(path: Path) -> Path:
    from trt_widget.runners import gpu_shaped_events

    events = list(gpu_shaped_events(measurements=2, threads=1, seed=1))
    events[0]["model"] = f"model {EVIL}"
    for event in events:
        if event["event"] == "phase_start" and event["depth"] == 0:
            event["name"] = f"phase {EVIL}"
        if event["event"] == "build_end":
            event.update(status="failed", detail=f"detail {EVIL}", error=f"error {EVIL}")
    events.insert(2, {"event": "log", "severity": "WARNING", "message": f"log {EVIL}\nforged line", "t": 0.3})
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_escape_controls_shows_every_control_character_as_an_escape() -> None:
    from trt_widget._format import escape_controls

    shown = escape_controls(EVIL + "\udcff\x00\x7f")
    assert shown.isprintable() and "\\x1b]0;PWNED-TITLE\\x07" in shown and "\\u202e" in shown
    assert escape_controls("Measuring tactic time ×3 é") == "Measuring tactic time ×3 é"


def test_view_prints_names_logs_and_details_of_a_recording_escaped(tmp_path: Path) -> None:
    recording = _evil_recording(tmp_path / "esc.jsonl")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(recording), "--plain"],
        capture_output=True,
        timeout=120,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    out = done.stdout + done.stderr
    assert b"\x1b" not in out and b"\x07" not in out and b"\r" not in out and "\u202e".encode() not in out, out
    text = out.decode()
    assert "phase \\x1b]0;PWNED-TITLE\\x07" in text and "log \\x1b]0;PWNED" in text and "\\x0aforged line" in text
    assert "model \\x1b]0;PWNED" in text


def test_the_rich_tree_and_summary_show_names_escaped_and_take_no_markup(tmp_path: Path) -> None:
    import io

    from trt_widget._terminal import TerminalView

    recording = _evil_recording(tmp_path / "esc.jsonl")
    text = recording.read_text().replace("phase \\u001b", "[bold red]phase[/] \\u001b", 1)
    recording.write_text(text)
    stream = io.StringIO()
    view = TerminalView(Build.from_events(recording), stream, style="rich")
    view.build.start().wait(60)
    assert view.join(30)
    out = stream.getvalue()
    for raw in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in out, (raw, out)
    assert "PWNED-TITLE" in out and "[bold red]phase[/]" in out  # shown, as text


def test_the_matrix_table_and_lines_show_labels_escaped() -> None:
    import io

    from rich.console import Console

    from trt_widget.matrix import BuildMatrix
    from trt_widget.matrix._cli import MatrixView

    matrix = BuildMatrix({f"[bold]m[/] {EVIL}": SMALL}, variants={f"v {EVIL}": {}})
    lines = io.StringIO()
    view = MatrixView(matrix, lines, plain=True)
    view.update()
    drawn = io.StringIO()
    Console(file=drawn, force_terminal=True, width=300).print(view._table())
    for out in (lines.getvalue(), drawn.getvalue()):
        assert "PWNED-TITLE" in out
        for raw in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "\r"):
            assert raw not in out, (raw, out)
    assert "[bold]m[/]" in drawn.getvalue()


# -- serve keeps its promises under faults ---------------------------------------------------------------------


@contextlib.contextmanager
def _small_disk(path: Path, size: str = "2m") -> Any:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


needs_mount = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root to mount")


def _fill_disk(directory: Path) -> None:
    with open(directory / "filler", "wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()


def test_a_stalled_upload_gets_408_and_frees_its_slot(tmp_path: Path) -> None:
    import socket

    import httpx

    from trt_widget.serve import ServerThread

    with ServerThread(data=tmp_path / "data", max_concurrent=2, body_timeout=1.0) as server:
        port = int(server.url.rsplit(":", 1)[1])
        stalled = []
        for _ in range(2):  # announce 1 MB, send 1 KB, then nothing
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            head = (
                f"POST /builds HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
                "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n"
            )
            sock.sendall(head.encode() + b"\0" * 1024)
            stalled.append(sock)
        started = time.monotonic()
        for sock in stalled:
            answer = ""
            while "}" not in answer and (chunk := sock.recv(65536)):  # the head, then the JSON body
                answer += chunk.decode(errors="replace")
            assert answer.startswith("HTTP/1.1 408"), answer
            assert "stalled" in answer
            sock.close()
        assert time.monotonic() - started < 10
        auth = {"Authorization": f"Bearer {server.token}"}
        reply = httpx.post(f"{server.url}/builds", content=SMALL, headers=auth, timeout=60)
        assert reply.status_code == 201, reply.text  # the slots are free again
        server.store.stop_running(timeout=60)


def test_serve_takes_a_body_timeout_and_refuses_a_bad_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "serve", "--body-timeout", "0", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "--body-timeout must be more than 0" in done.stderr, done.stderr


def test_malformed_requests_are_400_not_500(tmp_path: Path) -> None:
    import httpx

    from trt_widget.serve import ServerThread

    with (
        ServerThread(data=tmp_path / "data", max_concurrent=2) as server,
        httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http,
    ):
        deep = '{"profiles": ' + "[" * 30_000 + "]" * 30_000 + "}"
        reply = http.post("/builds", files={"model": ("m.onnx", SMALL)}, data={"options": deep})
        assert reply.status_code == 400 and "nest" in reply.json()["error"], reply.text
        reply = http.post("/builds", content=SMALL, params={"options": "[" * 5000 + "]" * 5000})
        assert reply.status_code == 400 and "nest" in reply.json()["error"], reply.text
        reply = http.post("/builds", content=SMALL, params={"options": '{"profiles": {"x": [[[[[[[[[1]]]]]]]]]}}'})
        assert reply.status_code == 400, reply.text
        assert server.store.active == 0
        build_id = http.post("/builds", content=SMALL).json()["id"]
        for bad in ("²".encode("latin-1"), "¹".encode("latin-1"), b"1" * 40, b"-1"):  # headers arrive as latin-1
            reply = http.get(f"/builds/{build_id}/events", headers={"Last-Event-ID": bad})
            assert reply.status_code == 400, (bad, reply.text)
        server.store.stop_running(timeout=60)


@needs_mount
def test_an_upload_onto_a_full_data_disk_is_refused_without_server_paths(tmp_path: Path) -> None:
    import httpx

    from trt_widget.serve import ServerThread

    with (
        _small_disk(tmp_path / "data") as data,
        ServerThread(data=data, max_concurrent=2, max_upload=8 << 20) as server,
    ):
        auth = {"Authorization": f"Bearer {server.token}"}
        reply = httpx.post(f"{server.url}/builds", content=os.urandom(3 << 20), headers=auth, timeout=60)
        assert reply.status_code == 507, reply.text
        assert "disk is full" in reply.json()["error"] and str(data) not in reply.text
        assert server.store.active == 0 and not list((data / "builds").iterdir())  # nothing left behind


@needs_mount
def test_a_full_data_disk_fails_the_build_loudly_and_ends_every_stream(tmp_path: Path) -> None:
    import httpx

    from trt_widget.serve import RemoteBuild, ServerThread
    from trt_widget.serve._client import sse_messages

    model = models.to_bytes(models.deep_residual(60))
    with (
        _small_disk(tmp_path / "data", "4m") as data,
        ServerThread(data=data, max_concurrent=2) as server,
        httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http,
    ):
        remote = RemoteBuild(server.url, server.token, model, timeout=10).start()
        while remote.remote_id is None and not remote.done():
            time.sleep(0.01)
        _fill_disk(data)
        assert remote.wait(60) == "failed", remote.status_detail
        assert "data disk is full" in remote.status_detail
        build_id = remote.remote_id
        with http.stream("GET", f"/builds/{build_id}/events") as stream:
            got = [json.loads(data) for _, _, data in sse_messages(stream.iter_lines())]
        assert got[0]["event"] == "build_start" and got[-1]["event"] == "build_end", got[-1]
        assert got[-1]["status"] == "failed" and "data disk is full" in got[-1]["error"]
        info = http.get(f"/builds/{build_id}").json()
        assert info["status"] == "failed" and info["events"] == len(got), info
        assert str(data) not in json.dumps(info)
        (data / "filler").unlink()


# -- a RemoteBuild never waits forever, whatever the server does ------------------------------------------------

FAKE_ID = "A" * 22


class _Hostile:
    """A fake build server on 127.0.0.1 that misbehaves in one way (``mode``); it serves ``follow()`` only."""

    def __init__(self, mode: str) -> None:
        import http.server

        self.mode = mode
        self.cancels = 0
        hostile = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # cancel: acknowledged, then nothing happens
                hostile.cancels += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = b'{"status": "cancelling"}'
                self.send_response(202)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                with contextlib.suppress(OSError):
                    hostile.serve(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, handler: Any) -> None:
        start = {"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}
        end = {"event": "build_end", "status": "succeeded", "detail": "", "elapsed_s": 1.0, "engine_bytes": 1,
               "output": None, "error": None, "t": 1.0}  # fmt: skip
        if handler.path.endswith("/engine") and self.mode == "slow engine":
            handler.send_response(200)
            handler.send_header("Content-Length", "1000000")
            handler.end_headers()  # the announced size, a byte at a time
            for _ in range(1_000_000):
                handler.wfile.write(b"\0")
                handler.wfile.flush()
                time.sleep(0.1)
            return
        if handler.path.endswith("/engine"):
            handler.send_response(200)
            handler.send_header("Content-Type", "application/octet-stream")
            handler.end_headers()  # no length: 64 MB and counting, after build_end said 1 byte
            for _ in range(1024):
                handler.wfile.write(b"\0" * 65536)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")  # the body ends when the connection does
        handler.close_connection = True
        handler.end_headers()
        out = handler.wfile

        def send(event: Any, ident: int = 1) -> None:
            text = event if isinstance(event, str) else json.dumps(event)
            out.write(f"id: {ident}\ndata: {text}\n\n".encode())
            out.flush()

        send(start)
        if self.mode == "pings":
            for _ in range(600):
                out.write(b": ping\n\n")
                out.flush()
                time.sleep(0.1)
        elif self.mode == "phases":
            for i in range(10_000_000):
                send({"event": "phase_start", "id": i, "name": "p", "parent": None, "depth": 0, "num_steps": 1,
                      "t": 0.1}, i + 2)  # fmt: skip
        elif self.mode == "huge event":
            out.write(b"id: 2\ndata: " + b"x" * (3 << 20))
            out.flush()
            time.sleep(30)
        elif self.mode == "bad json":
            send("{not json", 2)
        elif self.mode == "big engine":
            send(end, 2)
        elif self.mode == "slow engine":
            send({**end, "engine_bytes": 1_000_000}, 2)
        elif self.mode == "long names":  # 1 MiB names: each fits an event, 200,000 of them would not fit memory
            for i in range(100):
                send({"event": "phase_start", "id": i, "name": "n" * (1 << 19), "parent": None, "depth": 0,
                      "num_steps": 1, "t": 0.1}, i + 2)  # fmt: skip
        elif self.mode == "silent":  # not even a ping
            time.sleep(30)
        # "closes": the stream ends after build_start, every time


def _follow(url: str, **kwargs: Any) -> Any:
    from trt_widget.serve import RemoteBuild

    return RemoteBuild.follow(url, "token", FAKE_ID, **kwargs).start()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("closes", "no new event for 2 s"),
        ("silent", "no new event for 2 s"),
        ("huge event", "an event larger than 1,048,576 bytes"),
        ("bad json", "not a JSON object: '{not json'"),
        ("big engine", "more engine bytes than build_end announced (1)"),
        ("phases", "more than 2,000 phases"),
        ("long names", "a phase name of 524,288 characters (at most 4096)"),
    ],
)
def test_a_hostile_server_fails_the_remote_build_with_a_clear_error(
    mode: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trt_widget.serve import _client

    monkeypatch.setattr(_client, "MAX_PHASES", 2_000)
    monkeypatch.setattr(_client, "SILENT_S", 1.0)
    hostile = _Hostile(mode)
    build = _follow(hostile.url, timeout=2)
    assert build.wait(30) == "failed", build.status_detail
    assert said in str(build.error), build.error
    assert "unexpected" not in str(build.error)
    assert len(build.timings()) <= 2_000


@pytest.mark.parametrize("mode", ["pings", "phases", "no answer", "slow engine"])
def test_stop_ends_a_remote_build_within_a_second_whatever_the_server_does(mode: str) -> None:
    import socket

    if mode == "no answer":  # a stopped server: the kernel accepts connections, nobody answers
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    else:
        url = _Hostile(mode).url
    build = _follow(url, timeout=60)
    time.sleep(0.5)
    assert build.status in ("running", "queued"), build.status_detail
    assert build.stop()
    assert build.wait(1.0) == "cancelled", build.status_detail
    assert "had not confirmed the cancel" in build.status_detail
    if mode == "no answer":
        silent.close()


# -- extras never hang or damage ------------------------------------------------------------------------------


def _unblocked(fifo: Path, construct: Callable[[], Any], what: str) -> Any:
    """``construct()``'s result or exception, failing the test if it blocks on ``fifo`` (then released)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(construct())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # it blocked in open(): release it before failing
        with open(fifo, "rb"):
            thread.join(10)
        pytest.fail(f"Build({what}) blocked")
    return outcome[0]


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


def test_a_history_store_on_a_fifo_turns_history_off_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "history.fifo"
    os.mkfifo(fifo)

    def construct() -> Any:
        with pytest.warns(RuntimeWarning, match="not a regular file"):
            return Build(SMALL, history=str(fifo), isolation="thread")

    build = _unblocked(fifo, construct, "history=<a FIFO>")
    assert isinstance(build, Build) and build.history is None and build.start().wait(120) == "succeeded"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # left as it was


def test_a_history_store_naming_the_model_is_refused_and_the_model_kept(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    for history in (str(model), f"{tmp_path}/./m.onnx", model):
        with pytest.raises(ValueError, match=r"history=.* is the model file itself"):
            Build(str(model), history=history, isolation="thread")
    assert model.read_bytes() == SMALL and sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_a_tilde_path_naming_no_user_is_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    for args in (("~nosuchuser9/m.onnx",), (str(model),)):
        options = {"output": "~nosuchuser9/m.engine"} if args[0] == str(model) else {}
        with pytest.raises(ValueError, match="cannot expand '~nosuchuser9': no such user"):
            Build(*args, history=False, isolation="thread", **options)
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


def test_a_history_store_locked_by_another_process_costs_a_stop_at_most_a_second(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    Build(SMALL, history=str(store), isolation="thread").start().wait(120)  # the store exists
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sqlite3, sys, time
            conn = sqlite3.connect({str(store)!r}, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.warns(RuntimeWarning, match="locked by another process"):
            build = Build(models.deep_residual(1000), history=str(store), force_after=0.1).start()
            while build.model.innermost_running() is None:
                time.sleep(0.05)
            asked = time.monotonic()
            assert build.stop()
            assert build.wait(10) == "cancelled"
            stopped_s = time.monotonic() - asked
            assert build.history.ready.wait(10)  # the look-up gave up on the locked store, with the warning
        assert stopped_s <= 1.0, stopped_s
    finally:
        holder.kill()
        holder.wait()


# -- recordings are untrusted input ---------------------------------------------------------------------------

_START = {"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}
_PHASE = {"event": "phase_start", "id": 0, "name": "p", "parent": None, "depth": 0, "num_steps": 2, "t": 0.1}


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (
            {k: v for k, v in _PHASE.items() if k != "name"},
            "line 2: field 'name' of a phase_start event must be a string",
        ),
        ({**_PHASE, "name": {"a": 1}}, "line 2: field 'name' of a phase_start event must be a string, got dict"),
        ({**_PHASE, "num_steps": "3"}, "line 2: field 'num_steps' of a phase_start event must be an integer"),
        ({"event": "step", "id": 0, "name": "p", "step": "x", "t": 0.2}, "line 2: field 'step' of a step event"),
        ({"event": "log", "severity": [], "message": "m", "t": 0.2}, "line 2: field 'severity' of a log event"),
        ({"event": "build_end", "status": "won", "t": 1.0}, "line 2: build_end status must be one of"),
        ({**_PHASE, "t": float("nan")}, "line 2: field 't' must be a finite time"),
    ],
)
def test_a_bad_field_names_its_line_and_field(event: dict[str, Any], said: str) -> None:
    from trt_widget.runners import RecordingError

    with pytest.raises(RecordingError, match=said.replace("(", r"\(")):
        Build.from_events([json.dumps(_START), json.dumps(event)])


def test_view_says_one_line_for_any_file_that_is_not_a_recording(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps(_START) + "\n" + json.dumps({"event": "step", "id": 0, "t": 0.2}) + "\n")
    utf = tmp_path / "latin1.jsonl"
    utf.write_bytes(json.dumps(_START).encode() + b"\n" + b'{"event": "log", "message": "\xe9", "t": 1}\n')
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(SMALL)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    digits = tmp_path / "digits.jsonl"
    digits.write_text(json.dumps(_START) + "\n" + '{"event": "step", "id": ' + "9" * 5000 + ', "t": 1}\n')
    for path, said in [
        (digits, "line 2: not a usable JSON value"),
        (missing, "line 2: field 'name' of a step event must be a string"),
        (utf, "line 2: not UTF-8 text"),
        (onnx_file, "is not a recording"),
        (deep, "line 1: JSON nested too deeply"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", "view", str(path), "--plain"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("trt-widget: error: ") and said in done.stderr, done.stderr


def test_a_huge_line_or_too_many_events_are_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    from trt_widget.runners import RecordingError, _replay

    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as handle:
        handle.write(json.dumps(_START).encode() + b"\n" + b'{"event": "log", "message": "')
        for _ in range(64):
            handle.write(b"x" * (1 << 20))  # 64 MB, one line
    tracemalloc.start()
    try:
        with pytest.raises(RecordingError, match="line 2: longer than 1,048,576 bytes"):
            Build.from_events(huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak
    monkeypatch.setattr(_replay, "MAX_EVENTS", 1000)
    many = [json.dumps(_START)] + [json.dumps({"event": "log", "message": "m", "t": 0.1})] * 1000
    with pytest.raises(RecordingError, match="more than 1,000 events"):
        Build.from_events(many)
    nested = [json.dumps(_START)] + [
        json.dumps({**_PHASE, "id": i, "parent": i - 1 if i else None, "t": 0.1}) for i in range(300)
    ]
    with pytest.raises(RecordingError, match="line 259: phases nest more than 256 deep"):
        Build.from_events(nested)


def test_phases_nested_by_name_rather_than_by_id_are_bounded_too(tmp_path: Path) -> None:
    """Each phase names a finished parent id, so the loader sees depth 1; the phase model resolves the parent by
    name (the newest running 'A') and would nest 3,000 deep, and every renderer recurse as deep."""
    events = [_START, {**_PHASE, "id": 0, "name": "A", "parent": None, "t": 0.0}]
    events.append({"event": "phase_finish", "id": 0, "name": "A", "t": 0.0})
    events += [{**_PHASE, "id": i, "name": "A", "parent": 0, "t": i / 1000} for i in range(1, 3000)]
    events.append({"event": "build_end", "status": "succeeded", "t": 3.0})
    path = tmp_path / "by-name.jsonl"
    path.write_text("\n".join(map(json.dumps, events)) + "\n")
    build = Build.from_events(path).start()
    assert build.wait(60) == "failed" and "line 261: phases nest more than 256 deep" in str(build.error)
    build.to_html(tmp_path / "r.html")  # what was replayed until then renders
    build.to_trace(tmp_path / "t.json")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "view", str(path), "--plain", "--trace", str(tmp_path / "t2.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("phases nest more than 256 deep ('A' under 'A')")


def test_stop_ends_a_remote_build_within_a_second_while_the_server_takes_no_upload() -> None:
    import socket

    from trt_widget.serve import RemoteBuild

    silent = socket.socket()  # the kernel accepts the connection; nobody answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        build = RemoteBuild(f"http://127.0.0.1:{silent.getsockname()[1]}", "token", SMALL, timeout=60).start()
        time.sleep(0.5)
        assert build.status in ("running", "queued"), build.status_detail
        assert build.stop()
        assert build.wait(1.0) == "cancelled", build.status_detail
        assert "the upload" in build.status_detail and "had not finished" in build.status_detail
    finally:
        silent.close()


def test_serve_shows_its_data_directory_to_no_client(tmp_path: Path) -> None:
    import httpx

    from trt_widget.serve import ServerThread

    with (
        ServerThread(data=tmp_path / "data", max_concurrent=2) as server,
        httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http,
    ):
        build_id = http.post("/builds", content=SMALL).json()["id"]
        record = server.store.get(build_id)
        assert record is not None and record.build is not None
        record.build.logger.log(2, f"TensorRT read {server.store.data}/builds/{build_id}/model.onnx")  # as a log may
        record.build.wait(120)
        with http.stream("GET", f"/builds/{build_id}/events") as reply:
            text = "".join(reply.iter_lines())
        assert str(tmp_path) not in text and f"<data>/builds/{build_id}/model.onnx" in text
        server.store.stop_running(timeout=60)


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
