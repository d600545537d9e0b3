"""Attacks through Ray: a Ray task gets no directory, so a model naming external data is refused at the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attacks import SECRET, _hidden, _model_naming, _refused

from trt_widget import Build


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
