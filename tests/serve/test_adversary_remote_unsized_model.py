"""Fourteenth adversarial re-run (issue 35): ``RemoteRunner`` uploads a model path through ``open_model`` (a regular
file of at most 2 GiB by ``fstat``) as a stream whose Content-Length is that ``fstat`` size. A file whose size the
file system does not tell (a ``/proc`` file: size 0, bytes to read; or a model still being written while it is
uploaded) sends more than it declared: the remote build ends "unexpected LocalProtocolError: Too much data for
declared Content-Length" with a Python traceback as its error, where the same path built locally says in one line
that it is not an ONNX model. Real uvicorn server on 127.0.0.1, real client."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from trt_widget import BuildError
from trt_widget.serve import ServerThread
from trt_widget.serve._client import RemoteBuild

STATUS = "/proc/self/status"  # a regular file whose size says 0; about 1.5 KB of text to read


@pytest.mark.skipif(not os.path.exists(STATUS), reason="needs Linux /proc")
@pytest.mark.xfail(
    strict=True,
    reason="issue 35, 14th re-run R1: a remote build of a model whose size fstat does not tell ends in a traceback",
)
def test_a_remote_build_of_an_unsized_model_fails_in_words(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.symlink_to(STATUS)
    with ServerThread(data=tmp_path / "data", max_upload=4 << 20, max_concurrent=1) as server:
        build = RemoteBuild(server.url, server.token, str(model))
        with contextlib.suppress(BuildError):
            build.start()
            build.wait()
    assert build.status == "failed", build.status
    error = str(build.error)
    assert "Traceback" not in error and "unexpected" not in error, error[:2000]
