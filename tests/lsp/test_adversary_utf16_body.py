"""Twenty-second adversarial re-run (L1 again, issue 35): ``_json.check_text`` counts a body's bytes as if they
were UTF-8, but ``json.loads`` of bytes also decodes UTF-16 and UTF-32. In UTF-16 a character such as U+4E22 holds
the byte ``"`` (0x22): one inside a string flips the count's idea of what is string, and every list and object
after it, up to the next quote, is skipped. A 32 MiB UTF-16 body of ``[{},{},...]`` took the server from 138 to
617 MiB (a 256 MiB body: ~4 GB), and nesting is unchecked the same way."""

from __future__ import annotations

import threading
import time

from lsp_wire import answer, lsp_server, message, request

WIDE_MIB = 24
GROWTH_LIMIT_KIB = 200 << 10  # a 24 MiB UTF-16 body: ~360 MiB more today; the body itself and a count once fixed


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def test_a_utf16_body_cannot_hide_its_values_from_the_count() -> None:
    count = (WIDE_MIB << 20) // 6  # "{}," is 6 bytes in UTF-16
    arguments = '["\u4e22",[' + "{}," * (count - 1) + '{}],"z"]'
    text = (
        '{"jsonrpc":"2.0","id":2,"method":"workspace/executeCommand",'
        '"params":{"command":"trtWidget.builds","arguments":' + arguments + "}}"
    )
    body = text.encode("utf-16-le")
    with lsp_server() as (process, answers):
        assert process.stdin is not None
        process.stdin.write(message(request(1, "workspace/executeCommand", {"command": "trtWidget.builds"})))
        process.stdin.flush()
        assert answer(answers, 1)["result"] == {"builds": []}  # imported and serving: the baseline is its idle size
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
        process.stdin.write(message(request(3, "workspace/executeCommand", {"command": "trtWidget.builds"})))
        process.stdin.flush()
        assert answer(answers, 3)["result"] == {"builds": []}  # the server reads on
    assert max(peaks) - before < GROWTH_LIMIT_KIB, f"{before} KiB idle, {max(peaks)} KiB peak"
    # refused as not JSON (not UTF-8), before any count: a UTF-8 body of the same values is -32600 (too many)
    assert refused == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": refused["error"]["message"]}}
