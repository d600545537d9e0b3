"""``trt-widget serve`` as a real process: it restarts on the same --data and still lists finished builds (events
and engine included); a server killed mid-build leaves that build failed with a complete, valid event log; a
graceful stop cancels running builds and tells open streams; bad options exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from user_scripts import default_sigint

from trt_widget._events import schema
from trt_widget.models import deep_residual, to_bytes
from trt_widget.serve._client import sse_messages

TOKEN = "restart-test-token-0123456789"


class Server:
    """``python -m trt_widget serve`` on a free port; ``url`` from the first line it prints."""

    def __init__(self, data: Path, token_file: Path) -> None:
        command = [sys.executable, "-m", "trt_widget", "serve", "--port", "0", "--max-concurrent", "2"]
        command += ["--data", str(data), "--token-file", str(token_file), "--log-level", "warning"]
        self.process = subprocess.Popen(  # a Ctrl-C (SIGINT) stops it gracefully, as at a terminal
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint
        )
        assert self.process.stdout is not None
        early = ""  # what the server logged while it started (e.g. a stored build it could not read)
        while (first := self.process.stdout.readline()).startswith("trt-widget serve: warning: "):
            early += first
        assert first.startswith("trt-widget serve: http://127.0.0.1:"), first
        self.url = first.split()[2]
        self.banner = early + first + self.process.stdout.readline() + self.process.stdout.readline()
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)

    def events(self, build_id: str) -> list[dict[str, Any]]:
        with self.client.stream("GET", f"/builds/{build_id}/events") as reply:
            assert reply.status_code == 200
            return [json.loads(data) for _, kind, data in sse_messages(reply.iter_lines()) if kind == "message"]

    def first_phase(self, build_id: str) -> None:
        """Return once the build has started a phase (read from its event stream)."""
        with self.client.stream("GET", f"/builds/{build_id}/events") as reply:
            messages = sse_messages(reply.iter_lines())
            for _, _, data in messages:
                if json.loads(data)["event"] == "phase_start":
                    return
        pytest.fail("the build ended before its first phase")

    def close(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)  # a token file other users can read is refused
    return path


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.close()


def check_log(events: list[dict[str, Any]]) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    for event in events:
        validator.validate(event)
    assert events[0]["event"] == "build_start" and events[-1]["event"] == "build_end"
    starts = {e["id"] for e in events if e["event"] == "phase_start"}
    assert starts == {e["id"] for e in events if e["event"] == "phase_finish"}  # no phase left open


def test_restart_keeps_builds_kill_and_graceful_stop(tmp_path: Path, token_file: Path, servers: list[Server]) -> None:
    data = tmp_path / "data"
    first = Server(data, token_file)
    servers.append(first)
    assert TOKEN not in first.banner.splitlines()[0]  # the token is shown on its own line
    done = first.client.post("/builds", content=to_bytes(deep_residual(5)), params={"name": "small.onnx"}).json()["id"]
    finished_events = first.events(done)
    assert finished_events[-1]["status"] == "succeeded"
    engine = first.client.get(f"/builds/{done}/engine").content
    killed = first.client.post("/builds", content=to_bytes(deep_residual(1000))).json()["id"]
    first.first_phase(killed)
    first.process.send_signal(signal.SIGKILL)  # no chance to store anything more
    first.process.wait(30)

    (data / "builds" / ("A" * 22)).mkdir()
    (data / "builds" / ("A" * 22) / "meta.json").write_text("{")  # a damaged entry is skipped, not fatal
    (data / "builds" / "not-an-id").mkdir()
    second = Server(data, token_file)
    servers.append(second)
    assert "2 stored builds" in second.banner
    listed = {b["id"]: b for b in second.client.get("/builds").json()["builds"]}
    assert set(listed) == {done, killed}
    assert listed[done]["status"] == "succeeded" and listed[done]["name"] == "small.onnx"
    assert second.events(done) == finished_events
    assert second.client.get(f"/builds/{done}/engine").content == engine
    assert second.client.get(f"/builds/{done}").json()["timings"]
    assert listed[killed]["status"] == "failed" and "server stopped" in listed[killed]["detail"]
    interrupted = second.events(killed)
    check_log(interrupted)
    assert interrupted[-1]["status"] == "failed"
    assert second.client.get(f"/builds/{killed}/engine").status_code == 409
    assert not list(data.glob("builds/*/model.onnx"))  # uploads of ended builds are removed

    running = second.client.post("/builds", content=to_bytes(deep_residual(1000))).json()["id"]
    second.first_phase(running)
    with second.client.stream("GET", f"/builds/{running}/events") as reply:
        second.process.send_signal(signal.SIGINT)  # graceful: streams told, running builds cancelled and stored
        messages = list(sse_messages(reply.iter_lines()))
    assert second.process.wait(30) == 130  # Ctrl-C: a graceful shutdown, then 128 + SIGINT, as mcp and lsp
    kinds = [kind for _, kind, _ in messages]
    assert kinds[-1] == "server" and json.loads(messages[-1][2])["reason"] == "shutdown"
    meta = json.loads((data / "builds" / running / "meta.json").read_text())
    assert meta["status"] == "cancelled" and "shutting down" in meta["detail"]

    third = Server(data, token_file)
    servers.append(third)
    stopped = third.events(running)
    check_log(stopped)
    assert stopped[-1]["status"] == "cancelled"
    assert [json.loads(d) for i, k, d in messages[:-1] if k == "message"] == stopped[: len(messages) - 1]
    assert len(third.client.get("/builds").json()["builds"]) == 3
    assert oct((data).stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ray-address", "auto"], "goes with --executor ray"),
        (["--max-upload", "lots"], "--max-upload"),
        (["--max-concurrent", "0"], "at least 1"),
        (["--token", " "], "non-empty"),
        (["--token-file", "/nonexistent/token"], "cannot read"),
        (["--ssl-certfile", "c.pem"], "go together"),
    ],
)
def test_bad_options_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    from trt_widget.__main__ import main

    if "ray" in args and os.environ.get("TRT_WIDGET_SERVE_RAY"):
        pytest.skip("a Ray executor is configured")
    with pytest.MonkeyPatch.context() as patch:
        errors: list[str] = []
        patch.setattr(sys, "stderr", type("E", (), {"write": errors.append, "flush": lambda self: None})())
        assert main(["serve", "--data", str(tmp_path), *args]) == 2
    assert message in "".join(errors)


def test_the_servers_own_log_reaches_its_console_escaped(
    tmp_path: Path, token_file: Path, servers: list[Server]
) -> None:
    """What the server logs (a build it cannot read back, a full disk, the cause of a 500) is printed, one line
    each with control characters escaped, not dropped by a logger nobody configured."""
    data = tmp_path / "data"
    damaged = data / "builds" / ("A" * 22)
    damaged.mkdir(parents=True)
    (damaged / "meta.json").write_text("{\x1b]0;PWNED\x07")
    servers.append(server := Server(data, token_file))
    assert server.client.get("/builds").status_code == 200
    server.process.send_signal(signal.SIGINT)
    assert server.process.stdout is not None
    output = server.process.stdout.read()
    server.process.wait(30)
    (line,) = [line for line in (server.banner + output).splitlines() if "skipping" in line]
    assert line.startswith("trt-widget serve: warning: serve: skipping ") and "unreadable meta.json" in line, line
    assert "\x1b" not in server.banner + output


@pytest.mark.parametrize("kind", ["not PEM", "a FIFO"])
def test_a_certificate_that_cannot_be_used_is_a_usage_error(kind: str, tmp_path: Path) -> None:
    """Seventh re-run: a certificate or key that is not one (a typo, the two swapped) printed the banner with the
    token, then a 15-frame ssl.SSLError traceback (exit 1); a FIFO held the start for ever. Both are checked
    before anything listens: one line naming the flags, exit 2."""
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    key.write_text("not a key\n")
    if kind == "a FIFO":
        os.mkfifo(cert)
    else:
        cert.write_text("not a certificate\n")
    command = [sys.executable, "-m", "trt_widget", "serve", "--data", str(tmp_path / "data"), "--port", "0"]
    command += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "--ssl-certfile" in done.stderr, done.stderr
    assert "token" not in done.stdout, done.stdout
