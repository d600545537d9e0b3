"""The service never copies a token the user keeps private into its console: the banner says where a
``--token-file`` token came from instead of printing it, and the access log redacts ``?token=`` however its
name is percent-encoded (``/?%74oken=T`` is the token parameter to the page's authentication)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
from user_scripts import default_sigint

from trt_widget.serve._server import redact_token

TOKEN = "private-token-from-a-file-0123456789"


def test_a_token_file_is_not_printed_and_an_encoded_token_parameter_is_redacted(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--data", str(tmp_path / "data")]
    command += ["--token-file", str(token_file), "--log-level", "info"]
    process = subprocess.Popen(  # a Ctrl-C (SIGINT) ends it, as at a terminal
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint
    )
    try:
        assert process.stdout is not None
        while not (first := process.stdout.readline()).startswith("trt-widget serve: http://"):
            assert first, "the server ended before its banner"
        url = first.split()[2]
        banner = first + process.stdout.readline() + process.stdout.readline()
        assert f"token: read from --token-file {token_file} (not shown)" in banner, banner
        page = httpx.get(f"{url}/?%74oken={TOKEN}", timeout=60)
        assert page.status_code == 200  # the page's token parameter, percent-encoded
        assert httpx.get(f"{url}/?tok%65n=wrong", timeout=60).status_code == 401
        process.send_signal(signal.SIGINT)
        output = banner + process.stdout.read()
        assert process.wait(30) == 130  # Ctrl-C ends it (128 + SIGINT, as mcp and lsp)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        for pipe in (process.stdin, process.stdout):  # closed now, not by the garbage collector (ResourceWarning)
            if pipe is not None:
                pipe.close()
    assert TOKEN not in output, output
    assert "/?%74oken=<redacted>" in output, output  # the request is logged, its token is not


def test_redaction_compares_the_decoded_parameter_name() -> None:
    assert redact_token("GET /?%74oken=T1&x=1") == "GET /?%74oken=<redacted>&x=1"
    assert redact_token("/?a=b&TOKEN=T2") == "/?a=b&TOKEN=<redacted>"
    assert redact_token("/?%2574oken=T3") == "/?%2574oken=<redacted>"  # encoded twice (issue 35, re-run)
    assert redact_token("/builds?limit=3") == "/builds?limit=3"


def test_a_token_file_that_is_a_device_or_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """``--token-file /dev/zero`` read without end: 12 GB of memory in 8 s (serve and mcp --http alike); a FIFO
    with no writer waited forever. A token file is a small regular file, read up to 4 KiB."""
    import os

    fifo = tmp_path / "token.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    big.write_text("x" * 5000)
    commands = [["serve", "--port", "0", "--data", str(tmp_path / "data")], ["mcp", "--http", "--port", "0"]]
    for command in commands:
        for token_file, said in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"), (big, "4,096")):
            done = subprocess.run(
                [sys.executable, "-m", "trt_widget", *command, "--token-file", str(token_file)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 2, (command, token_file, done.stderr[-1000:])
            assert "cannot read --token-file" in done.stderr and said in done.stderr, done.stderr[-1000:]


def test_a_token_file_other_users_can_read_is_refused_as_ssh_refuses_a_key(tmp_path: Path) -> None:
    """A ``--token-file`` at 0644 (``echo T > file`` under the usual umask) was used without a word: every user of
    the machine could read the token. Refused, naming ``chmod 600 FILE``, for serve and mcp --http alike."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    commands = [["serve", "--port", "0", "--data", str(tmp_path / "data")], ["mcp", "--http", "--port", "0"]]
    for mode in (0o644, 0o640, 0o602):
        token_file.chmod(mode)
        for command in commands:
            done = subprocess.run(
                [sys.executable, "-m", "trt_widget", *command, "--token-file", str(token_file)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 2, (command, oct(mode), done.stderr[-1000:])
            assert f"chmod 600 {token_file}" in done.stderr, done.stderr[-1000:]
            assert f"{mode:04o}" in done.stderr and TOKEN not in done.stderr, done.stderr[-1000:]
    assert token_file.read_text() == TOKEN + "\n" and (token_file.stat().st_mode & 0o777) == 0o602  # left as it was
