"""Instrument a BuildWidget outside a kernel: count state messages and pay the kernel's JSON cost for each.

Outside Jupyter a widget's comm is a ``DummyComm`` that drops messages for free; a kernel would JSON-encode
every message (jupyter_client's ``json_packer``). ``SendProbe`` makes each message cost that encoding, so a
benchmark does not flatter the widget, and records when each ``send_state`` call happened and what it held.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any


class SendProbe:
    """Records (time, trait names, encoded bytes) for every state message a widget sends."""

    def __init__(self, widget: Any) -> None:
        self.times: list[float] = []  # perf_counter when send_state returned
        self.keys: list[tuple[str, ...]] = []
        self.bytes: list[int] = []
        self.encode_s = 0.0
        self._lock = threading.Lock()
        original = widget.send_state

        def send_state(key: Any = None) -> None:
            original(key)
            with self._lock:
                self.times.append(time.perf_counter())
                self.keys.append(tuple(sorted(key)) if isinstance(key, (set, list, tuple)) else (str(key),))

        def publish_msg(
            msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
        ) -> None:
            start = time.perf_counter()
            encoded = json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf8", "surrogateescape")
            with self._lock:
                self.bytes.append(len(encoded))
                self.encode_s += time.perf_counter() - start

        widget.send_state = send_state
        widget.comm.publish_msg = publish_msg

    @property
    def count(self) -> int:
        return len(self.times)

    def between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(1 for t in self.times if start <= t <= end)
