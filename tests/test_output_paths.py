"""Every file a build writes (the engine, events, the CLI's --report / --trace) is checked before the build
starts: a bad path is refused at once with its reason, not after the build's time was spent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.onnx"
    path.write_bytes(to_bytes(deep_residual(2)))
    return path


def _bad_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("x")
    return {
        "missing folder": (tmp_path / "no" / "such" / "out.bin", "does not exist"),
        "a folder": (tmp_path / "a_dir", "directory"),
        "under a file": (tmp_path / "a_file" / "out.bin", "not a folder"),
    }


@pytest.mark.parametrize("case", ["missing folder", "a folder", "under a file"])
def test_a_bad_output_path_is_refused_when_the_build_is_created(tmp_path: Path, case: str) -> None:
    path, reason = _bad_paths(tmp_path)[case]
    with pytest.raises(OSError, match=reason) as info:
        Build(deep_residual(2), output=path, isolation="thread")
    assert "output" in str(info.value) and str(path.parent) in str(info.value)


def test_an_unwritable_output_folder_is_refused_when_the_build_is_created(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    code = (
        "from trt_widget import Build; from trt_widget.models import deep_residual\n"
        f"try: Build(deep_residual(2), output={str(locked / 'm.engine')!r}, isolation='thread')\n"
        "except OSError as exc: print(type(exc).__name__, exc)\n"
    )
    caps = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]  # root without its bypass
    out = subprocess.run([*caps, sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == f"PermissionError output=: the folder {locked} is not writable", out


def test_a_bad_events_path_is_refused_when_the_build_is_created(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="does not exist"):
        Build(deep_residual(2), events=tmp_path / "no" / "events.jsonl", isolation="thread")


def _cli(*args: Any) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "TRT_WIDGET_HISTORY": "off"},
    )
    return proc, time.monotonic() - started


@pytest.mark.parametrize("flag", ["--report", "--trace", "-o"])
def test_the_cli_refuses_a_bad_output_path_before_the_build(model_file: Path, tmp_path: Path, flag: str) -> None:
    bad = tmp_path / "missing" / "x.out"
    proc, _ = _cli(model_file, flag, bad, "--plain")
    assert proc.returncode == 1, proc
    (line,) = proc.stderr.strip().splitlines()  # one line, naming the folder and why
    assert line.startswith("trt-widget: error: ") and "does not exist" in line and str(bad.parent) in line, line
    assert "Building engine" not in proc.stdout  # no build ran
    assert not (tmp_path / "small.engine").exists()


def test_a_watched_build_writes_nothing_over_an_onnx_model(tmp_path: Path) -> None:
    """Issue 35 (re-run): a watched build's source is the network the user's code made, so it did not know its model
    file: ``save``, ``to_html`` and ``to_trace`` onto it, and ``watch(events=...)`` naming it, overwrote the model."""
    import tensorrt_rtx_bindings as trt

    import trt_widget
    from trt_widget import models

    model = tmp_path / "c.onnx"
    model.write_bytes(models.to_bytes(models.deep_residual(2)))
    before = model.read_bytes()
    with pytest.raises(ValueError, match=r"is an ONNX model file: trt_widget writes nothing over a model"):
        trt_widget.watch(events=model)
    with trt_widget.watch(keep_engines=True) as watched:
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        assert trt.OnnxParser(network, logger).parse_from_file(str(model))
        assert builder.build_serialized_network(network, builder.create_builder_config()) is not None
    (build,) = watched.builds
    assert build.wait(60) == "succeeded"
    for method in ("save", "to_html", "to_trace"):
        with pytest.raises(ValueError, match="is an ONNX model file"):
            getattr(build, method)(model)
    assert model.read_bytes() == before
    build.save(tmp_path / "c.engine")  # any other path is written
    assert (tmp_path / "c.engine").stat().st_size > 0
