"""``trt-widget lsp``: the language server over stdio, until the client exits or goes away."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

STOP_WAIT_S = 5.0  # after the client went: how long running builds get to end (a stop takes ~0.2 s)


def run(args: argparse.Namespace) -> int:
    """Serve over stdio; once the client is gone, stop what still builds and return 0."""
    try:
        from ._server import create_server
    except ImportError as exc:
        print(f'trt-widget lsp: error: needs its extra: pip install "trt_widget[lsp]" ({exc})', file=sys.stderr)
        return 2
    from .._follow import end_on_ctrl_c, take_stdout
    from ..mcp import BuildRegistry

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    channel = take_stdout()  # builder processes and native libraries cannot write on the protocol channel
    builds = BuildRegistry()
    server = create_server(builds)
    end_on_ctrl_c(
        "lsp",
        "a language server on stdin/stdout, for an editor (it starts this command itself: docs/agents.md)",
        lambda: _stop(builds, "interrupted (Ctrl-C)"),
    )
    try:
        server.start_io(sys.stdin.buffer, channel)
    finally:
        _stop(builds, "the editor went away")
    return 0


def _stop(builds: Any, reason: str) -> None:
    """Stop what still builds and give it STOP_WAIT_S to end."""
    builds.stop_all(reason)
    deadline = time.monotonic() + STOP_WAIT_S
    for entry in builds.entries():
        entry.build.wait(max(deadline - time.monotonic(), 0.0))
