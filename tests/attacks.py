"""The attack list's shared inputs (tests/**/test_adversarial_*.py): a small model, models that name external
data, hostile text for terminals, a guard against an open() that blocks on a FIFO, and another process holding a
lock.

A plain module, not a conftest.py: pytest imports every folder's conftest.py as ``conftest``, so one cannot be
imported from another folder's tests; tests/ is on ``sys.path`` (rootdir-relative imports), as e2e's ``harness``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from trt_widget import models

SMALL = models.deep_residual(2).SerializeToString()


SECRET = b"SECRET!!" * 8  # 64 bytes: exactly the 16 floats of the tensor below, so TensorRT would accept them


def _model_naming(location: str) -> Any:
    """y = x + w, with w (16 floats) stored as external data at ``location``."""
    return external_data_model(location=location)


def external_data_model(**external_data: str) -> Any:
    """y = x + w, with w (16 floats) stored as external data said by ``external_data`` (location, offset, ...)."""
    from onnx import TensorProto, helper

    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 16], data_location=TensorProto.EXTERNAL)
    for key, value in external_data.items():
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
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

    data: bytes = HIDING_GROUP + model.SerializeToString()
    assert onnx.load_from_string(data).graph.initializer[0].external_data == model.graph.initializer[0].external_data
    return data


def _refused(build: Any, *fragments: str) -> None:
    assert build.wait(120) == "failed", build.status_detail
    assert SECRET not in (build.engine or b"")
    for fragment in ("external data", *fragments):
        assert fragment in str(build.error), build.error


EVIL = "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31m\r\x9b31m\u202eevil"


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


@contextmanager
def held_by_another_process(script: str, *args: str, ready: str) -> Iterator[None]:
    """Another Python process runs ``script`` (with ``args``) until the block ends: it takes a lock, then prints
    ``ready``, which is awaited. It is killed after, and its pipes closed now, not by the garbage collector."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == f"{ready}\n"
        yield
    finally:
        holder.kill()
        holder.wait(30)
        for pipe in (holder.stdin, holder.stdout):  # (a ResourceWarning otherwise)
            if pipe is not None:
                pipe.close()


def build_command(model: Path, engine: Path, history: str = "off") -> subprocess.CompletedProcess[str]:
    """``trt-widget build MODEL -o ENGINE --plain`` in a child, its output captured; ``history`` is the store."""
    return subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(model), "-o", str(engine), "--plain"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRT_WIDGET_HISTORY": history},
    )


def built_engine(folder: Path) -> Path:
    """``folder/model.engine``, which ``trt-widget build`` wrote from a small model, its manifest beside it."""
    (folder / "model.onnx").write_bytes(models.to_bytes(models.deep_residual(2)))
    built = build_command(folder / "model.onnx", folder / "model.engine")
    assert built.returncode == 0, built.stdout + built.stderr
    return folder / "model.engine"


HUGE = 4 << 40  # 4 TiB, sparse: no disk used; hours of hashing or copying at any speed


def sparse_file(path: Path, size: int = HUGE) -> Path:
    """``path``, a sparse file of ``size`` bytes (no disk used); the test is skipped on a file system without sparse
    files this large."""
    try:
        with open(path, "wb") as handle:
            handle.truncate(size)
    except OSError as exc:
        pytest.skip(f"no sparse {size / (1 << 40):g} TiB file here: {exc}")
    return path


def huge_file_a_manifest_names(folder: Path, name: str) -> Path:
    """``folder/NAME``, a sparse :data:`HUGE` file beside ``NAME.manifest.json``: the manifest of a real RTX build of
    a small model (an engine of another size), renamed to name it. Its size alone says it is not the engine."""
    engine = built_engine(folder)
    manifest = json.loads((folder / "model.engine.manifest.json").read_text())
    assert manifest["engine"]["file"] == engine.name and manifest["engine"]["size"] < HUGE
    manifest["engine"]["file"] = name
    (folder / f"{name}.manifest.json").write_text(json.dumps(manifest))
    return sparse_file(folder / name)
