"""The head of a fake watched process's script: it connects to ``trt-widget run``'s socket as any watched Python
process does and defines ``send(build, event, **fields)``, one event a line. The tests append what it sends."""

from __future__ import annotations

import textwrap

CONNECT = textwrap.dedent(
    """
    import json, os, socket, sys
    address = os.environ["TRT_WIDGET_RUN_SOCKET"]
    s = socket.socket(socket.AF_UNIX)
    s.connect("\\0" + address[1:] if address.startswith("@") else address)

    def send(build, event, **fields):
        s.sendall((json.dumps({"build": build, "event": event, "t": 0.0, **fields}) + "\\n").encode())
    """
)
