"""Twenty-first adversarial re-run (L1, issue 35): ``trt-widget lsp`` bounds a message's bytes (256 MiB) but not
the JSON values in it. A body of empty objects (``[{},{},...]``) is decoded whole by ``json.loads`` before
anything looks at it: 8 MiB took the server from 161 to 446 MiB, 32 MiB to 1.3 GB (~36 bytes held per byte
sent), so one message under the bound takes ~9 GB. The recordings' J1 bound (``_json.check_outside``) never
reached this reader; ``_json.check_text`` now counts the body's values before decoding it and refuses it -32600."""

from __future__ import annotations

import threading
import time

from lsp_wire import answer, lsp_server, message, request

WIDE_MIB = 16
GROWTH_LIMIT_KIB = 200 << 10  # a 16 MiB body: ~570 MiB more before the fix; the body itself and a count now


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def test_a_wide_json_body_is_not_held_as_millions_of_objects() -> None:
    count = (WIDE_MIB << 20) // 3
    arguments = b"[" + b"{}," * (count - 1) + b"{}]"
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"workspace/executeCommand",'
        b'"params":{"command":"trtWidget.builds","arguments":' + arguments + b"}}"
    )
    with lsp_server() as (process, answers):
        assert process.stdin is not None
        # The baseline is the size of a server that has answered a command: a fixed sleep measured one still
        # importing under load (45 MiB, then ~150 MiB idle), and its imports counted as the body's growth.
        process.stdin.write(message(request(0, "workspace/executeCommand", {"command": "trtWidget.builds"})))
        process.stdin.flush()
        assert answer(answers, 0)["result"] == {"builds": []}
        before = _peak_kib(process.pid)
        done = threading.Event()
        peaks = [before]

        def watch() -> None:
            while not done.is_set() and process.poll() is None:
                try:
                    peaks.append(_peak_kib(process.pid))
                except OSError:
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        process.stdin.flush()
        refused = answers.get(timeout=120)  # answered (or refused) once the body was read
        done.set()
        watcher.join(10)
        peaks.append(_peak_kib(process.pid))
        process.stdin.write(message(request(2, "workspace/executeCommand", {"command": "trtWidget.builds"})))
        process.stdin.flush()
        assert answer(answers, 2)["result"] == {"builds": []}  # the server reads on
    assert max(peaks) - before < GROWTH_LIMIT_KIB, f"{before} KiB idle, {max(peaks)} KiB peak"
    assert refused == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": refused["error"]["message"]}}
