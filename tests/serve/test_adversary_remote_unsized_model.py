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

from trt_widget import Build, BuildError
from trt_widget.serve import ServerThread
from trt_widget.serve._client import RemoteBuild

STATUS = "/proc/self/status"  # a regular file whose size says 0; about 1.5 KB of text to read


@pytest.mark.skipif(not os.path.exists(STATUS), reason="needs Linux /proc")
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


def test_a_remote_build_of_a_model_that_is_no_regular_file_says_what_a_local_build_says(tmp_path: Path) -> None:
    """The upload reads the model by the local build's rules: a FIFO (never waited on) or a folder is refused in
    the same one line, before anything is sent."""
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    with ServerThread(data=tmp_path / "data", max_upload=4 << 20, max_concurrent=1) as server:
        for model in (fifo, tmp_path):
            remote = RemoteBuild(server.url, server.token, str(model))
            local = Build(str(model), output=str(tmp_path / "x.engine"))
            for build in (remote, local):
                with contextlib.suppress(BuildError):
                    build.start()
                    build.wait()
                assert build.status == "failed", build.status
            assert str(remote.error) == str(local.error), (str(remote.error), str(local.error))
            assert str(remote.error).startswith("not an ONNX file ("), str(remote.error)
