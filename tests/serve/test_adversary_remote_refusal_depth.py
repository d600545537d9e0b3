"""Seventeenth adversarial re-run (issue 35): a hostile build server's refusal. ``_refusal`` (serve/_client.py) read
the server's JSON ``error`` with ``response.json()`` and caught ValueError only: a refusal body nested deeper than
``json.loads`` recurses (well under the 1 MiB reply bound) raised RecursionError, and the RemoteBuild failed with
"unexpected RecursionError" and a Python traceback as its error, where docs/security.md says "A server that sends
bad JSON or malformed events fails the build with a clear error". Every JSON body the client reads now goes through
one bounded reader (``_server_json``): the upload's refusal, a refused event stream, ``info()``, the engine's
refusal. And the server's text in the client's errors is escaped: a Python traceback prints an exception's message
raw, so a refusal holding terminal sequences drove the terminal of whoever read it.
A fake server: the hostile server is the subject."""

from __future__ import annotations

import json

import pytest
from attacks import SMALL
from hostile_server import HostileServer, Reply

DEEP = b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # 200 KB: under the 1 MiB reply bound
NESTED = b'{"error": ' + b"[" * 100 + b"]" * 100 + b"}"  # read by json.loads, past what a build's reply nests
FORGED = "\x1b]0;owned\x07\x1b[2J\rforged line\n\u2028x\x9b31m"  # a title, a clear, a rewritten and a new line
FAKE_ID = "A" * 22
JSON = "application/json"


def _refuses(mode: str) -> HostileServer:
    """A fake build server: sensible limits, then one hostile answer chosen by ``mode``."""

    def get(path: str) -> Reply:
        if path.endswith("/events") and mode == "refuse events":
            return 404, DEEP, JSON
        if path.endswith("/events"):
            start = {"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0.0}
            end = {"event": "build_end", "status": "succeeded", "detail": "", "elapsed_s": 1.0,
                   "engine_bytes": 5, "output": None, "error": None, "t": 1.0}  # fmt: skip
            if mode == "failed with controls":
                end = {**end, "status": "failed", "engine_bytes": None, "error": FORGED}
            stream = "".join(f"id: {i}\ndata: {json.dumps(e)}\n\n" for i, e in enumerate((start, end), 1))
            if mode == "many data lines":  # each line under the bound, the message 2 MB: held whole
                stream = f"id: 1\ndata: {json.dumps(start)}\n\n" + "data: x\n" * (1 << 20) + "\n"
            return 200, stream.encode(), "text/event-stream"
        if path.endswith("/engine"):
            return 404, DEEP, JSON  # "refuse engine"
        if path.startswith(f"/builds/{FAKE_ID}"):
            return (404, DEEP, JSON) if mode == "refuse state" else (200, NESTED, JSON)  # "deep state"
        limits = {"max_upload": 1 << 30, "running": 0, "max_concurrent": 2, "builds": []}
        return 200, json.dumps(limits).encode(), JSON

    def post(path: str, body: bytes) -> Reply:
        return 400, DEEP if mode == "refuse deep" else json.dumps({"error": FORGED}).encode(), JSON

    return HostileServer(get, post)


def _clear(error: object) -> str:
    """The error's text, asserted to be one clear line: no RecursionError, no traceback."""
    text = str(error)
    assert "unexpected" not in text and "Traceback" not in text and "Recursion" not in text, text[:300]
    assert "\n" not in text, text[:300]
    return text


def test_a_refusal_nested_deeply_fails_the_remote_build_with_a_clear_error() -> None:
    from trt_widget.serve import RemoteBuild

    hostile = _refuses("refuse deep")
    try:
        build = RemoteBuild(hostile.url, "token", SMALL, timeout=5).start()
        assert build.wait(60) == "failed", build.status_detail
        assert "refused the build (HTTP 400: Bad Request)" in _clear(build.error), build.error
    finally:
        hostile.close()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("refuse events", f"cannot follow build {FAKE_ID} on"),  # was: lost after the timeout, "RecursionError: ..."
        ("many data lines", f"build {FAKE_ID} on"),
        ("refuse engine", f"build {FAKE_ID} succeeded, but its engine: HTTP 404: Not Found"),  # was: "unexpected"
    ],
)
def test_a_hostile_reply_while_following_fails_with_a_clear_error(mode: str, said: str) -> None:
    from trt_widget.serve import RemoteBuild

    hostile = _refuses(mode)
    try:
        build = RemoteBuild.follow(hostile.url, "token", FAKE_ID, timeout=5).start()
        assert build.wait(60) == "failed", build.status_detail
        assert said in _clear(build.error), build.error
        if mode == "many data lines":
            assert "the server sent an event larger than 1,048,576 bytes; given up" in str(build.error), build.error
    finally:
        hostile.close()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("refuse state", "refused the build's state (HTTP 404: Not Found)"),  # was: RecursionError to the caller
        ("deep state", "sent the build's state whose field 'error' nests lists or objects more than 32 deep"),
    ],
)
def test_a_build_state_nested_deeply_is_a_clear_error(mode: str, said: str) -> None:
    from trt_widget import BuildError
    from trt_widget.serve import RemoteBuild

    hostile = _refuses(mode)
    try:
        with pytest.raises(BuildError) as caught:
            RemoteBuild.follow(hostile.url, "token", FAKE_ID, timeout=5).info()
        assert f"the build server {hostile.url} {said}" in _clear(caught.value), caught.value
    finally:
        hostile.close()


@pytest.mark.parametrize("mode", ["refuse with controls", "failed with controls"])
def test_a_servers_text_in_the_remote_builds_error_is_escaped(mode: str) -> None:
    from trt_widget.serve import RemoteBuild

    hostile = _refuses(mode)
    try:
        if mode == "refuse with controls":  # the upload's refusal
            build = RemoteBuild(hostile.url, "token", SMALL, timeout=5).start()
        else:  # a build_end's error
            build = RemoteBuild.follow(hostile.url, "token", FAKE_ID, timeout=5).start()
        assert build.wait(60) == "failed", build.status_detail
        text = str(build.error)
        assert not any(c in text for c in "\x1b\x07\r\n\u2028\x9b"), ascii(text)
        assert "\\x1b]0;owned\\x07\\x1b[2J\\x0dforged line\\x0a\\u2028x\\x9b31m" in text, text
    finally:
        hostile.close()
