"""``trt-widget run -- <command>`` / ``BuildWidget.run([...])``: a command whose Python processes are watched.

The command runs in its own session with a temporary directory first on its ``PYTHONPATH``: a sitecustomize
that loads :mod:`._child` (then the one it shadows), and, where ``tensorrt_rtx`` is not importable, a
``tensorrt_rtx`` alias of ``tensorrt_rtx_bindings`` (so Polygraphy with ``POLYGRAPHY_USE_TENSORRT_RTX=1``, set
for it, builds with TensorRT for RTX). Each Python process connects to a Unix socket here and streams its builds'
events; each build becomes a :class:`RelayedBuild` in this process (the same phase model, subscribe and front
ends as any build). Stop: SIGINT to the command's process group (builds cancel at their next step boundary);
a second Stop, or ``force_after`` seconds later, SIGTERM then SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import importlib.machinery
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .._build import Build
from .._engine import ModelSource
from .._errors import BuildCancelled, BuildError
from .._fork import PerProcess
from .._json import json_int
from .._leftovers import private_dir, remove_private_dir
from .._python import hold_standard_fds, parent_path, python_command
from .._status import LIVE, log
from ..runners import MAX_PHASES, FollowClock, RecordingError, RunContext, apply_event, check_event
from ._child import ABSTRACT, ENV_SOCKET
from ._watch import INTERRUPTED, BuildTimings, builds_timings, stop_notice

if TYPE_CHECKING:
    from typing_extensions import Self

    from .._json import JSONObject

TERM_GRACE_S = 0.2
RUN_PREFIX = "trt-widget-run-"  # its directory: RUN_PREFIX<pid>-<random>, swept once the process that made it ended
MAX_SOCKET_PATH = 100  # AF_UNIX addresses hold 108 bytes on Linux, 104 on macOS
# What a command may send (its processes are untrusted): bounded lines, checked events, bounded builds and threads
MAX_LINE_BYTES = 1 << 20  # one event, or one piece of a line of the command's stdout (as for a recording)
CHUNK_BYTES = 1 << 16  # the most of the command's output passed on at once when it goes on as read
MAX_NAME = 4096  # characters of a build's model name (as a recording's phase names)
MAX_CONNECTIONS = 256  # processes streaming at once (a reader thread each)
MAX_RELAYED_BUILDS = 1000  # builds per run (each is kept with its phases)
MAX_RUN_PHASES = MAX_PHASES  # phases of all builds of a run (as of one build: 1,000 builds of 200,000 held 200 M)
MAX_LIVE_BUILDS = 64  # builds running at once (two threads each here)
SHOW_END_S = 5.0  # how long a build's end may take to be shown before its process is told to go on anyway

# Every value goes in as ascii() of a str (or None) on a line of its own, never inside an f-string's braces: a
# literal for any path (quotes, backslashes, newlines, names that are not UTF-8), which 3.11's f-strings refuse.
SITECUSTOMIZE = '''"""Injected by trt-widget run: watch this process's TensorRT builds, run the shadowed one."""
import os as _os
import sys as _sys

_root = {root!a}  # the parent's trt_widget: the same version speaks the same events
_parent = {parent!a}  # trt-widget's interpreter, when its environment has a TensorRT module (else None)
_prefix = {prefix!a}
_hint = {activate!a}  # how to put that interpreter first on PATH

_here = _os.path.dirname(_os.path.abspath(__file__))
try:
    if _root not in _sys.path:
        _site = _os.path.basename(_root) in ("site-packages", "dist-packages")
        _sys.path.insert(len(_sys.path) if _site else 0, _root)
    from trt_widget.watch._child import setup as _setup

    _setup()
except Exception as _exc:  # never break the command
    if isinstance(_exc, ImportError) and _parent and _sys.prefix != _prefix:  # another python ran the command
        def _safe(text):
            return text if text.isprintable() else ascii(text)
        _lacks = ("has no TensorRT Python module" if type(_exc).__name__ == "BackendUnavailable" else
                  "cannot load trt_widget (" + _safe(f"{{type(_exc).__name__}}: {{_exc}}".splitlines()[0]) + ")")
        _sys.stderr.write(
            f"trt-widget run: cannot watch this process: the python that ran it, {{_safe(_sys.executable)}}, "
            f"{{_lacks}}, so its TensorRT builds are not shown. trt-widget runs from {{_safe(_parent)}}, which has "
            f"TensorRT: run the command with that python{{_safe(_hint)}}.\\n"
        )
    else:
        _sys.stderr.write(f"trt-widget run: cannot watch this process ({{type(_exc).__name__}}: {{_exc}})\\n")
try:
    import importlib.machinery as _machinery
    import importlib.util as _util

    def _injected(folder):  # ours (a watched command inside one has two): each would run the other, endlessly
        try:
            with open(_os.path.join(folder, "sitecustomize.py"), "rb") as _file:
                return _file.read(len(_MARK)) == _MARK
        except OSError:
            return False

    _MARK = b'"""Injected by trt-widget run: watch'
    _spec = _machinery.PathFinder.find_spec("sitecustomize", [p for p in _sys.path if p and
                                            _os.path.abspath(p) != _here and not _injected(p)])
    if _spec is not None and _spec.loader is not None:
        _module = _util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
except Exception as _exc:
    _sys.stderr.write(f"trt-widget run: the shadowed sitecustomize failed ({{type(_exc).__name__}}: {{_exc}})\\n")
'''

ALIAS = '''"""Injected by trt-widget run: tensorrt_rtx (what Polygraphy imports) is TensorRT for RTX's bindings."""
import sys

import tensorrt_rtx_bindings as _bindings

sys.modules[__name__] = _bindings
'''


class RelayRunner:
    """The runner of a build in the command's process: feeds its streamed events into the build here."""

    name = "relay"
    framed = False  # the events come framed from the command's process
    local = False  # the command's own TensorRT builds

    def __init__(self, clock: FollowClock) -> None:
        self.events: queue.SimpleQueue[JSONObject | None] = queue.SimpleQueue()  # None: the process ended
        self.clock = clock

    def run(self, ctx: RunContext) -> bytes | None:
        names: dict[int, str] = {}
        # the command's build starts now: its events are placed at their own times, not at their arrival (they
        # come in bursts), so every front end shows the durations the command's TensorRT measured
        origin = self.clock.restart(ctx.model, ctx.logger)
        while True:
            event = self.events.get()
            if event is None:
                if ctx.cancel.is_set():
                    ctx.note("the command ended before its build did")
                    return None
                raise BuildError("the command's process ended before its build did")
            if event.get("event") == "build_end":
                status = event.get("status")
                if status == "succeeded":
                    size = event.get("engine_bytes")
                    if json_int(size) and size >= 0:
                        ctx.on_engine_size(size)
                    return b""
                if status == "cancelled":
                    detail = str(event.get("detail") or "cancelled in the command")
                    if not (ctx.cancel.is_set() and detail == INTERRUPTED):  # not the echo of our own Stop's SIGINT
                        ctx.note(detail)
                    return None
                raise BuildError(str(event.get("error") or event.get("detail") or "the build failed"))
            try:
                t = event["t"]
                if not isinstance(t, (int, float)):
                    raise TypeError("an event's time is a number of seconds")
                at = origin + float(t)
                self.clock.advance_to(at)
                apply_event(event, ctx.model, ctx.logger, names, at=at)
            except (KeyError, TypeError, ValueError):  # a malformed line from the command: skip it
                log.debug("skipped a malformed event from the command: %r", event)


class RelayedBuild(Build):
    """A build made in the command's process, shown here."""

    def __init__(self, start: Mapping[str, object], index: int) -> None:
        clock = FollowClock()
        self.relay = RelayRunner(clock)
        self.pid = start.get("pid")
        self.index = index
        self.method = f"pid {self.pid}: {start.get('method', 'build')}"
        self.interrupted = False
        label = str(start.get("model") or "network")[:MAX_NAME]
        super().__init__(
            ModelSource("network", label.encode("utf-8", "surrogatepass"), label),
            runner=self.relay,
            clock=clock,
            history=False,
            resources=False,
            isolation="thread",
        )


def _backend_python() -> str | None:
    """This interpreter, when a TensorRT module is installed for it: a command's other python that lacks one is
    then told to use this one (not to install TensorRT)."""
    modules = ("tensorrt", "tensorrt_bindings", "tensorrt_rtx", "tensorrt_rtx_bindings")
    return sys.executable if any(importlib.machinery.PathFinder.find_spec(name) for name in modules) else None


def _activate() -> str:
    """How to put this environment's python first on PATH, for the message to a command run by another one."""
    script = Path(sys.prefix, "bin", "activate")
    return f", or activate its environment first (source {script})" if sys.prefix != sys.base_prefix else ""


def inject_dir(directory: Path) -> None:
    """Write the sitecustomize (and the tensorrt_rtx alias where needed) into ``directory``."""
    root = str(Path(__file__).resolve().parents[2])
    text = SITECUSTOMIZE.format(root=root, parent=_backend_python(), prefix=sys.prefix, activate=_activate())
    (directory / "sitecustomize.py").write_text(text, encoding="utf-8")
    # on the path, not sys.modules: this process may hold an alias (alias_tensorrt_rtx) the command will not
    needs_alias = importlib.machinery.PathFinder.find_spec("tensorrt_rtx") is None
    if needs_alias and importlib.machinery.PathFinder.find_spec("tensorrt_rtx_bindings") is not None:
        (directory / "tensorrt_rtx.py").write_text(ALIAS, encoding="utf-8")


class CommandRun:
    """A command run with its TensorRT builds watched; a Future of its exit code (``result()``, ``await``).

    ``builds``, ``on_build``, ``stop`` and ``timings`` as a :class:`~trt_widget.watch.Watch` has them, so the
    watch widget and the terminal draw it. ``force_after``: seconds after the first stop until the command is
    terminated (None: only a second stop terminates it). ``on_output`` / ``on_errors`` get the command's stdout /
    stderr by whole lines, or with ``whole_lines=False`` as read, byte for byte."""

    what = "the command"  # how its notices name it

    def __init__(
        self,
        command: Sequence[str],
        *,
        force_after: float | None = None,
        env: dict[str, str] | None = None,
        on_output: Callable[[bytes], None] | None = None,
        on_errors: Callable[[bytes], None] | None = None,
        whole_lines: bool = True,
    ):
        if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
            raise TypeError("the command must be a non-empty list of strings, e.g. ['python', 'build.py']")
        self.command = list(command)
        self.force_after = force_after
        self.builds: list[RelayedBuild] = []
        self.future: Future[int] = Future()
        self.stops = 0
        self.forced = False
        self.sent: set[int] = set()  # the signals a stop of ours sent the command's group
        self.returncode: int | None = None  # the exit code (128 + the signal when a signal ended it)
        self.stopped_at: float | None = None  # time.monotonic() of the first stop
        self.stop_reason = ""  # what the first stop said (its builds' and the result's words)
        self.ended_at: float | None = None  # ... and of the command's end
        self._env = env
        self._on_output = on_output  # the command's stdout, a whole line per call (else it inherits ours)
        self._on_errors = on_errors  # ... and its stderr
        self._whole_lines = whole_lines  # False: the bytes as read instead, exactly as the command wrote them
        self._listeners: list[Callable[[RelayedBuild], None]] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        # 0700: the injected code, the socket, a ProcessCall's pickles; on PYTHONPATH, which no folder holding
        # os.pathsep can be on (a TMPDIR with ':', or one linking to such a folder, watched nothing): /tmp then, as
        # for a socket path too long; the real path, as private_dir makes the folder there
        parent = "/tmp" if os.name == "posix" and os.pathsep in os.path.realpath(tempfile.gettempdir()) else None
        self._dir = private_dir(RUN_PREFIX, parent)
        self._dirs = [self._dir]
        self._cleanup = weakref.finalize(self, _remove, self._dirs)  # at the end, at exit, or when collected
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._abstract = False  # the socket has no file: its peers' credentials are checked
        self._readers: list[threading.Thread] = []
        self._warned: set[str] = set()  # the limits reached (one log line each)
        self._phases = 0  # phases started in the builds shown, all processes together (at most MAX_RUN_PHASES)
        # each event as the command sent it, "build" renumbered for the run (on a reader thread)
        self.on_event: Callable[[dict[str, object]], None] | None = None
        # called (on a thread of its own) once a build ended, before its process is told to go on: a front end
        # draws the build's end here, so what the command writes after its build comes after that, not inside it
        self.show_end: Callable[[RelayedBuild], None] | None = None

    # -- life cycle -------------------------------------------------------------------------------------
    def start(self) -> Self:
        directory = Path(self._dir)
        inject_dir(directory)
        address = self._listen(directory)
        env = environment_as_given() if self._env is None else dict(self._env)
        env["PYTHONPATH"] = os.pathsep.join([str(directory), *filter(None, [env.get("PYTHONPATH")])])
        env[ENV_SOCKET] = address
        from .._backend import select_backend

        if select_backend()[0] == "rtx":
            env.setdefault("POLYGRAPHY_USE_TENSORRT_RTX", "1")
        self.future.set_running_or_notify_cancel()
        threading.Thread(target=self._accept, name="trt_widget-run-accept", daemon=True).start()
        if self._on_output is not None or self._on_errors is not None:
            env.setdefault("PYTHONUNBUFFERED", "1")  # its lines as it writes them, not when a buffer fills
        command, hint = _resolved(self.command, env.get("PATH"))
        try:
            stdout = subprocess.PIPE if self._on_output is not None else None
            stderr = subprocess.PIPE if self._on_errors is not None else None
            self._proc = _launch(command, env, stdout, stderr)
        except OSError as exc:
            self._server.close()
            self._cleanup()
            said = f"cannot run {self.command[0]!r}: {exc.strerror or exc}"
            self.future.set_exception(BuildError(said + (f" ({hint})" if hint else "")))
            return self
        _live.get().add(self)
        for stream, callback in ((self._proc.stdout, self._on_output), (self._proc.stderr, self._on_errors)):
            if stream is not None and callback is not None:
                relay = _relay_lines if self._whole_lines else _relay_bytes
                output = threading.Thread(
                    target=relay, args=(stream, callback), name="trt_widget-run-output", daemon=True
                )
                self._readers.append(output)
                output.start()
        threading.Thread(target=self._wait, name="trt_widget-run-wait", daemon=True).start()
        return self

    def _listen(self, directory: Path) -> str:
        """Listen where the command's processes connect; returns the address they are given (``ENV_SOCKET``): a
        socket file in the run's directory, or where that path is too long for AF_UNIX (a long ``TMPDIR``, common
        on CI) a name in Linux's abstract namespace (no file: only this user's processes are let in), elsewhere a
        socket file in a short directory under /tmp."""
        path = str(directory / "events.sock")
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            if sys.platform.startswith("linux"):
                path = ABSTRACT + f"{RUN_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
                self._abstract = True
            else:
                short = private_dir(RUN_PREFIX, "/tmp")
                self._dirs.append(short)
                path = os.path.join(short, "s")
        self._server.bind("\0" + path[len(ABSTRACT) :] if self._abstract else path)
        self._server.listen(16)
        return path

    def _peer_allowed(self, conn: socket.socket) -> bool:
        """Anyone on the host may connect to an abstract socket: only this user's (or root's) processes may send."""
        if not self._abstract:
            return True  # a socket file in a 0700 directory
        try:
            _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        except OSError:
            return False
        return uid in (os.getuid(), 0)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed: the command ended
                return
            if not self._peer_allowed(conn):
                log.warning("trt-widget run: refused a connection from another user's process")
                _turn_away(conn)
                continue
            self._readers = [r for r in self._readers if r.is_alive()]
            if len(self._readers) >= MAX_CONNECTIONS:
                self._warn_once("connections", f"more than {MAX_CONNECTIONS} processes at once; later ones unwatched")
                _turn_away(conn)
                continue
            reader = threading.Thread(target=self._read, args=(conn,), name="trt_widget-run-read", daemon=True)
            self._readers.append(reader)
            reader.start()

    def _warn_once(self, key: str, text: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("trt-widget run: %s", text)

    def _read(self, conn: socket.socket) -> None:
        """One process's events (untrusted: each line bounded, each event checked as a recording's is)."""
        builds: dict[int, RelayedBuild] = {}
        depths: dict[int, dict[int, int]] = {}  # check state of the builds shown only (bounded as they are)
        phases: dict[int, int] = {}  # phases started, per build shown (at most MAX_PHASES each)
        ended: set[int] = set()  # builds shown here whose end came
        given_up: set[int] = set()  # builds shown here that sent too many phases
        sending = threading.Lock()  # the acks of several builds' ends
        with conn, conn.makefile("rb") as lines:
            for number, raw in enumerate(_bounded_lines(lines), 1):
                try:
                    event = json.loads(raw)
                    n = int(event.pop("build"))
                    check_event(event, "the command's event", number, depths.get(n, {}) if n in builds else {})
                except (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError, RecordingError):
                    continue  # OverflowError: {"build": Infinity}; RecursionError: a line of 100,000 brackets
                if n in given_up:
                    if event.get("event") == "build_end":
                        _ack(conn, sending, n)  # its call goes on now
                    continue
                if n in builds and n not in ended and event.get("event") == "phase_start":
                    phases[n] = phases.get(n, 0) + 1
                    error = (
                        f"the command's build sent more than {MAX_PHASES:,} phases; given up"
                        if phases[n] > MAX_PHASES
                        else self._past_run_phases()
                    )
                    if error:  # as a build server's stream: failed here, its later events dropped
                        given_up.add(n)
                        depths.pop(n, None)
                        end: JSONObject = {"event": "build_end", "t": 0.0, "status": "failed", "error": error}
                        builds[n].relay.events.put(end)
                        with contextlib.suppress(Exception):
                            if self.on_event is not None:  # the JSON stream's end of the build
                                self.on_event({"build": builds[n].index, **end})
                        continue
                try:
                    self._relay(conn, sending, event, n, builds, ended)
                    if n in builds and n not in ended:
                        depths.setdefault(n, {})
                    elif event.get("event") == "build_end":
                        depths.pop(n, None)
                except Exception as exc:  # one bad event is dropped, never the reader (and the process's builds)
                    self._warn_once("event", f"an event of the command could not be shown ({type(exc).__name__})")
                    log.debug("dropped an event of the command: %r", event, exc_info=True)
        for build in builds.values():  # the process ended (or closed the socket): builds still open fail
            build.relay.events.put(None)

    def _relay(
        self,
        conn: socket.socket,
        sending: threading.Lock,
        event: JSONObject,
        n: int,
        builds: dict[int, RelayedBuild],
        ended: set[int],
    ) -> None:
        """Show one checked event of the process's build ``n``: a new build at its start, else to its build."""
        if event.get("event") == "build_start":
            if n in builds:
                return
            build = self._new_build(event)
            if build is None:
                return
            builds[n] = build
        elif n in ended:
            return  # after its end: a build's events stop, its end is acknowledged once
        elif n in builds:
            builds[n].relay.events.put(event)
            if event.get("event") == "build_end":
                ended.add(n)
                self._ack_when_shown(conn, sending, n, builds[n])
        else:
            if event.get("event") == "build_end":  # a build not shown here: its call goes on now
                _ack(conn, sending, n)
            return
        if self.on_event is not None:
            try:
                self.on_event({"build": builds[n].index, **event})
            except Exception:
                log.debug("an on_event callback failed", exc_info=True)

    def _ack_when_shown(self, conn: socket.socket, sending: threading.Lock, n: int, build: RelayedBuild) -> None:
        """Tell the process its build ``n`` may go on once the build ended here and ``show_end`` drew it (the
        process waits for this at most ``_child.SETTLE_S``)."""

        def ack() -> None:
            build.wait(SHOW_END_S)
            if self.show_end is not None:
                try:
                    self.show_end(build)
                except Exception:
                    log.debug("a show_end callback failed", exc_info=True)
            _ack(conn, sending, n)

        threading.Thread(target=ack, name="trt_widget-run-shown", daemon=True).start()

    def _past_run_phases(self) -> str:
        """Count one more phase of a shown build: past ``MAX_RUN_PHASES`` in all, why its build is given up (the
        builds started after it are not shown: one warning), else ""."""
        with self._lock:
            self._phases += 1
            if self._phases <= MAX_RUN_PHASES:
                return ""
        self._warn_once(
            "phases", f"more than {MAX_RUN_PHASES:,} phases in all builds; the build past it failed, later ones unshown"
        )
        return f"the command's builds sent more than {MAX_RUN_PHASES:,} phases in all; given up"

    def _new_build(self, start: Mapping[str, object]) -> RelayedBuild | None:
        with self._lock:
            if self._phases > MAX_RUN_PHASES:
                return None  # after the warning of _past_run_phases
            if len(self.builds) >= MAX_RELAYED_BUILDS:
                self._warn_once("builds", f"more than {MAX_RELAYED_BUILDS} builds; later ones are not shown")
                return None
            if sum(b.status in LIVE for b in self.builds) >= MAX_LIVE_BUILDS:
                self._warn_once("live", f"more than {MAX_LIVE_BUILDS} builds at once; the others are not shown")
                return None
            build = RelayedBuild(start, len(self.builds))
            self.builds.append(build)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(build)
            except Exception:
                log.exception("a run listener failed for %r", build)
        if self.stops:
            build.interrupted = True
        build.start()
        return build

    def _wait(self) -> None:
        assert self._proc is not None
        code = self._proc.wait()
        self.ended_at = time.monotonic()
        for reader in list(self._readers):
            reader.join(5.0)
        self._server.close()
        for build in list(self.builds):
            build.relay.events.put(None)
            build.wait(5.0)
        self.returncode = code if code >= 0 else 128 - code
        _live.get().discard(self)
        try:
            settle = self._finished(self.returncode)
        finally:
            self._cleanup()  # before the future settles: whoever waits on it finds the directory gone
        settle()

    def _finished(self, code: int) -> Callable[[], None]:
        """The command ended with exit code ``code``: how to settle the future, read while the temporary directory
        still exists and called once it is removed."""
        return functools.partial(self.future.set_result, code)

    # -- control ----------------------------------------------------------------------------------------
    def on_build(self, fn: Callable[[RelayedBuild], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(fn)

        def remove() -> None:
            with self._lock:
                if fn in self._listeners:
                    self._listeners.remove(fn)

        return remove

    def stop(
        self, reason: str = "stopped by user", said: Callable[[str], object] | None = None, *, again: str = "stop again"
    ) -> str:
        """First: SIGINT to the command (its running builds cancel at their next step boundary); then, after
        ``force_after`` s or at a second stop, terminate it. ``reason``: what the builds say ended them (the
        terminal passes "interrupted (Ctrl-C)", a widget's button "stopped by user (Stop all)"). Returns what it
        does, in words, also given to ``said`` before it acts (the builds' summaries come after it, in order).
        ``again``: how the user stops a second time, in the words of where they are ("Ctrl-C again" in a terminal)."""
        proc = self._proc
        what = self.what
        if proc is None or proc.poll() is not None:
            return _said(f"{what} has ended", said)
        self.stops += 1
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
            self.stop_reason = reason
        if self.stops > 1:
            notice = _said(f"Terminating {what}", said)
            self.terminate()
            return notice
        running = [b for b in self.builds if b.status in LIVE]
        if self.force_after is not None:
            notice = stop_notice(running) + f"; {what} is terminated if it still runs after {self.force_after:g} s"
        else:
            notice = stop_notice(running) + f"; {again} to terminate {what}"
        _said(notice, said)
        for build in running:
            build.interrupted = True
            build.stop(reason)
        self._signal(signal.SIGINT)
        if self.force_after is not None:
            timer = threading.Timer(self.force_after, self.terminate)
            timer.daemon = True
            timer.start()
        return notice

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """``sig`` (SIGTERM) to the command's process group, SIGKILL after a moment."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self.forced = True
        self._signal(sig)
        try:
            proc.wait(TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        assert self._proc is not None
        self.sent.add(sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    # -- results ----------------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def done(self) -> bool:
        return self.future.done()

    def ended_words(self) -> str:
        """How the command ended, in words: its exit code, and the signal a code of 128 + N names, with who sent
        it ("the command was ended by SIGTERM (exit code 143), sent by Stop all")."""
        code = self.returncode
        if code is None:
            return f"{self.what} has not ended"
        name = signal_name(code - 128)
        if name is None:
            return f"{self.what} exited with code {code}"
        if code - 128 not in self.sent:  # a signal from elsewhere, or a command that exits with that code itself
            return f"{self.what} exited with code {code}, the code of a process ended by {name} (trt_widget sent none)"
        said = f"{self.what} was ended by {name} (exit code {code})"
        asked = re.search(r"\(([^()]+)\)$", self.stop_reason)  # "stopped by user (Stop all)" -> Stop all
        return f"{said}, sent by {asked.group(1) if asked else 'the stop'}"

    def result(self, timeout: float | None = None) -> int:
        """The command's exit code (128 + the signal when a signal ended it)."""
        return self.future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self.future.exception(timeout)

    def add_done_callback(self, fn: Callable[[CommandRun], object]) -> None:
        self.future.add_done_callback(lambda _f: fn(self))

    def timings(self) -> list[BuildTimings]:
        return builds_timings(self.builds)

    def __await__(self) -> Generator[object, None, int]:
        import asyncio

        return asyncio.wrap_future(self.future).__await__()

    def __repr__(self) -> str:
        state = f"exit {self.future.result()}" if self.future.done() else "running"
        return f"<CommandRun {' '.join(self.command)!r} {state} builds={len(self.builds)}>"


_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")  # what Python's locale coercion (PEP 538) sets LC_CTYPE to


def environment_as_given() -> dict[str, str]:
    """``os.environ`` as the user gave it to this process: less the ``LC_CTYPE`` Python's locale coercion put
    there at start where there was no locale (a command run directly has none), as ``/proc`` still shows it."""
    env = dict(os.environ)
    value = env.get("LC_CTYPE")
    if value not in _COERCED:
        return env
    try:
        with open("/proc/self/environ", "rb") as f:
            given = dict(item.partition(b"=")[::2] for item in f.read().split(b"\0"))
    except OSError:  # no /proc: as it is
        return env
    original = given.get(b"LC_CTYPE")
    if original is None:
        del env["LC_CTYPE"]
    elif original != os.fsencode(value):
        env["LC_CTYPE"] = os.fsdecode(original)
    return env


def _ack(conn: socket.socket, sending: threading.Lock, n: int) -> None:
    """Tell the command's process that its build ``n``'s end is shown (``_child._end_with_parent`` reads it)."""
    with sending, contextlib.suppress(OSError):  # the process has gone: nobody waits
        conn.sendall(b"E%d\n" % n)


def _turn_away(conn: socket.socket) -> None:
    """Close a connection this run does not read, after one byte that tells the process to go on unwatched (its
    connection closing without it means the parent is gone, and the process ends: ``_child._end_with_parent``)."""
    with contextlib.suppress(OSError):
        conn.sendall(b"U")
    conn.close()


def _relay_lines(stream: IO[bytes], callback: Callable[[bytes], None]) -> None:
    """Pass a stream of the command's on by whole lines (a last line without one gets its newline), so a line of
    our own (a JSON event, the live tree) never lands inside one of the command's; a line longer than
    ``MAX_LINE_BYTES`` is passed on in pieces of that size, each ended by a newline (memory stays bounded)."""
    with stream:
        for line in iter(lambda: stream.readline(MAX_LINE_BYTES), b""):
            try:
                callback(line if line.endswith(b"\n") else line + b"\n")
            except Exception:
                log.debug("the output callback failed", exc_info=True)


def _relay_bytes(stream: IO[bytes], callback: Callable[[bytes], None]) -> None:
    """Pass a stream of the command's on as it is read, byte for byte (``run --json`` puts its stdout on stderr),
    at most ``CHUNK_BYTES`` a call: a long line is never held whole, and nothing is added to it."""
    with stream:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, CHUNK_BYTES)
            except OSError:
                return
            if not chunk:
                return
            try:
                callback(chunk)
            except Exception:
                log.debug("the output callback failed", exc_info=True)


def _bounded_lines(stream: IO[bytes]) -> Generator[bytes, None, None]:
    """The lines of a binary stream; one longer than ``MAX_LINE_BYTES`` is skipped whole (read in pieces). A
    connection reset (a process that ended with an acknowledgement unread) ends the stream as its end does."""
    with contextlib.suppress(OSError):
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) <= MAX_LINE_BYTES:
                yield line
                continue
            while line and not line.endswith(b"\n"):
                line = stream.readline(MAX_LINE_BYTES)


def _remove(directories: list[str]) -> None:
    for directory in directories:
        remove_private_dir(directory)


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()
PR_SET_PDEATHSIG = 1
# Linux sends a child its death signal when the *thread* that started it ends: commands start on this one, which
# lives as long as the process. A forked child (a ``multiprocessing`` worker) gets its own: the parent's launcher
# thread is not there, and its executor, which counts it idle, would never start one (the commands would wait)
_launcher = PerProcess(lambda: ThreadPoolExecutor(1, thread_name_prefix="trt_widget-run-launch"))


def signal_name(number: int) -> str | None:
    """A signal's name (15 -> "SIGTERM"), or None where ``number`` names none (an exit code of 128 + N says N)."""
    try:
        return signal.Signals(number).name if number > 0 else None
    except ValueError:
        return None


def _launch(
    command: list[str], env: dict[str, str], stdout: int | None, stderr: int | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session; on Linux under a supervisor (``_supervisor.py``) that the kernel
    signals when this process dies (even by SIGKILL: a kernel restart) and that then kills the command's whole
    process group, so neither the command nor what it started (a shell's ``sleep``) outlives whoever watches it."""
    parent = os.getpid()

    def die_with_parent() -> None:  # in the child, between fork and exec: no imports, no allocation to speak of
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # the parent died before the call
                os._exit(137)

    if _PRCTL is None or not sys.executable:  # no supervisor: the command's group ends with us unless SIGKILLed
        return subprocess.Popen(command, env=env, start_new_session=True, stdout=stdout, stderr=stderr)
    hold_standard_fds()  # a pipe on a closed fd 0, 1 or 2 would be the command's stdin or stdout
    report, to_report = os.pipe()  # the supervisor writes errno here when the command cannot start

    def popen() -> subprocess.Popen[bytes]:
        supervised = [sys.executable, "-I", "-S", SUPERVISOR, str(parent), str(to_report), *command]
        return subprocess.Popen(
            supervised,
            env=env,
            start_new_session=True,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=die_with_parent,
            pass_fds=[to_report],
        )

    try:
        try:
            proc = _launcher.get().submit(popen).result()
        except RuntimeError:  # the interpreter is exiting (no new threads): start it here
            proc = popen()
    finally:
        os.close(to_report)
    with open(report, "rb") as f:
        error = f.read()  # empty once the command runs (or the supervisor could not start: its exit code says)
    if error:
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        number = int(error) if error.isdigit() else errno.ENOEXEC
        raise OSError(number, os.strerror(number), command[0])
    return proc


SUPERVISOR = str(Path(__file__).with_name("_supervisor.py"))


def _resolved(command: list[str], path: str | None) -> tuple[list[str], str]:
    """``command``, its program taken from this Python's own environment (``sys.prefix``'s bin, where pip put
    ``polygraphy``) when the command's PATH does not hold it: a Jupyter kernel's venv is often not on its PATH.
    Also what to say if it cannot start: where it was looked for."""
    name = command[0] if command else ""
    if not name or os.sep in name or (os.altsep and os.altsep in name) or shutil.which(name, path=path):
        return command, ""
    own = [Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin")]
    folders = dict.fromkeys([*own, *([Path(sys.executable).parent] if sys.executable else [])])
    for folder in folders:
        found = shutil.which(name, path=str(folder))
        if found:
            return [found, *command[1:]], ""
    where = " or ".join(str(f) for f in folders)
    return command, f"not on PATH, nor in {where}: install it into this environment or give its full path"


# commands started here and not ended: a forked child's own, never its parent's (its end must not end those)
_live: PerProcess[weakref.WeakSet[CommandRun]] = PerProcess(weakref.WeakSet)


def _end_commands_at_exit() -> None:
    """At this interpreter's exit: end the commands still running (a script that ends after ``BuildWidget.run`` or
    ``watch_call(..., isolation="process")`` ends them too) and remove their directories. Only this process's
    own: a forked child (a ``multiprocessing`` worker) that ends leaves its parent's commands running."""
    for run in list(_live.get()):
        with contextlib.suppress(Exception):
            run.terminate()
        with contextlib.suppress(Exception):
            if run._proc is not None:
                run._proc.wait(1.0)
        run._cleanup()
        # the wait thread may hold the finalizer, not yet run, when the command ends now: a daemon thread, it
        # stops with the interpreter, so the directories are removed here too (rmtree of a gone tree: nothing)
        _remove(run._dirs)


getattr(threading, "_register_atexit", lambda fn: None)(_end_commands_at_exit)


def run_command(command: Sequence[str], *, force_after: float | None = None) -> CommandRun:
    """Start ``command`` with its TensorRT builds watched (see :class:`CommandRun`)."""
    return CommandRun(command, force_after=force_after).start()


def wait_quietly(run: CommandRun, poll: float = 0.2) -> int:
    """Wait for the command's exit code, waking every ``poll`` s so signal handlers run."""
    while not run.done():
        time.sleep(poll)
    return run.result()


CALL_CHILD = """
import json
import os
import sys

sys.path.extend(p for p in json.loads(sys.argv[3]) if p not in sys.path)  # the caller's modules, after ours
import cloudpickle

with open(sys.argv[1], "rb") as f:
    fn, args, kwargs = cloudpickle.load(f)
os.unlink(sys.argv[1])  # the pickled function and its arguments stay on disk no longer than needed
try:
    outcome = ("value", fn(*args, **kwargs))
except BaseException as exc:  # KeyboardInterrupt too: the Stop's SIGINT cancelled a build
    outcome = ("error", exc)
try:
    data = cloudpickle.dumps(outcome)
except Exception as exc:
    data = cloudpickle.dumps(("error", TypeError(f"the function's result cannot be sent back: {exc}")))
with open(sys.argv[2], "wb") as f:
    f.write(data)
"""


class ProcessCall(CommandRun):
    """``fn(*args, **kwargs)`` in a fresh Python process (cloudpickle), its builds watched as ``trt-widget run``
    does; ``result()`` is fn's return value (sent back) or its exception. Stop cancels at the next step boundary
    and terminates the process ``force_after`` s later: a force stop, as a Build's builder process has."""

    what = "the function's process"

    def __init__(
        self,
        fn: Callable[..., object],
        args: tuple[object, ...],
        kwargs: dict[str, object],
        *,
        force_after: float = 0.5,
        on_output: Callable[[bytes], None] | None = None,
        on_errors: Callable[[bytes], None] | None = None,
    ) -> None:
        import cloudpickle

        name = getattr(fn, "__qualname__", repr(fn))
        try:
            payload = cloudpickle.dumps((fn, args, kwargs))
        except Exception as exc:
            raise TypeError(
                f"{name} and its arguments cannot be sent to a builder process: {exc}. Everything they refer to "
                "must be picklable (no open files, locks, sockets or TensorRT objects); or use isolation='thread'"
            ) from exc
        # not from the working directory; on_output / on_errors: the process's stdout / stderr, by whole lines
        super().__init__(python_command(CALL_CHILD), force_after=force_after, on_output=on_output, on_errors=on_errors)
        self.fn = fn
        directory = Path(self._dir)
        (directory / "call.pkl").write_bytes(payload)
        self.command += [str(directory / "call.pkl"), str(directory / "result.pkl"), json.dumps(parent_path())]

    def result(self, timeout: float | None = None) -> object:  # type: ignore[override]  # fn's value, not an exit code
        """fn's return value, sent back from its process; raises its exception (BuildCancelled after a Stop)."""
        return self.future.result(timeout)

    def _finished(self, code: int) -> Callable[[], None]:
        import cloudpickle

        result = Path(self._dir) / "result.pkl"
        try:
            kind, value = cloudpickle.loads(result.read_bytes())
        except FileNotFoundError:
            if self.stops:
                return self._fail(BuildCancelled("stopped: the function's process was terminated"))
            return self._fail(BuildError(f"the function's process ended (exit code {code}) without a result"))
        except Exception as exc:
            return self._fail(BuildError(f"the function's result could not be read back: {exc}"))
        if kind == "value":
            return functools.partial(self.future.set_result, value)
        if isinstance(value, KeyboardInterrupt) and self.stops:
            return self._fail(BuildCancelled(f"stopped: {self.stop_reason or value}"))
        if isinstance(value, BuildCancelled) and self.stops and self.stop_reason:
            # the function's process saw only the SIGINT a Stop sends: say what the Stop was
            said = str(value).replace(INTERRUPTED, self.stop_reason)
            return self._fail(BuildCancelled(said).with_traceback(value.__traceback__))
        return self._fail(value)

    def _fail(self, exc: BaseException) -> Callable[[], None]:
        return functools.partial(self.future.set_exception, exc)


def _said(notice: str, said: Callable[[str], object] | None) -> str:
    """``notice``, given to ``said`` first where there is one."""
    if said is not None:
        said(notice)
    return notice
