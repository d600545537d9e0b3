"""``trt-widget lsp``: the language server over stdio, until the client exits or goes away."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from .._format import log_escaped_to_stderr

if TYPE_CHECKING:
    from ..mcp import BuildRegistry

STOP_WAIT_S = 5.0  # after the client went: how long running builds get to end (a stop takes ~0.2 s)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lsp`` subcommand's options."""
    from ..mcp import add_max_concurrent

    add_max_concurrent(parser)


def run(args: argparse.Namespace) -> int:
    """Serve over stdio; once the client is gone, stop what still builds and return 0."""
    try:
        from ._server import create_server, serve_io
    except ImportError as exc:
        print(f'trt-widget lsp: error: needs its extra: pip install "trt_widget[lsp]" ({exc})', file=sys.stderr)
        return 2
    from .._follow import end_on_ctrl_c, take_stdout
    from ..mcp import BuildRegistry
    from ._framing import FramedInput

    max_concurrent = getattr(args, "max_concurrent", 2)
    if max_concurrent < 1:
        print(f"trt-widget lsp: error: --max-concurrent must be at least 1, got {max_concurrent}", file=sys.stderr)
        return 2
    log_escaped_to_stderr()
    channel = take_stdout()  # builder processes and native libraries cannot write on the protocol channel
    builds = BuildRegistry(max_concurrent=max_concurrent)
    server = create_server(builds)
    end_on_ctrl_c(
        "lsp",
        "a language server on stdin/stdout, for an editor (it starts this command itself: docs/agents.md)",
        lambda: _stop(builds, "interrupted (Ctrl-C)"),
    )
    try:
        serve_io(server, FramedInput(sys.stdin.buffer), channel)
    finally:
        _stop(builds, "the editor went away")
    return 0


def _stop(builds: BuildRegistry, reason: str) -> None:
    """Stop what still builds and give it STOP_WAIT_S to end."""
    builds.stop_all(reason)
    deadline = time.monotonic() + STOP_WAIT_S
    for entry in builds.entries():
        entry.build.wait(max(deadline - time.monotonic(), 0.0))
