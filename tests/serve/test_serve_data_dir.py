"""``serve --data``: the service never changes the mode of a folder it did not create (issue 35, defect 4: with
``--data /tmp`` it made /tmp 0700); one it creates is private (0700)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def serve_once(data: Path, tmp_path: Path) -> None:
    """Start ``trt-widget serve --data data`` until it listens, then end it."""
    token = tmp_path / "token"
    token.write_text("a-long-enough-test-token-0123456789\n")
    token.chmod(0o600)
    command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(data)]
    command += ["--token-file", str(token), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


def test_a_builds_folder_another_user_made_in_a_shared_data_folder_is_refused(tmp_path: Path) -> None:
    """``--data /tmp``: another user could make ``/tmp/builds`` first, to read the uploads or plant links there."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    shared = Path(tempfile.mkdtemp(prefix="trt-widget-data-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        subprocess.run([*nobody, "mkdir", "-m", "0777", str(shared / "builds")], check=True, timeout=30)
        token = tmp_path / "token"
        token.write_text("a-long-enough-test-token-0123456789\n")
        token.chmod(0o600)
        command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(shared)]
        done = subprocess.run([*command, "--token-file", str(token)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "owned by another user" in done.stderr and "choose another --data" in done.stderr
        assert stat.S_IMODE(shared.stat().st_mode) == 0o1777 and os.listdir(shared / "builds") == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize("where", ["data", "parent"])
def test_a_data_path_through_another_users_link_is_refused_at_start(tmp_path: Path, where: str) -> None:
    """``--data /tmp/x`` (or ``/tmp/x/data``) where ``nobody`` made ``/tmp/x`` a link to a folder of ours: that
    user could swap the link later and make builds fail; the service refuses it at start, as writes do."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    shared = Path(tempfile.mkdtemp(prefix="trt-widget-data-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        ours = tmp_path / "ours"
        (ours / "data").mkdir(parents=True)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        subprocess.run([*nobody, "ln", "-s", str(ours), str(shared / "x")], check=True, timeout=30)
        data = shared / "x" if where == "data" else shared / "x" / "data"
        token = tmp_path / "token"
        token.write_text("a-long-enough-test-token-0123456789\n")
        token.chmod(0o600)
        command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(data)]
        process = subprocess.Popen(
            [*command, "--token-file", str(token)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
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
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_data_folder_another_user_owns_is_refused(tmp_path: Path) -> None:
    """``--data /tmp/x`` that ``nobody`` made first (0777): the service's own ``builds`` in it is private, but the
    folder's owner may rename it away and put a ``builds`` of theirs in its place while the service runs."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    shared = Path(tempfile.mkdtemp(prefix="trt-widget-data-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        subprocess.run([*nobody, "mkdir", "-m", "0777", str(shared / "x")], check=True, timeout=30)
        token = tmp_path / "token"
        token.write_text("a-long-enough-test-token-0123456789\n")
        token.chmod(0o600)
        command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(shared / "x")]
        done = subprocess.run([*command, "--token-file", str(token)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "owned by another user" in done.stderr and "choose another --data" in done.stderr
        assert os.listdir(shared / "x") == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)
