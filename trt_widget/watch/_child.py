"""The side of ``trt-widget run`` inside the command's Python processes (loaded by the injected sitecustomize).

At start-up: connect to the parent's socket, take SIGINT (a running watched build is cancelled at its next step
boundary; with none running, Ctrl-C is the usual KeyboardInterrupt), and hook the import of TensorRT: the
moment the code imports it, a process-wide watch opens and streams each build's events to the parent, one
JSON line per event with ``"build": n`` (n counts this process's builds) first. Nothing here may break the
command: every failure is one line on stderr and the command runs unwatched.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from .._python import hold_standard_fds

if TYPE_CHECKING:
    from .._json import JSONObject
    from ._build import WatchedBuild
    from ._watch import Watch

ENV_SOCKET = "TRT_WIDGET_RUN_SOCKET"
SETTLE_S = 5.0  # the longest a build's call waits for the parent to show its end (it takes milliseconds)
ABSTRACT = "@"  # an ENV_SOCKET address in Linux's abstract namespace (an environment variable holds no NUL byte)
TENSORRT_MODULES = ("tensorrt", "tensorrt_rtx_bindings", "tensorrt_rtx")


@dataclass
class _ChildState:
    """This process's side of the run: its connection to the parent (None: unwatched), the watch, the count."""

    watch: Watch | None = None
    conn: socket.socket | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0
    numbers: dict[int, int] = field(default_factory=dict)  # id(build) -> its number n (until it settled)
    shown: dict[int, threading.Event] = field(default_factory=dict)  # n -> set once the parent showed its end


_state = _ChildState()


def _say(text: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"trt-widget run: {text}\n")


def setup() -> None:
    """Called once per process by the injected sitecustomize."""
    if not os.environ.get(ENV_SOCKET) or _state.watch is not None:
        return
    hold_standard_fds()  # else the watch's connection or pipes could take a closed fd 0, 1 or 2
    try:
        conn = _connect()
    except OSError as exc:
        _say(f"cannot reach the parent ({exc}); this process runs unwatched")
        return
    from ._watch import Watch

    _import_ahead()
    watch = Watch(history=True, interrupt=False, process_wide=True, display=False)
    _state.conn, _state.lock, _state.watch, _state.count = conn, threading.Lock(), watch, 0
    _watch_parent(conn)
    watch.on_build(_stream)
    watch.settle = _settle
    atexit.register(_drain)
    os.register_at_fork(after_in_child=_after_fork)
    watch.take_sigint()
    if any(name in sys.modules for name in TENSORRT_MODULES):
        _open()
    else:
        sys.meta_path.insert(0, _ImportHook())


def _import_ahead() -> None:
    """Import now what a watched build imports later (history's sqlite3, psutil for the memory figures, the
    engine report, provenance's platform and zipfile): now, the script's folder (or the working directory) is
    not yet first on sys.path, so a ``sqlite3.py`` or ``platform.py`` of the user's is never taken for them."""
    with contextlib.suppress(Exception):
        from .. import _resources, engine, history, provenance  # noqa: F401
    with contextlib.suppress(Exception):
        import psutil  # noqa: F401
    try:  # NVML, imported on a GPU question during the build: the installed one, or none at all (not a
        import pynvml  # noqa: F401  # ``pynvml.py`` of the command's folder, which is first on sys.path later)
    except Exception:
        sys.modules.setdefault("pynvml", None)  # type: ignore[arg-type]  # a later import raises ImportError


def _connect() -> socket.socket:
    """A connection of this process's own to the parent (which closes its end only when it is gone, or after
    turning this process away: its death signal reaches only the command's first process)."""
    address = os.environ[ENV_SOCKET]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect("\0" + address[len(ABSTRACT) :] if address.startswith(ABSTRACT) else address)
    except OSError:
        conn.close()
        raise
    return conn


def _watch_parent(conn: socket.socket) -> None:
    """Once ``conn`` is this process's connection: a thread that ends the process when the parent is gone."""
    threading.Thread(target=_end_with_parent, args=(conn,), name="trt_widget-run-parent", daemon=True).start()


def _end_with_parent(conn: socket.socket) -> None:
    """What the parent says: ``E<n>\\n`` once it has shown build n's end, ``U`` to turn this process away (over
    its limits); the connection closing means the parent is gone."""
    pending = b""
    while True:
        try:
            said = conn.recv(256)
        except OSError:  # closed here (a fork child dropping its copy): not the parent's end
            return
        if _state.conn is not conn:
            return
        if not said:
            os.kill(os.getpid(), signal.SIGKILL)  # the parent is gone
            return
        pending += said
        while pending.startswith(b"E") and b"\n" in pending:
            line, _, pending = pending.partition(b"\n")
            _shown(line[1:])
        if pending.startswith(b"U") or (pending and not pending.startswith(b"E")) or len(pending) > 64:
            _state.conn = None  # unwatched from now on; the parent closes its end next
            _release()
            _say("the parent watches too many processes; this one runs unwatched")
            return


def _shown(number: bytes) -> None:
    """The parent has shown build ``number``'s end: its call may go on."""
    if number.isdigit():
        with _state.lock:
            shown = _state.shown.get(int(number))
        if shown is not None:
            shown.set()


def _release() -> None:
    """No parent will show a build's end (turned away): no call waits for it."""
    with _state.lock:
        waiting = list(_state.shown.values())
    for shown in waiting:
        shown.set()


def _settle(build: WatchedBuild) -> None:
    """Before the code goes on after a build: wait (at most ``SETTLE_S``) until the parent has drawn the build's
    end, so what the code writes next (a traceback, a line of its own) comes after the final tree, whole."""
    with _state.lock:
        n = _state.numbers.pop(id(build), None)
        shown = _state.shown.get(n) if n is not None else None
    if n is None or shown is None:
        return
    try:
        if _state.conn is not None:
            shown.wait(SETTLE_S)
    finally:
        with _state.lock:
            _state.shown.pop(n, None)


def _after_fork() -> None:
    """In a forked child (``multiprocessing``'s fork): its own connection, build count and list of builds, so the
    parent relays its builds apart from its parent process's (they shared one stream)."""
    old = _state.conn
    _state.lock = threading.Lock()
    _state.count = 0
    _state.numbers, _state.shown = {}, {}  # the parent's builds, not this process's
    watch = _state.watch
    if watch is None:
        return
    watch.builds = []
    watch._lock = threading.Lock()
    try:
        _state.conn = _connect()
        _watch_parent(_state.conn)
    except OSError as exc:
        _state.conn = None
        _say(f"cannot reach the parent from a forked process ({exc}); its builds run unwatched")
    if old is not None:
        with contextlib.suppress(OSError):
            old.close()
    if "multiprocessing" in sys.modules:  # its children end with os._exit, which runs no atexit hook
        with contextlib.suppress(Exception):
            from multiprocessing import util

            # registered once its child has cleared the finalizers it inherited (Process._bootstrap)
            util.register_after_fork(watch, _drain_at_child_exit)


def _drain_at_child_exit(_watch: Watch) -> None:
    from multiprocessing import util

    util.Finalize(None, _drain, exitpriority=100)


def _open() -> None:
    watch = _state.watch
    if watch is None or watch.active:
        return
    try:
        watch.active = True
        from . import _patch

        _patch.activate(watch, process_wide=True)
    except Exception as exc:
        watch.active = False
        _say(f"cannot watch TensorRT here ({type(exc).__name__}: {exc}); this process runs unwatched")


def _drain(timeout: float = 5.0) -> None:
    """At exit: let every build's stream reach its build_end (a script may exit right after its build)."""
    deadline = time.monotonic() + timeout
    for build in list(_state.watch.builds if _state.watch is not None else ()):
        stream = getattr(build, "events", None)
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.join(max(0.0, deadline - time.monotonic()))


def _stream(build: WatchedBuild) -> None:
    """Stream one caught build's events to the parent (on the events writer thread; never raises)."""
    from .._events import attach_events

    with _state.lock:
        n = _state.count
        _state.count = n + 1
        _state.numbers[id(build)] = n
        _state.shown[n] = threading.Event()
    attach_events(build, _writer(n, build))


def _writer(n: int, build: WatchedBuild) -> Callable[[JSONObject], None]:
    def write(event: JSONObject) -> None:
        event = {"build": n, **event}
        if event["event"] == "build_start":
            event["pid"] = os.getpid()
            event["method"] = build.method
        data = (json.dumps(event, default=str) + "\n").encode()
        with _state.lock, contextlib.suppress(OSError):  # the parent is gone: build unwatched
            if _state.conn is not None:  # None: turned away
                _state.conn.sendall(data)

    return write


class _ImportHook(importlib.abc.MetaPathFinder):
    """Opens the watch right after the code imports a TensorRT module (a lazy import costs the others nothing)."""

    def __init__(self) -> None:
        self._busy = False

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in TENSORRT_MODULES or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            return None
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _OpenAfter(spec.loader, self)
        return spec


class _OpenAfter(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, hook: _ImportHook) -> None:
        self._loader = loader
        self._hook = hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        if self._hook in sys.meta_path:
            sys.meta_path.remove(self._hook)
        _open()

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)
