"""Eighteenth adversarial re-run (issue 35): a hostile build server's ``build_end``. The client checks every other
event with ``check_event`` (its ``t`` a finite time within 1e12 s), but hands ``build_end`` to ``_end`` first,
which reads ``t`` with ``float()`` unchecked (serve/_client.py ``_seconds``): a 400-digit ``t`` fails the
RemoteBuild with "unexpected OverflowError: int too large to convert to float" and the client's traceback (its
install path) as the error, where docs/security.md says "A server that sends bad JSON or malformed events fails the
build with a clear error"; ``t`` Infinity ends the build "succeeded" with ``elapsed_s`` inf, after which the build's
text rendering (``report.to_text``, the notebook's repr) raises ValueError. A fake server: the hostile server is
the subject."""

from __future__ import annotations

import math
from typing import Any

from hostile_server import HostileServer, Reply

FAKE_ID = "A" * 22
START = '{"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}'
END = (
    '{"event": "build_end", "status": "succeeded", "detail": "", "elapsed_s": 1.0, "engine_bytes": 5, '
    '"output": null, "error": null, "t": %s}'
)


def _ends_at(t: str) -> HostileServer:
    """A fake build server whose build ends at time ``t`` (JSON text: a number of any length, or Infinity)."""

    def get(path: str) -> Reply:
        if path.split("?")[0].endswith("/events"):
            stream = f"id: 1\ndata: {START}\n\nid: 2\ndata: {END % t}\n\n"
            return 200, stream.encode(), "text/event-stream"
        if path.endswith("/engine"):
            return 200, b"12345", "application/octet-stream"
        return 200, b'{"status": "running"}', "application/json"

    return HostileServer(get)


def _follow(t: str) -> Any:
    from trt_widget.serve import RemoteBuild

    hostile = _ends_at(t)
    try:
        build = RemoteBuild.follow(hostile.url, "token", FAKE_ID, timeout=5).start()
        build.wait(60)
        assert build.done()
        return build
    finally:
        hostile.close()


def test_a_build_end_at_a_400_digit_time_fails_with_a_clear_error() -> None:
    build = _follow("9" * 400)
    text = str(build.error)
    assert "unexpected" not in text and "Traceback" not in text, text[:600]
    assert build.status == "failed", build.status  # refused, saying which field is wrong
    assert "sent a malformed 'build_end' event" in text and "'t' must be a finite time" in text, text[:600]


def test_a_build_end_at_infinity_leaves_a_build_that_can_be_shown() -> None:
    from trt_widget.report import to_text

    build = _follow("Infinity")
    assert math.isfinite(build.elapsed_s), build.elapsed_s
    assert to_text(build)


def test_control_a_build_end_at_one_second_succeeds_and_is_shown() -> None:
    from trt_widget.report import to_text

    build = _follow("1.0")
    assert build.status == "succeeded", build.error
    assert math.isfinite(build.elapsed_s) and "Succeeded" in to_text(build)
