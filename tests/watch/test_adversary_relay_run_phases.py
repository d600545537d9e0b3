"""Twentieth adversarial re-run (issue 35, R3): the nineteenth re-run's fix bounds the phases of each build a watched
command's processes send (``MAX_PHASES``, 200,000), but not of the run: a command that starts 1,000 builds of
200,000 phases each makes ``trt-widget run`` hold 200 million phases (the relay shows 1,000 builds a run). The
phases of all builds of a run are bounded too: the build that crosses the bound fails in one line, later builds are
not shown, and the command runs on to its own exit code. Real processes and sockets (the relay reads what a process
sends; no build is needed), small events (each phase ~100 bytes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trt_widget.runners import MAX_PHASES

from ._sender import CONNECT

# The command: one process that runs the builds its argument lists (each a number of phases, each phase started and
# finished), one after the other, each waiting for the relay's acknowledgement of its end as a watched build does.
SENDER = CONNECT + textwrap.dedent(
    """
    for n, count in enumerate(json.loads(sys.argv[1])):
        send(n, "build_start", model=f"m{n}.onnx", backend="rtx", version="1")
        lines = []
        for i in range(1, count + 1):
            lines.append('{"build": %d, "event": "phase_start", "t": 0.1, "id": %d, "name": "p", "parent": null}\\n'
                         % (n, i))
            lines.append('{"build": %d, "event": "phase_finish", "t": 0.1, "id": %d, "name": "p"}\\n' % (n, i))
            if len(lines) >= 20000:
                s.sendall("".join(lines).encode())
                lines = []
        s.sendall("".join(lines).encode())
        send(n, "build_end", status="succeeded", engine_bytes=10)
        acked = b""
        while not acked.endswith(b"\\n"):  # "E<n>" once its end is shown (or the relay dropped it)
            got = s.recv(64)
            if not got:
                break
            acked += got
    print("the command ran on")
    """
)

PARENT = textwrap.dedent(
    """
    import json, logging, sys
    from trt_widget.watch import CommandRun

    logging.basicConfig(level=logging.WARNING)  # the run's warnings on stderr, as the CLI shows them
    outputs = []
    run = CommandRun([sys.executable, sys.argv[1], sys.argv[2]], on_output=outputs.append)
    run.start()
    code = run.result(600)
    print(json.dumps({
        "code": code,
        "output": [bytes(line).decode(errors="replace") for line in outputs],
        "builds": [
            {"phases": len(list(b.model.phases())), "status": b.status, "error": str(b.error or "")}
            for b in run.builds
        ],
    }))
    """
)


def relay(tmp_path: Path, counts: list[int]) -> tuple[dict[str, object], str]:
    """Watch the sender running builds of ``counts`` phases; what the watcher showed, and its stderr."""
    parent, command = tmp_path / "parent.py", tmp_path / "command.py"
    parent.write_text(PARENT)
    command.write_text(SENDER)
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, str(parent), str(command), json.dumps(counts)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0, result
    assert any("the command ran on" in line for line in result["output"]), result  # type: ignore[attr-defined]
    return result, done.stderr


@pytest.mark.slow
def test_a_run_of_builds_within_the_bound_shows_them_all(tmp_path: Path) -> None:
    result, _ = relay(tmp_path, [1000, 1000, 1000])  # the control
    assert result["builds"] == [{"phases": 1000, "status": "succeeded", "error": ""}] * 3, result


@pytest.mark.slow
def test_the_relay_bounds_the_phases_of_all_builds_of_a_run(tmp_path: Path) -> None:
    first = MAX_PHASES * 3 // 4  # each build within the per-build bound, the two past it together: just past it
    result, stderr = relay(tmp_path, [first, MAX_PHASES - first + 1_000, 10])
    builds = result["builds"]
    assert isinstance(builds, list)
    # before the fix: three builds shown, all succeeded, 201,010 phases held
    assert len(builds) == 2, builds  # the build started after the bound was crossed is not shown
    assert builds[0] == {"phases": first, "status": "succeeded", "error": ""}, builds[0]
    assert builds[1]["phases"] == MAX_PHASES - first and builds[1]["status"] == "failed", builds[1]
    assert "more than 200,000 phases in all" in builds[1]["error"], builds[1]
    assert stderr.count("phases in all") == 1, stderr[-3000:]  # one warning for what was dropped
