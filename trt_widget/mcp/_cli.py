"""``trt-widget mcp``: the MCP server over stdio (what an agent runtime starts) or streamable HTTP."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TYPE_CHECKING

from .._format import escape_controls

if TYPE_CHECKING:
    from ._builds import BuildRegistry

DEFAULT_PORT = 8766
LOOPBACK = ("127.0.0.1", "::1", "localhost")
STOP_WAIT_S = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``mcp`` subcommand's options."""
    from .._http_options import host_argument

    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    parser.add_argument(
        "--host", default="127.0.0.1", type=host_argument, help="with --http: address to bind (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"with --http: port (default {DEFAULT_PORT})")
    parser.add_argument("--token-file", metavar="F", help="with --http: file holding the bearer token (default: "
                        "a new token, printed on stderr)")  # fmt: skip
    add_max_concurrent(parser)


def add_max_concurrent(parser: argparse.ArgumentParser) -> None:
    """``--max-concurrent N`` (the MCP and the language server)."""
    from ._builds import MAX_CONCURRENT

    parser.add_argument("--max-concurrent", type=int, default=MAX_CONCURRENT, metavar="N",
                        help=f"builds at once (default {MAX_CONCURRENT}); more wait, queued, in the order they "
                        "came")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Serve until the client goes (stdio) or until interrupted (HTTP); returns the exit code."""
    try:
        from ._server import create_server
    except ImportError as exc:
        print(f'trt-widget mcp: error: needs its extra: pip install "trt_widget[mcp]" ({exc})', file=sys.stderr)
        return 2
    from .._format import log_escaped_to_stderr
    from ._builds import BuildRegistry

    log_escaped_to_stderr()  # the SDK's warnings name what a client sent (its method): escaped, never raw
    if args.max_concurrent < 1:
        print(f"trt-widget mcp: error: --max-concurrent must be at least 1, got {args.max_concurrent}", file=sys.stderr)
        return 2
    if not args.http:
        if args.token_file is not None:
            print("trt-widget mcp: error: --token-file goes with --http", file=sys.stderr)
            return 2
        from .._follow import end_on_ctrl_c, take_stdout
        from ._server import serve_stdio

        # from here to the exit (the stop included) builder processes, native libraries and stray prints write on
        # stderr, never on the protocol channel
        channel = take_stdout()
        builds = BuildRegistry(max_concurrent=args.max_concurrent)
        end_on_ctrl_c(
            "mcp",
            "an MCP server on stdin/stdout, for an agent runtime (it starts this command itself: docs/agents.md)",
            lambda: _stop_all(builds, "interrupted (Ctrl-C)"),
        )
        try:
            with contextlib.suppress(KeyboardInterrupt):
                serve_stdio(create_server(builds), channel)
        finally:
            _stop_all(builds, "the MCP client went away")
        return 0
    builds = BuildRegistry(max_concurrent=args.max_concurrent)
    server = create_server(builds)
    from ._http import TokenError, app, listen, read_token, uvicorn_server

    if not 0 <= args.port <= 65535:
        print(f"trt-widget mcp: error: --port must be 0..65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        token, generated = read_token(args.token_file)
    except (TokenError, OSError) as exc:
        print(f"trt-widget mcp: error: {escape_controls(str(exc))}", file=sys.stderr)  # a path can hold anything
        return 2
    from .._leftovers import temp_dir_refused

    refused = temp_dir_refused()  # every build over HTTP runs in a builder process: said once, at start
    if refused:
        print(f"trt-widget mcp: error: {escape_controls(refused)}", file=sys.stderr)
        return 2
    try:
        sock = listen(args.host, args.port)
    except OSError as exc:  # the port is taken or not ours to take
        from .._http_options import listen_failure

        print(f"trt-widget mcp: error: {escape_controls(listen_failure(args.host, args.port, exc))}", file=sys.stderr)
        return 2
    host = escape_controls(args.host if ":" not in args.host else f"[{args.host}]")  # as typed: one line
    print(f"trt-widget mcp: http://{host}:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    if generated:
        print(f"token: {token}  (generated; --token-file keeps one across restarts)", file=sys.stderr, flush=True)
    if args.host not in LOOPBACK:
        print(f"trt-widget mcp: warning: listening on {host} without TLS: the token crosses the network in "
              "clear text", file=sys.stderr)  # fmt: skip
    try:
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn_server(app(server, token, args.host), log_level="warning", console=True).run(sockets=[sock])
    finally:
        _stop_all(builds, "the MCP server is shutting down")
    return 0


def _stop_all(builds: BuildRegistry, reason: str) -> None:
    """Stop what still builds and give it STOP_WAIT_S to end (a stop ends a build in ~0.2 s)."""
    builds.stop_all(reason)
    deadline = time.monotonic() + STOP_WAIT_S
    for entry in builds.entries():
        entry.build.wait(max(deadline - time.monotonic(), 0.0))
