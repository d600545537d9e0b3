"""Thirteenth adversarial re-run (issue 35, P1): a model path the system cannot even stat (a name too long,
ENAMETOOLONG; a folder the user may not enter, EACCES) raises OSError out of ``BuildRegistry.create``, which
turns only BadInput into a tool error. The agent gets "Error executing tool start_build" with no reason, the editor
a -32603 "OSError: ...", and both servers print a Python traceback (install paths) on their console, where a
refusal is one line ("ONNX file not found: ...")."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_wire import answer, initialize, lsp_server, message, request
from mcp_wire import exchange, tool_call

LONG = "b" * 300 + ".onnx"  # one name over NAME_MAX (255): stat() says ENAMETOOLONG


def _mcp(lines: list[dict[str, object]], cwd: Path, last: int) -> tuple[list[dict[str, object]], str]:
    """A real ``trt-widget mcp`` over stdio: what it answered (up to the answer to request ``last``) and its
    stderr."""
    log = cwd / "mcp-stderr.txt"
    with open(log, "w") as stderr_file:
        answers = exchange(lines, cwd, last, stderr=stderr_file)
    stderr = log.read_text(errors="replace")
    return answers, stderr


def test_mcp_refuses_a_model_path_it_cannot_stat_with_its_reason(tmp_path: Path) -> None:
    answers, stderr = _mcp(tool_call("start_build", {"model": str(tmp_path / LONG)}), tmp_path, last=1)
    result = next(a for a in answers if a.get("id") == 1)["result"]
    assert isinstance(result, dict) and result["isError"] is True, result
    text = json.dumps(result["content"])
    assert "too long" in text, text  # the reason, as for a missing file
    assert "Traceback" not in stderr, stderr[-3000:]


def test_lsp_refuses_a_model_path_it_cannot_stat_in_one_line(tmp_path: Path) -> None:
    with lsp_server() as (process, answers):
        assert process.stdin is not None and process.stderr is not None
        initialize(process, answers)
        params = {"command": "trtWidget.build", "arguments": [str(tmp_path / LONG)]}
        process.stdin.write(message(request(2, "workspace/executeCommand", params)))
        process.stdin.write(message(request(3, "shutdown", {})))
        process.stdin.write(message({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        got = answer(answers, 2)
        answer(answers, 3)
        process.wait(60)
        stderr = process.stderr.read().decode("utf-8", "replace")
    assert "error" in got and "too long" in json.dumps(got), got
    assert "Traceback" not in stderr, stderr[-3000:]
