"""``serve --data``: the service never changes the mode of a folder it did not create (issue 35, defect 4: with
``--data /tmp`` it made /tmp 0700); one it creates is private (0700)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import as_nobody


def serve_command(data: Path, tmp_path: Path) -> list[str]:
    """``trt-widget serve --data data`` on a free port, with a token file of its own in ``tmp_path``."""
    token = tmp_path / "token"
    token.write_text("a-long-enough-test-token-0123456789\n")
    token.chmod(0o600)
    return [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(data), "--token-file", str(token)]


def serve_once(data: Path, tmp_path: Path, env: dict[str, str] | None = None) -> None:
    """Start ``trt-widget serve --data data`` until it listens, then end it."""
    command = [*serve_command(data, tmp_path), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert process.stdout is not None
        while (line := process.stdout.readline()).startswith("trt-widget serve: warning: "):
            pass
        assert line.startswith("trt-widget serve: http://127.0.0.1:"), line
    finally:
        process.kill()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize("mode", [0o755, 0o1777])
def test_an_existing_data_folder_keeps_its_mode(tmp_path: Path, mode: int) -> None:
    data = tmp_path / "shared"
    data.mkdir()
    data.chmod(mode)
    serve_once(data, tmp_path)
    assert stat.S_IMODE(data.stat().st_mode) == mode
    assert stat.S_IMODE((data / "builds").stat().st_mode) == 0o700  # what the service made is private


def test_a_data_folder_the_service_creates_is_private(tmp_path: Path) -> None:
    data = tmp_path / "new" / "data"
    serve_once(data, tmp_path)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


def test_a_builds_folder_another_user_made_in_a_shared_data_folder_is_refused(shared: Path, tmp_path: Path) -> None:
    """``--data /tmp``: another user could make ``/tmp/builds`` first, to read the uploads or plant links there."""
    as_nobody("mkdir", "-m", "0777", str(shared / "builds"), timeout=30)
    done = subprocess.run(serve_command(shared, tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "owned by another user" in done.stderr and "choose another --data" in done.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777 and os.listdir(shared / "builds") == []


@pytest.mark.parametrize("where", ["data", "parent"])
def test_a_data_path_through_another_users_link_is_refused_at_start(shared: Path, tmp_path: Path, where: str) -> None:
    """``--data /tmp/x`` (or ``/tmp/x/data``) where ``nobody`` made ``/tmp/x`` a link to a folder of ours: that
    user could swap the link later and make builds fail; the service refuses it at start, as writes do."""
    ours = tmp_path / "ours"
    (ours / "data").mkdir(parents=True)
    as_nobody("ln", "-s", str(ours), str(shared / "x"), timeout=30)
    data = shared / "x" if where == "data" else shared / "x" / "data"
    process = subprocess.Popen(
        serve_command(data, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the address when it starts (it must not): then it is ended
        assert "http://" not in first, "the service started"
        output = first + process.stdout.read()
        assert process.wait(60) == 2 and "Traceback" not in output, output
        assert f"{shared / 'x'} is a symbolic link that another user" in output, output
        assert "--data" in output
        assert not (ours / "builds").exists() and not (ours / "data" / "builds").exists()
    finally:
        process.kill()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


def test_a_data_folder_another_user_owns_is_refused(shared: Path, tmp_path: Path) -> None:
    """``--data /tmp/x`` that ``nobody`` made first (0777): the service's own ``builds`` in it is private, but the
    folder's owner may rename it away and put a ``builds`` of theirs in its place while the service runs."""
    as_nobody("mkdir", "-m", "0777", str(shared / "x"), timeout=30)
    done = subprocess.run(serve_command(shared / "x", tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "owned by another user" in done.stderr and "choose another --data" in done.stderr
    assert os.listdir(shared / "x") == []


@pytest.mark.parametrize("where", ["inside", "itself"])
def test_a_data_folder_others_may_rename_without_the_sticky_bit_is_refused(tmp_path: Path, where: str) -> None:
    """``--data /srv/x/data`` with ``/srv/x`` 0777 and no sticky bit: ``nobody`` renamed ``data`` aside after the
    start and made their own; the service wrote its builds there, and a build folder ``nobody`` then replaced
    served their ``engine.bin`` as the build's engine (code TensorRT runs). The same with ``--data`` itself 0777."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch.chmod(0o777)  # no sticky bit
    data = scratch / "data" if where == "inside" else scratch
    done = subprocess.run(serve_command(data, tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "no sticky bit" in done.stderr and "choose another --data" in done.stderr, done.stderr
    assert os.listdir(scratch) == []


def refused_at_start(command: list[str], env: dict[str, str]) -> str:
    """Run a server ``command`` that must exit at once; its output (it is ended if it listens instead)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the address when it starts (it must not): then it is ended
        assert "http://" not in first, f"the server started: {first}"
        output = first + process.stdout.read()
        assert process.wait(60) == 2, output
        return output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_temporary_folder_builds_cannot_use_stops_serve_and_mcp_http_at_start(tmp_path: Path) -> None:
    """Adversary-10 F7 addendum: with ``TMPDIR`` 0777 without the sticky bit (a Kubernetes ``emptyDir`` /tmp),
    ``serve`` started without a word and then failed every uploaded build with "unexpected UnsafeTempDir"; so would
    ``mcp --http`` (its builds run in builder processes too). Each now says why in one line at start (exit 2)."""
    scratch = tmp_path / "emptydir"
    scratch.mkdir()
    scratch.chmod(0o777)  # no sticky bit
    env = {**os.environ, "TMPDIR": str(scratch), "TRT_WIDGET_HISTORY": "off"}
    token = tmp_path / "token"
    for command in (
        serve_command(tmp_path / "data", tmp_path),
        [sys.executable, "-m", "trt_widget", "mcp", "--http", "--port", "0", "--token-file", str(token)],
    ):
        output = refused_at_start(command, env)
        assert "Traceback" not in output and output.count("\n") == 1, output
        assert f"error: builds cannot use the temporary folder {str(scratch)!r}" in output, output
        assert "no sticky bit (chmod +t)" in output and "/dev/shm" in output, output
    assert os.listdir(scratch) == [] and not (tmp_path / "data").exists()
    scratch.chmod(0o1777)  # sticky, as /tmp: the service starts
    serve_once(tmp_path / "data", tmp_path, env)
