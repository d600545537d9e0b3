"""``trt-widget lsp``: the language server over stdio, until the client exits or goes away."""

from __future__ import annotations

import argparse
import logging
import sys
import time

STOP_WAIT_S = 5.0  # after the client went: how long running builds get to end (a stop takes ~0.2 s)


def run(args: argparse.Namespace) -> int:
    """Serve over stdio; once the client is gone, stop what still builds and return 0."""
    try:
        from ._server import create_server
    except ImportError as exc:
        print(f'trt-widget lsp: error: needs its extra: pip install "trt_widget[lsp]" ({exc})', file=sys.stderr)
        return 2
    from .._follow import take_stdout
    from ..mcp import BuildRegistry

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    channel = take_stdout()  # builder processes and native libraries cannot write on the protocol channel
    builds = BuildRegistry()
    server = create_server(builds)
    try:
        server.start_io(sys.stdin.buffer, channel)
    finally:
        builds.stop_all("the editor went away")
        deadline = time.monotonic() + STOP_WAIT_S
        for entry in builds.entries():
            entry.build.wait(max(deadline - time.monotonic(), 0.0))
    return 0
