"""Eleventh re-run (adversary, N4): a ``$/cancelRequest`` notification whose ``params.id`` is not hashable ends
``trt-widget lsp`` (pygls's ``_request_futures.pop`` raises TypeError, which ``_dispatch`` does not catch). The
tenth run's tree (pygls's own reader) survived it with a ``window/showMessage``. Such a cancel is dropped with one
line on stderr; anything else pygls raises while handling a notification or a response (an editor's answer to a
progress creation the server stopped waiting for) is one line too, never the read loop's end."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_wire import answer, initialize, lsp_server, message, request
from pygls.uris import from_fs_path


@pytest.mark.parametrize("bad", [[1], {"a": 1}])
def test_a_cancel_notification_with_an_unhashable_id_leaves_the_server_running(bad: object) -> None:
    with lsp_server() as (process, answers):
        assert process.stdin is not None and process.stderr is not None
        initialize(process, answers)
        process.stdin.write(message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": bad}}))
        process.stdin.write(message(request(2, "workspace/executeCommand", {"command": "trtWidget.builds"})))
        process.stdin.flush()
        assert answer(answers, 2)["result"] == {"builds": []}  # queue.Empty: the server ended
        process.kill()
        process.wait(30)
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert "dropped a $/cancelRequest whose id is not a string or an integer" in stderr, stderr


def test_an_editors_late_answer_to_a_progress_creation_leaves_the_server_running(
    agent_models: dict[str, Path], tmp_path: Path
) -> None:
    """The server waits 5 s for ``window/workDoneProgress/create``'s answer, then builds without progress; the
    answer arriving after that made pygls's ``set_result`` on the abandoned future raise InvalidStateError."""
    with lsp_server() as (process, answers):
        assert process.stdin is not None and process.stderr is not None
        initialize(process, answers, {"window": {"workDoneProgress": True}})
        engine = tmp_path / "x.engine"
        build = {"command": "trtWidget.build", "arguments": [from_fs_path(str(agent_models["small"])),
                                                             {"output": str(engine)}]}  # fmt: skip
        process.stdin.write(message(request(2, "workspace/executeCommand", build)))
        process.stdin.flush()
        create = None
        built = None
        while built is None:  # the create request first (not answered), then the build's answer
            got = answers.get(timeout=120)
            if got.get("method") == "window/workDoneProgress/create":
                create = got
            elif got.get("id") == 2:
                built = got
        assert create is not None and built["result"]["status"] == "succeeded", built
        process.stdin.write(message({"jsonrpc": "2.0", "id": create["id"], "result": None}))  # too late
        listing = {"command": "trtWidget.builds", "arguments": []}
        process.stdin.write(message(request(3, "workspace/executeCommand", listing)))
        process.stdin.flush()
        assert [b["status"] for b in answer(answers, 3)["result"]["builds"]] == ["succeeded"]
        process.stdin.write(message({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}))
        process.stdin.flush()
        answer(answers, 4)
        process.stdin.write(message({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        assert process.wait(60) == 0  # ended by the editor, its builder process with it
        stderr = process.stderr.read().decode()
        assert "Traceback" not in stderr, stderr
        assert "lsp: could not handle a response (InvalidStateError" in stderr, stderr
