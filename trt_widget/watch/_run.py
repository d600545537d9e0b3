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
import importlib.machinery
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .._build import Build
from .._engine import ModelSource
from .._errors import BuildCancelled, BuildError
from .._status import LIVE, log
from ..runners import RunContext, apply_event
from ._child import ENV_SOCKET
from ._watch import builds_timings, stop_notice

TERM_GRACE_S = 0.2

SITECUSTOMIZE = '''"""Injected by trt-widget run: watch this process's TensorRT builds, run the shadowed one."""
import os as _os
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))
try:
    _root = {root!r}  # the parent's trt_widget: the same version speaks the same events
    if _root not in _sys.path:
        _site = _os.path.basename(_root) in ("site-packages", "dist-packages")
        _sys.path.insert(len(_sys.path) if _site else 0, _root)
    from trt_widget.watch._child import setup as _setup

    _setup()
except Exception as _exc:  # never break the command
    _sys.stderr.write(f"trt-widget run: cannot watch this process ({{type(_exc).__name__}}: {{_exc}})\\n")
try:
    import importlib.machinery as _machinery
    import importlib.util as _util

    _spec = _machinery.PathFinder.find_spec("sitecustomize", [p for p in _sys.path if p and
                                            _os.path.abspath(p) != _here])
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

    def __init__(self) -> None:
        self.events: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()  # None: the process ended

    def run(self, ctx: RunContext) -> bytes | None:
        names: dict[int, str] = {}
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
                    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
                        ctx.on_engine_size(size)
                    return b""
                if status == "cancelled":
                    ctx.note(str(event.get("detail") or "cancelled in the command"))
                    return None
                raise BuildError(str(event.get("error") or event.get("detail") or "the build failed"))
            try:
                apply_event(event, ctx.model, ctx.logger, names)
            except (KeyError, TypeError, ValueError):  # a malformed line from the command: skip it
                log.debug("skipped a malformed event from the command: %r", event)


class RelayedBuild(Build):
    """A build made in the command's process, shown here."""

    def __init__(self, start: dict[str, Any], index: int) -> None:
        self.relay = RelayRunner()
        self.pid = start.get("pid")
        self.index = index
        self.method = f"pid {self.pid}: {start.get('method', 'build')}"
        self.interrupted = False
        label = str(start.get("model") or "network")
        super().__init__(
            ModelSource("network", label.encode(), label),
            runner=self.relay,
            history=False,
            resources=False,
            isolation="thread",
        )


def inject_dir(directory: Path) -> None:
    """Write the sitecustomize (and the tensorrt_rtx alias where needed) into ``directory``."""
    root = str(Path(__file__).resolve().parents[2])
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE.format(root=root), encoding="utf-8")
    # on the path, not sys.modules: this process may hold an alias (alias_tensorrt_rtx) the command will not
    needs_alias = importlib.machinery.PathFinder.find_spec("tensorrt_rtx") is None
    if needs_alias and importlib.machinery.PathFinder.find_spec("tensorrt_rtx_bindings") is not None:
        (directory / "tensorrt_rtx.py").write_text(ALIAS, encoding="utf-8")


class CommandRun:
    """A command run with its TensorRT builds watched; a Future of its exit code (``result()``, ``await``).

    ``builds``, ``on_build``, ``stop`` and ``timings`` as a :class:`~trt_widget.watch.Watch` has them, so the
    watch widget and the terminal draw it. ``force_after``: seconds after the first stop until the command is
    terminated (None: only a second stop terminates it)."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        force_after: float | None = None,
        env: dict[str, str] | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ):
        if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
            raise TypeError("the command must be a non-empty list of strings, e.g. ['python', 'build.py']")
        self.command = list(command)
        self.force_after = force_after
        self.builds: list[RelayedBuild] = []
        self.future: Future[int] = Future()
        self.stops = 0
        self.forced = False
        self.returncode: int | None = None  # the exit code (128 + the signal when a signal ended it)
        self.stopped_at: float | None = None  # time.monotonic() of the first stop
        self.ended_at: float | None = None  # ... and of the command's end
        self._env = env
        self._on_output = on_output  # the command's stdout, a whole line per call (else it inherits ours)
        self._listeners: list[Callable[[Any], None]] = []
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="trt-widget-run-")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._readers: list[threading.Thread] = []
        # each event as the command sent it, "build" renumbered for the run (on a reader thread)
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # -- life cycle -------------------------------------------------------------------------------------
    def start(self) -> CommandRun:
        directory = Path(self._tmp.name)
        inject_dir(directory)
        path = str(directory / "events.sock")
        self._server.bind(path)
        self._server.listen(16)
        env = dict(os.environ if self._env is None else self._env)
        env["PYTHONPATH"] = os.pathsep.join([str(directory), *filter(None, [env.get("PYTHONPATH")])])
        env[ENV_SOCKET] = path
        from .._backend import select_backend

        if select_backend()[0] == "rtx":
            env.setdefault("POLYGRAPHY_USE_TENSORRT_RTX", "1")
        self.future.set_running_or_notify_cancel()
        threading.Thread(target=self._accept, name="trt_widget-run-accept", daemon=True).start()
        try:
            stdout = subprocess.PIPE if self._on_output is not None else None
            self._proc = subprocess.Popen(self.command, env=env, start_new_session=True, stdout=stdout)
        except OSError as exc:
            self._server.close()
            self.future.set_exception(BuildError(f"cannot run {self.command[0]!r}: {exc.strerror or exc}"))
            return self
        if self._proc.stdout is not None:
            output = threading.Thread(target=self._relay_output, name="trt_widget-run-output", daemon=True)
            self._readers.append(output)
            output.start()
        threading.Thread(target=self._wait, name="trt_widget-run-wait", daemon=True).start()
        return self

    def _relay_output(self) -> None:
        """Pass the command's stdout on by whole lines (a last line without one gets its newline), so a line of
        our own (a JSON event) never lands inside one of the command's."""
        assert self._proc is not None and self._proc.stdout is not None and self._on_output is not None
        with self._proc.stdout as stream:
            for line in stream:
                try:
                    self._on_output(line if line.endswith(b"\n") else line + b"\n")
                except Exception:
                    log.debug("the output callback failed", exc_info=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed: the command ended
                return
            reader = threading.Thread(target=self._read, args=(conn,), name="trt_widget-run-read", daemon=True)
            self._readers.append(reader)
            reader.start()

    def _read(self, conn: socket.socket) -> None:
        builds: dict[int, RelayedBuild] = {}
        with conn, conn.makefile("rb") as lines:
            for raw in lines:
                try:
                    event = json.loads(raw)
                    n = int(event.pop("build"))
                except (ValueError, TypeError, KeyError):
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("event") == "build_start":
                    builds[n] = self._new_build(event)
                elif n in builds:
                    builds[n].relay.events.put(event)
                else:
                    continue
                if self.on_event is not None:
                    try:
                        self.on_event({"build": builds[n].index, **event})
                    except Exception:
                        log.debug("an on_event callback failed", exc_info=True)
        for build in builds.values():  # the process ended (or closed the socket): builds still open fail
            build.relay.events.put(None)

    def _new_build(self, start: dict[str, Any]) -> RelayedBuild:
        with self._lock:
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
        try:
            self._finished(self.returncode)
        finally:
            self._tmp.cleanup()

    def _finished(self, code: int) -> None:
        """The command ended with exit code ``code`` (its temporary directory still exists)."""
        self.future.set_result(code)

    # -- control ----------------------------------------------------------------------------------------
    def on_build(self, fn: Callable[[Any], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(fn)

        def remove() -> None:
            with self._lock:
                if fn in self._listeners:
                    self._listeners.remove(fn)

        return remove

    def stop(self, reason: str = "stopped by user") -> str:
        """First: SIGINT to the command (its running builds cancel at their next step boundary); then, after
        ``force_after`` s or at a second stop, terminate it."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return "the command has ended"
        self.stops += 1
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        if self.stops > 1:
            self.terminate()
            return "Terminating the command"
        running = [b for b in self.builds if b.status in LIVE]
        for build in running:
            build.interrupted = True
            build.stop("interrupted (Ctrl-C)" if reason == "stopped by user" else reason)
        self._signal(signal.SIGINT)
        if self.force_after is not None:
            timer = threading.Timer(self.force_after, self.terminate)
            timer.daemon = True
            timer.start()
            return stop_notice(running) + f"; the command is terminated if it still runs after {self.force_after:g} s"
        return stop_notice(running) + "; stop again to terminate the command"

    def terminate(self) -> None:
        """SIGTERM to the command's process group, SIGKILL after a moment."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self.forced = True
        self._signal(signal.SIGTERM)
        try:
            proc.wait(TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    # -- results ----------------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def done(self) -> bool:
        return self.future.done()

    def result(self, timeout: float | None = None) -> int:
        """The command's exit code (128 + the signal when a signal ended it)."""
        return self.future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self.future.exception(timeout)

    def add_done_callback(self, fn: Callable[[CommandRun], Any]) -> None:
        self.future.add_done_callback(lambda _f: fn(self))

    def timings(self) -> list[dict[str, Any]]:
        return builds_timings(self.builds)

    def __await__(self) -> Generator[Any, None, int]:
        import asyncio

        return asyncio.wrap_future(self.future).__await__()

    def __repr__(self) -> str:
        state = f"exit {self.future.result()}" if self.future.done() else "running"
        return f"<CommandRun {' '.join(self.command)!r} {state} builds={len(self.builds)}>"


def run_command(command: Sequence[str], *, force_after: float | None = None) -> CommandRun:
    """Start ``command`` with its TensorRT builds watched (see :class:`CommandRun`)."""
    return CommandRun(command, force_after=force_after).start()


def wait_quietly(run: CommandRun, poll: float = 0.2) -> int:
    """Wait for the command's exit code, waking every ``poll`` s so signal handlers run."""
    while not run.done():
        time.sleep(poll)
    return run.result()


CALL_CHILD = """
import sys
import cloudpickle

with open(sys.argv[1], "rb") as f:
    fn, args, kwargs = cloudpickle.load(f)
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

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, force_after: float = 0.5
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
        super().__init__([sys.executable, "-c", CALL_CHILD], force_after=force_after)
        self.fn = fn
        directory = Path(self._tmp.name)
        (directory / "call.pkl").write_bytes(payload)
        self.command += [str(directory / "call.pkl"), str(directory / "result.pkl")]

    def _finished(self, code: int) -> None:
        import cloudpickle

        result = Path(self._tmp.name) / "result.pkl"
        try:
            kind, value = cloudpickle.loads(result.read_bytes())
        except FileNotFoundError:
            if self.stops:
                self.future.set_exception(BuildCancelled("stopped: the function's process was terminated"))
            else:
                self.future.set_exception(
                    BuildError(f"the function's process ended (exit code {code}) without a result")
                )
            return
        except Exception as exc:
            self.future.set_exception(BuildError(f"the function's result could not be read back: {exc}"))
            return
        if kind == "value":
            self.future.set_result(value)
        elif isinstance(value, KeyboardInterrupt) and self.stops:
            self.future.set_exception(BuildCancelled(f"stopped: {value}"))
        else:
            self.future.set_exception(value)
