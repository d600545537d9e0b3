"""``trt-widget bundle --include-model`` with a large model: the zip is streamed to its file, the model and its
external data read in pieces (a 2 GB model cost several GB: each file read whole, the zip built in memory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

from attacks import external_data_model

BIG = 400 << 20  # bytes of external data (sparse: no disk, but every byte is read)
MEASURE = textwrap.dedent(
    """
    import resource, sys
    from trt_widget.__main__ import main
    code = main(["bundle", sys.argv[1], "--include-model", "-o", sys.argv[2]])
    print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """
)


def _model_with_external_data(folder: Path, size: int) -> Path:
    """y = x + w, w (16 floats) at the start of ``weights.bin``, a file of ``size`` bytes."""
    folder.mkdir()
    model = folder / "m.onnx"
    model.write_bytes(external_data_model(location="weights.bin", offset="0", length="64").SerializeToString())
    with open(folder / "weights.bin", "wb") as handle:
        handle.write(b"\x00\x00\x80\x3f" * 16)  # sixteen 1.0s
        handle.truncate(size)  # the rest a hole: no disk, read as zeros
    return model


def _peak_kib(model: Path, bundle: Path) -> int:
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(model), str(bundle)], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    code, peak = done.stdout.split()[-2:]
    assert code == "0", done.stderr[-2000:]
    return int(peak)


def test_a_large_model_is_bundled_in_bounded_memory(tmp_path: Path) -> None:
    small = _peak_kib(_model_with_external_data(tmp_path / "small", 64), tmp_path / "small.zip")
    large = _peak_kib(_model_with_external_data(tmp_path / "large", BIG), tmp_path / "large.zip")
    assert (large - small) * 1024 < BIG // 4, (small, large)  # a generous bound: before, over BIG more
    with zipfile.ZipFile(tmp_path / "large.zip") as archive:
        info = archive.getinfo("model/weights.bin")
        assert info.file_size == BIG
        with archive.open(info) as member:
            assert member.read(64) == b"\x00\x00\x80\x3f" * 16
        assert json.loads(archive.read("build.json"))["status"] == "succeeded"
        assert "model/weights.bin" in archive.read("README.txt").decode() and archive.testzip() is None
