"""``trt-widget serve``: a build service. Builds are uploaded over HTTP, watched as Server-Sent Events, cancelled
over HTTP, and their engines downloaded — for IDEs, agents and CI. Needs ``pip install "trt_widget[serve]"``.

  POST /builds                 ONNX body (options: ?options=<JSON>&name=...) or multipart (model, options, name)
                               -> 201 {"id": ...}; 413 over --max-upload, 429 over --max-concurrent, 400 malformed
  GET  /builds                 every build, newest first: status, detail, elapsed_s, current phase, ...
  GET  /builds/{id}            one build, with its timings
  GET  /builds/{id}/events     text/event-stream of the ``events=`` schema: from the start (or after Last-Event-ID),
                               then live until build_end
  POST /builds/{id}/cancel     graceful, then forced after force_after (0.1 s); ?force=1 or a second cancel: now
  GET  /builds/{id}/engine     the engine bytes once succeeded (409 before)
  GET  /                       a page listing the builds with live progress (open /?token=...)

Every request needs ``Authorization: Bearer <token>``. The server binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import unquote_plus

from .._files import expand_user, read_small_text, xdg_home
from .._format import escape_controls, say
from .._status import log
from .._tensorrt_log import LOGGER_NAME as TENSORRT_LOGGER

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp
    from typing_extensions import Unpack

    from ._guard import Guard, ServerConfig
    from ._store import BuildStore


DEFAULT_PORT = 8765
DEFAULT_MAX_UPLOAD = "2GiB"
DEFAULT_MAX_CONCURRENT = 1
DEFAULT_MIN_UPLOAD_RATE = 16 * 1024  # B/s, over each --body-timeout window
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 1000  # lowered below the open-file limit (ulimit -n) when that is smaller
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/trt_widget/serve`` (``~/.local/share/trt_widget/serve``)."""
    return xdg_home("XDG_DATA_HOME", ".local", "share") / "trt_widget" / "serve"


class _Tuning(TypedDict, total=False):
    send_timeout: float
    ping: float
    body_timeout: float
    min_upload_rate: float
    executor: str
    ray_address: str | None


def _make_app(
    data: str | os.PathLike[str], token: str, max_upload: int, max_concurrent: int, **tuning: Unpack[_Tuning]
) -> tuple[BuildStore, ASGIApp]:
    from ._app import create_app
    from ._store import BuildStore

    store = BuildStore(data, max_concurrent=max_concurrent)
    return store, create_app(store, token=token, max_upload=max_upload, **tuning)


def _server(app: ASGIApp, store: BuildStore, guard: Guard, **config: Unpack[ServerConfig]) -> uvicorn.Server:
    """A uvicorn server that keeps ``guard``'s connection limits and ends the SSE streams before it waits for
    connections to close."""
    from ._guard import guarded_server

    return guarded_server(app, guard, before_shutdown=store.close_streams, **config)


def _guard(max_connections: int, header_timeout: float) -> Guard:
    from ._guard import connection_guard

    return connection_guard(max_connections, header_timeout)


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one); connections wait in its backlog until the server accepts them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # IPPROTO_TCP: asyncio sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class ServerThread:
    """The service on a background thread of this process (tests, benchmarks, a notebook):
    ``with ServerThread(data=d) as server: server.url, server.token``."""

    def __init__(
        self,
        *,
        data: str | os.PathLike[str],
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_upload: int = 2 << 30,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
        send_timeout: float = 30.0,
        ping: float = 15.0,
        body_timeout: float = 30.0,
        min_upload_rate: float = DEFAULT_MIN_UPLOAD_RATE,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT_S,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        executor: str = "local",
        ray_address: str | None = None,
    ) -> None:
        self.token = token or secrets.token_urlsafe(32)
        tuning: _Tuning = {"send_timeout": send_timeout, "ping": ping, "executor": executor, "ray_address": ray_address,
                  "body_timeout": body_timeout, "min_upload_rate": min_upload_rate}  # fmt: skip
        self.store, app = _make_app(data, self.token, max_upload, max_concurrent, **tuning)
        self.guard = _guard(max_connections, header_timeout)
        self._sock = _listen(host, port)
        bound = self._sock.getsockname()
        self.url = f"http://{host if ':' not in host else f'[{host}]'}:{bound[1]}"
        self.server = _server(app, self.store, self.guard, log_level="warning", access_log=False)
        self._thread = threading.Thread(target=self._run, name="trt_widget-serve", daemon=True)
        self._failed: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self._sock])
        except BaseException as exc:  # SystemExit from a failed startup included
            self._failed = exc

    def start(self, timeout: float = 60.0) -> ServerThread:
        """Start serving; returns once the app has started (TensorRT imported, a builder process warming)."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.store.ready.wait(0.05):  # the socket already listens: early clients wait in its backlog
            if not self._thread.is_alive():
                raise RuntimeError(f"the server did not start: {self._failed!r}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server did not start within {timeout} s")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop serving: streams end, running builds are stopped and stored, then the thread ends."""
        self.server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the command line ----------------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` subcommand's options."""
    from .._http_options import host_argument

    parser.add_argument(
        "--host", default="127.0.0.1", type=host_argument, help="address to bind (default 127.0.0.1: this machine only)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)")
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument("--token", metavar="T", help="the bearer token (visible in ps: prefer --token-file)")
    auth.add_argument("--token-file", metavar="F", help="file holding the bearer token")
    parser.add_argument("--max-upload", default=DEFAULT_MAX_UPLOAD, metavar="SIZE", help="largest model (default 2GiB)")
    parser.add_argument(
        "--max-concurrent",
        type=int,
        default=DEFAULT_MAX_CONCURRENT,
        metavar="N",
        help="builds at once (default 1: builds sharing a GPU disturb each other's tactic timing)",
    )
    parser.add_argument(
        "--executor",
        default="local",
        choices=("local", "ray"),
        help="where builds run: a warm builder process here (local), or a Ray task each (ray)",
    )
    parser.add_argument("--ray-address", metavar="ADDR", help="with --executor ray: the cluster (default: RAY_ADDRESS "
                        "or a local instance)")  # fmt: skip
    parser.add_argument("--body-timeout", type=float, default=30.0, metavar="S",
                        help="refuse (408) an upload that sends nothing for S seconds (default 30)")  # fmt: skip
    parser.add_argument("--min-upload-rate", default="16KiB", metavar="SIZE",
                        help="refuse (408) an upload slower than SIZE a second over a --body-timeout window "
                        "(default 16KiB; 0: no minimum)")  # fmt: skip
    parser.add_argument("--header-timeout", type=float, default=DEFAULT_HEADER_TIMEOUT_S, metavar="S",
                        help="close a connection that has not sent a complete request head within S seconds "
                        f"(default {DEFAULT_HEADER_TIMEOUT_S:g})")  # fmt: skip
    parser.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"open connections at most (default {DEFAULT_MAX_CONNECTIONS}, lowered below "
                        "ulimit -n); over it, the connection idle longest is closed")  # fmt: skip
    parser.add_argument("--data", metavar="DIR", help=f"uploads, events and engines (default {default_data_dir()})")
    parser.add_argument("--ssl-certfile", metavar="F", help="serve HTTPS with this certificate (with --ssl-keyfile)")
    parser.add_argument("--ssl-keyfile", metavar="F", help="the certificate's private key")
    parser.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))


def _check_tls(certfile: str, keyfile: str) -> None:
    """UsageError unless ``certfile`` and ``keyfile`` are regular files TLS can serve with: checked before anything
    listens (uvicorn loads them after the banner: a bad one ended in a traceback, a FIFO waited for ever)."""
    import ssl
    import stat

    for flag, path in (("--ssl-certfile", certfile), ("--ssl-keyfile", keyfile)):
        try:
            regular = stat.S_ISREG(os.stat(expand_user(path)).st_mode)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{flag} {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not regular:
            raise UsageError(f"{flag} {path}: not a regular file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            str(expand_user(certfile)), str(expand_user(keyfile))
        )
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise UsageError(
            f"--ssl-certfile {certfile} / --ssl-keyfile {keyfile}: not a PEM certificate and its private key ({exc})"
        ) from None


class UsageError(Exception):
    """A bad ``serve`` option (exit 2)."""


def _token(args: argparse.Namespace) -> tuple[str, str | None]:
    """(token, where it came from: None when generated here)."""
    if args.token is not None:
        token, source = args.token.strip(), "given with --token"
    elif args.token_file is not None:
        source = f"read from --token-file {args.token_file}"
        try:
            token = read_small_text(args.token_file, secret=True).strip()
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError, as is a '~user' with no user
            raise UsageError(f"cannot read --token-file {args.token_file}: {exc}") from None
    else:
        return secrets.token_urlsafe(32), None
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError("the token must be non-empty printable text without spaces")
    if len(token) < 16:
        print("trt-widget serve: warning: a token shorter than 16 characters is easy to guess", file=sys.stderr)
    return token, source


class _ConsoleFormatter(logging.Formatter):
    """trt_widget's own log records on the server's console: one line each, control characters escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(f"trt-widget serve: {record.levelname.lower()}: {super().format(record)}")


def _log_to_console(level: str) -> None:
    """Show trt_widget's log (e.g. a full data disk failing a build, the cause of a 500) on stderr at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_ConsoleFormatter("%(message)s"))
    if level != "debug":  # TensorRT's raw lines (a parser's assertion): a failed build's own line says the cause
        handler.addFilter(lambda record: not record.name.startswith(TENSORRT_LOGGER))
    log.addHandler(handler)
    log.setLevel(level.upper())


_QUERY_PAIR = re.compile(r"([?&;]|^)([^?&;=\s]*)=([^&;\s]*)")


def redact_token(text: str) -> str:
    """``text`` with the value of every query parameter named token shown as ``<redacted>``; the name is
    compared percent-decoded (``%74oken`` is ``token`` to the server), as the page's authentication reads it."""

    def one(match: re.Match[str]) -> str:
        name = match.group(2)
        for _ in range(4):  # decoded as often as a client may have encoded it (%2574oken is %74oken is token)
            name = unquote_plus(name)
        name = name.strip().lower()
        return f"{match.group(1)}{match.group(2)}=<redacted>" if "token" in name else match.group(0)

    return _QUERY_PAIR.sub(one, text) if "=" in text else text


class _RedactToken(logging.Filter):
    """Keep ``?token=`` (the page's URL), however percent-encoded, out of the access log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_token(a) if isinstance(a, str) else a for a in record.args)
        return True


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; returns the exit code (2 for bad usage)."""
    from .._options import parse_bytes

    try:
        if args.executor == "ray":
            try:
                import ray  # noqa: F401
            except ImportError:
                raise UsageError('--executor ray needs Ray: pip install "trt_widget[ray]"') from None
        elif args.ray_address:
            raise UsageError("--ray-address goes with --executor ray")
        if args.max_concurrent < 1:
            raise UsageError(f"--max-concurrent must be at least 1, got {args.max_concurrent}")
        if not 0 < args.body_timeout <= 3600:
            raise UsageError(f"--body-timeout must be more than 0 and at most 3600 s, got {args.body_timeout:g}")
        if not 0 < args.header_timeout <= 3600:
            raise UsageError(f"--header-timeout must be more than 0 and at most 3600 s, got {args.header_timeout:g}")
        if args.max_connections < 1:
            raise UsageError(f"--max-connections must be at least 1, got {args.max_connections}")
        if not 0 <= args.port <= 65535:
            raise UsageError(f"--port must be 0..65535, got {args.port}")
        if (args.ssl_certfile is None) != (args.ssl_keyfile is None):
            raise UsageError("--ssl-certfile and --ssl-keyfile go together")
        if args.ssl_certfile is not None:
            _check_tls(args.ssl_certfile, args.ssl_keyfile)
        try:
            max_upload = parse_bytes(args.max_upload, "--max-upload")
            no_minimum = args.min_upload_rate.strip() == "0"
            min_rate = 0 if no_minimum else parse_bytes(args.min_upload_rate, "--min-upload-rate")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        token, source = _token(args)
        try:
            import sse_starlette  # noqa: F401
            import starlette  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError as exc:
            raise UsageError(f'serve needs its extra: pip install "trt_widget[serve]" ({exc})') from None
    except UsageError as exc:
        say(f"trt-widget serve: error: {escape_controls(exc)}", sys.stderr)  # quotes paths: one line
        return 2
    try:
        data = expand_user(args.data) if args.data else default_data_dir()
    except ValueError as exc:
        say(f"trt-widget serve: error: --data {escape_controls(exc)}", sys.stderr)
        return 2
    if args.executor == "local":  # a Ray task builds where Ray runs it, with that machine's temporary folder
        from .._leftovers import temp_dir_refused

        refused = temp_dir_refused()
        if refused:  # said once here, not in every uploaded build's failure
            say(f"trt-widget serve: error: {escape_controls(refused)}", sys.stderr)
            return 2
    try:
        sock = _listen(args.host, args.port)
    except OSError as exc:  # the port is taken (another service, a second serve) or not ours to take
        from .._http_options import listen_failure

        say(f"trt-widget serve: error: {escape_controls(listen_failure(args.host, args.port, exc))}", sys.stderr)
        return 2  # before the app starts a builder: nothing to stop
    _log_to_console(args.log_level)
    try:
        store, app = _make_app(data, token, max_upload, args.max_concurrent, executor=args.executor,
                               ray_address=args.ray_address, body_timeout=args.body_timeout,
                               min_upload_rate=min_rate)  # fmt: skip
    except OSError as exc:  # --data cannot hold the service's files
        reason = f"{exc.filename}: {exc.strerror}" if exc.strerror and exc.filename else str(exc)
        say(f"trt-widget serve: error: --data {escape_controls(reason)}", sys.stderr)
        sock.close()
        return 2
    guard = _guard(args.max_connections, args.header_timeout)
    guard.console = True  # this process's console: every log line escaped
    scheme = "https" if args.ssl_certfile else "http"
    host = escape_controls(args.host if ":" not in args.host else f"[{args.host}]")  # as typed: one line
    url = f"{scheme}://{host}:{sock.getsockname()[1]}"
    finished = sum(1 for r in store.records() if r.final)
    shown = escape_controls(data)  # --data as typed: a newline in it forges no line
    say(
        f"trt-widget serve: {url}  (data {shown}, {finished} stored builds, at most {args.max_concurrent} concurrent, "
        f"uploads up to {max_upload:,} B, {guard.max_connections:,} connections)"
    )
    if source is None:
        say(f"token: {token}  (generated; --token-file keeps one across restarts)")
        print(f"page:  {url}/?token={token}", flush=True)
    else:  # a token the user keeps private is not copied into a console or a log
        say(f"token: {escape_controls(source)} (not shown)")  # names --token-file
        print(f"page:  {url}/?token=<the token>", flush=True)
    if args.host not in LOOPBACK and scheme == "http":
        say(
            f"trt-widget serve: warning: listening on {host} without TLS: the token crosses the network in clear "
            "text; use --ssl-certfile/--ssl-keyfile or a TLS proxy",
            sys.stderr,
        )
    logging.getLogger("uvicorn.access").addFilter(_RedactToken())
    config: ServerConfig = {"log_level": args.log_level, "timeout_graceful_shutdown": 10}
    if args.ssl_certfile:
        config["ssl_certfile"], config["ssl_keyfile"] = expand_user(args.ssl_certfile), expand_user(args.ssl_keyfile)
    server = _server(app, store, guard, **config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shut down gracefully, then raised the Ctrl-C it caught: 130, as mcp/lsp
        return 130
    return 0
