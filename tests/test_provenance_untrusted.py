"""Files that ``check_engine`` and ``reuse=True`` read without being named by the user — the manifest beside an
engine, ``file-hashes.json`` in the reuse folder — are untrusted: another user can plant them in a shared folder.
A FIFO there never blocks the reader (it waited forever for a writer), and a JSON text Python cannot turn into
numbers (an integer over 4,300 digits raises ValueError, not JSONDecodeError) is not a manifest or a hash cache:
it is ignored with a reason, never a traceback. Real RTX builds and processes; ``nobody`` for the planted files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import HashCache, check_engine, manifest_path
from trt_widget.provenance._hashes import HASHES_FILE

SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV or "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
needs_nobody = pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv")
HUGE_NUMBER = b'{"format": "trt_widget.manifest", "version": 1, "n": ' + b"9" * 5000 + b"}"
CLI = [sys.executable, "-m", "trt_widget"]


@pytest.fixture(scope="module")
def engine_bytes() -> bytes:
    build = Build(to_bytes(deep_residual(2)), history=False, resources=False).start()
    assert build.wait() == "succeeded", build.status_detail
    assert build.engine
    return bytes(build.engine)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky world-writable folder as ``/tmp`` is, that ``nobody`` can reach (pytest's tmp_path is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="trt-widget-shared-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(*command: str) -> None:
    subprocess.run([*AS_NOBODY, *command], check=True, timeout=60)


@needs_nobody
def test_check_does_not_wait_on_a_fifo_another_user_planted_as_the_manifest(shared: Path, engine_bytes: bytes) -> None:
    engine = shared / "e.engine"
    engine.write_bytes(engine_bytes)
    _as_nobody("mkfifo", str(manifest_path(engine)))
    done = subprocess.run([*CLI, "check", str(engine)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert "not a regular file" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert check_engine(engine).loads is None


def test_check_says_a_manifest_with_a_number_python_cannot_read_is_not_one(tmp_path: Path, engine_bytes: bytes) -> None:
    engine = tmp_path / "e.engine"
    engine.write_bytes(engine_bytes)
    manifest_path(engine).write_bytes(HUGE_NUMBER)
    found = check_engine(engine)  # raised ValueError
    assert found.loads is None and "not a trt_widget manifest" in found.reason, found.reason
    done = subprocess.run([*CLI, "check", str(engine)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "not a trt_widget manifest" in done.stdout + done.stderr, done


@needs_nobody
def test_a_reuse_is_not_held_by_a_fifo_another_user_planted_as_the_hash_cache(shared: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    _as_nobody("mkfifo", str(shared / HASHES_FILE))
    command = [*CLI, "build", str(model), "-o", str(tmp_path / "m.engine"), "--reuse", "--reuse-dir", str(shared)]
    done = subprocess.run([*command, "--plain"], capture_output=True, text=True, timeout=300)  # it waited forever
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "m.engine").stat().st_size > 0


def test_a_hash_cache_with_a_number_python_cannot_read_is_ignored(tmp_path: Path) -> None:
    (tmp_path / HASHES_FILE).write_bytes(b'{"files": {}, "n": ' + b"9" * 5000 + b"}")
    cache = HashCache(tmp_path)  # raised ValueError: the build was refused
    assert "not JSON" in cache.ignored, cache.ignored


def test_a_reuse_builds_anew_beside_a_manifest_with_a_number_python_cannot_read(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    engine = tmp_path / "m.engine"
    engine.write_bytes(b"not an engine")
    manifest_path(engine).write_bytes(HUGE_NUMBER)
    build = Build(str(model), output=str(engine), reuse=True, reuse_dir=str(tmp_path / "cache"), history=False)
    assert build.start().wait() == "succeeded", build.status_detail  # raised ValueError in the build
    assert engine.read_bytes()[:4] == b"vtrt"
