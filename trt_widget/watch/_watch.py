"""``Watch``: every TensorRT build made inside a block (or a function), on its thread or threads it starts.

``with trt_widget.watch() as w:`` keeps the code in the cell; Stop there is the kernel interrupt: while a build
of the block runs, SIGINT (Ctrl-C, Jupyter's ■) cancels it at the next step boundary instead of raising inside
TensorRT's callback, and the patched call then raises KeyboardInterrupt (BuildCancelled on other threads).
:func:`watch_call` runs a function on a background thread inside a watch: ``stop()`` cancels the running build
at its next step boundary and every later build of the function at its first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Generic, TypedDict, TypeVar, cast

from .._files import expand_user, refuse_inputs
from .._options import BuildOptions
from .._signals import WakeupListener
from .._status import LIVE, RUNNING, BuildStatus, log
from . import _build as _build  # installs the patch's handler
from . import _lines, _patch

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._build import HistorySetting
    from .._event_sinks import Sink
    from .._phases import TimingRow
    from ._build import WatchedBuild
    from ._run import RelayedBuild

R = TypeVar("R")

INTERRUPTED = "interrupted (Ctrl-C)"  # what a cancel by SIGINT says (the terminal's Ctrl-C, Jupyter's ■)


class WatchSettings(TypedDict, total=False):
    """What ``watch_settings=`` may hold: :class:`Watch`'s options applied to each caught build."""

    events: Sink | None
    history: HistorySetting
    resources: bool
    budget: float | None
    keep_engines: bool


class WatchOptions(WatchSettings, total=False):
    """:class:`Watch`'s keyword arguments."""

    interrupt: bool
    process_wide: bool
    display: bool | None


class BuildTimings(TypedDict):
    """One caught build in ``timings()``."""

    index: int
    label: str
    method: str
    status: BuildStatus
    elapsed_s: float
    engine_size: int | None
    phases: list[TimingRow]


SETTINGS = ("events", "history", "resources", "budget", "keep_engines")  # what watch_settings= may hold


def check_settings(settings: Mapping[str, object] | None) -> WatchSettings:
    """``watch_settings=`` checked: a dict of :class:`Watch` options (a dict, not keywords, because every other
    keyword of ``watch_call`` goes to the function)."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise TypeError(
            f"watch_settings must be a dict such as {{'events': 'build.jsonl'}}; got {type(settings).__name__}"
        )
    unknown = [repr(name) for name in settings if name not in SETTINGS]
    if unknown:
        raise TypeError(f"unknown watch setting {', '.join(unknown)}; watch_settings takes {', '.join(SETTINGS)}")
    return cast("WatchSettings", dict(settings))  # the names checked here; Watch checks the values


def check_isolation(isolation: str, watch_settings: Mapping[str, object] | None) -> None:
    """ValueError for an unknown ``isolation``, or for ``watch_settings`` with ``"process"`` (whose builds are
    relayed from the child as ``trt-widget run`` relays them: these options would not reach them)."""
    if isolation not in ("thread", "process"):
        raise ValueError(f"isolation must be 'thread' or 'process'; got {isolation!r}")
    if isolation == "process" and watch_settings:
        raise ValueError("watch_settings apply to isolation='thread' only")


def check_watch_options(events: object, budget: object) -> None:
    """Refuse a bad ``events=`` or ``budget=`` when the watch is made (each caught build would otherwise fail to
    apply it, unseen, and run without it)."""
    if budget is not None:
        BuildOptions.from_kwargs(isolation="thread", budget=budget)  # ValueError: "budget must be a positive ..."
    if events is None or callable(events) or hasattr(events, "write"):
        return
    if not isinstance(events, (str, os.PathLike)):
        raise TypeError(f"events= must be a file path, a writable text file or a callable, got {type(events).__name__}")
    path = expand_user(events)
    if path.is_dir():
        raise IsADirectoryError(f"events= must be a file path, but {path} is a directory")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"events= file's directory does not exist: {path.parent}")
    refuse_inputs(None, events=events)  # never an ONNX model: a watched build does not know which file it read


def builds_timings(builds: Sequence[WatchedBuild | RelayedBuild]) -> list[BuildTimings]:
    """Per build, in order: index, label, method, status, elapsed_s, engine_size and its phase rows."""
    return [
        {
            "index": i,
            "label": b.source.label,
            "method": b.method,
            "status": b.status,
            "elapsed_s": b.elapsed_s,
            "engine_size": b.engine_size,
            "phases": b.timings(),
        }
        for i, b in enumerate(list(builds))
    ]


class Watch:
    """The builds TensorRT makes while this watch is open; ``builds`` in the order they started.

    ``events=`` (a path, file or callable, as ``Build(events=...)``), ``history=``, ``resources=`` and
    ``budget=`` (seconds, per build) apply to each caught build; ``keep_engines=True`` keeps a copy of each
    serialized engine in ``build.engine`` (off: the code has its engine already). ``interrupt=False`` leaves
    SIGINT alone."""

    def __init__(
        self,
        *,
        events: Sink | None = None,
        history: HistorySetting = True,
        resources: bool = True,
        budget: float | None = None,
        keep_engines: bool = False,
        interrupt: bool = True,
        process_wide: bool = False,
        display: bool | None = None,
    ) -> None:
        check_watch_options(events, budget)
        self.settings: WatchSettings = {
            "events": events,
            "history": history,
            "resources": resources,
            "budget": budget,
            "keep_engines": keep_engines,
        }
        self.builds: list[WatchedBuild] = []
        self.active = False
        self.stopping = False
        self.stop_reason = "stopped by user"
        self.interrupted = False
        self._interrupt = interrupt
        self._process_wide = process_wide
        self._wake_w: int | None = None  # the SIGINT handler's pipe to its helper thread
        self._whole_lines = False  # this watch holds the kernel's output to whole lines (_lines)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[WatchedBuild], None]] = []
        self._display = display  # None: show the list when running in a Jupyter kernel
        self.widget: object = None
        self.display_factory: Callable[[Watch], object] | None = None  # makes the widget shown in a kernel
        # called with each build once it ended, before the code's call returns or raises (``trt-widget run``'s
        # child waits there until the parent has shown the end: the code's next output then comes below it)
        self.settle: Callable[[WatchedBuild], None] | None = None

    # -- the block -----------------------------------------------------------------------------------
    def __enter__(self) -> Watch:
        if self.active:
            raise RuntimeError("this watch is already open; make a new trt_widget.watch() for another block")
        self.active = True
        _patch.activate(self, process_wide=self._process_wide)
        # TensorRT's own loggers write lines to fd 1 in pieces; the kernel would show them split (issue 39)
        self._whole_lines = _in_kernel() and _lines.acquire()
        if self._interrupt:
            self.take_sigint()
        if self._display or (self._display is None and _in_kernel()):
            self._show()
        return self

    def _show(self) -> None:
        if self.display_factory is None:
            return
        try:
            from IPython.display import display

            self.widget = self.display_factory(self)
            display(self.widget)
        except Exception:  # a display problem never stops the user's code
            log.debug("could not display the watch", exc_info=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the watch: later builds are no longer seen; TensorRT is unpatched once no watch is open."""
        if not self.active:
            return
        self.active = False
        _release_sigint(self)
        if self._wake_w is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"q")
            self._wake_w = None
        _patch.deactivate(self)
        if self._whole_lines:
            self._whole_lines = False
            _lines.release()

    def take_sigint(self) -> None:
        """On the main thread: SIGINT while a build of this watch runs cancels it at the next step boundary.

        The handler takes no lock (it may run inside a callback that holds one): it sets flags the monitor reads
        and wakes a helper thread through a pipe, which marks the builds as stopping (status, notice)."""
        if threading.current_thread() is not threading.main_thread() or not _hold_sigint(self):
            return
        read, self._wake_w = os.pipe()
        threading.Thread(target=self._stopper, args=(read,), name="trt_widget-watch-sigint", daemon=True).start()

    def _stopper(self, read: int) -> None:
        try:
            while os.read(read, 1) == b"x":
                for build in list(self.builds):
                    if build.interrupted and build.status in LIVE:
                        build.stop(INTERRUPTED)
        finally:
            os.close(read)

    def _take_interrupt(self) -> bool:
        """SIGINT (from the one handler, ``_on_sigint``): True when it cancels running builds of this watch."""
        running = [b for b in list(self.builds) if b.status in LIVE]
        if not running:
            return False
        # cancel at the next step boundary; never raise inside TensorRT's callback, take no lock
        self.interrupted = True
        for build in running:
            build.interrupted = True
            if build.monitor is not None:
                build.monitor.interrupted = True
        if self._wake_w is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"x")
        return True

    # -- builds --------------------------------------------------------------------------------------
    def _adopt(self, build: WatchedBuild) -> None:
        with self._lock:
            self.builds.append(build)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(build)
            except Exception:
                log.exception("a watch listener failed for %r", build)

    def on_build(self, fn: Callable[[WatchedBuild], None]) -> Callable[[], None]:
        """Call ``fn(build)`` for each build caught from now on (on the build's thread, before it starts);
        returns a function that removes it."""
        with self._lock:
            self._listeners.append(fn)

        def remove() -> None:
            with self._lock:
                if fn in self._listeners:
                    self._listeners.remove(fn)

        return remove

    def stop(self, reason: str = "stopped by user") -> str:
        """Cancel the running builds at their next step boundary, and every later build at its first; returns
        the notice saying what it waits for."""
        self.stopping, self.stop_reason = True, reason
        running = [b for b in list(self.builds) if b.status in LIVE]
        for build in running:
            build.stop(reason)
        return stop_notice(running)

    def timings(self) -> list[BuildTimings]:
        """Per caught build: index, label, method, status, elapsed_s, engine_size and its phase rows."""
        return builds_timings(self.builds)

    def __repr__(self) -> str:
        return f"<Watch {'open' if self.active else 'closed'} builds={len(self.builds)}>"


# The watches holding SIGINT, in the order they took it, under one handler: each closes by removing its own
# entry, in whatever order (interleaved coroutines, an ExitStack), and the last restores the handler from before.
_sigint_holders: list[Watch] = []
_sigint_before: list[signal._HANDLER] = []  # the handler before the first holder (a list: None is a valid handler)
# Python runs a signal handler only between bytecodes of the main thread: inside a long TensorRT step, not until
# the step's callback. The C-level handler writes the signal's number to the wakeup fd at once; a helper thread
# reading it marks the running builds cancelling then (and passes every byte on to the fd set before, if any).
_wakeup: list[WakeupListener] = []  # ours while the holders' handler is installed


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """SIGINT while watches hold it: the innermost with a running build cancels it; else the handler from before."""
    for watch in reversed(list(_sigint_holders)):
        if watch._take_interrupt():
            return
    previous = _sigint_before[0] if _sigint_before else signal.default_int_handler
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        raise KeyboardInterrupt


def _hold_sigint(watch: Watch) -> bool:
    """Add ``watch`` to the holders (installing the one handler for the first); False where SIGINT cannot be
    handled here (not the main interpreter)."""
    if not _sigint_holders:
        try:
            before = signal.signal(signal.SIGINT, _on_sigint)
        except ValueError:
            return False
        if before is not _on_sigint:  # (ours still, when a watch closed on another thread could not restore it)
            _sigint_before[:] = [before]
        _watch_wakeup()
    _sigint_holders.append(watch)
    return True


def _watch_wakeup() -> None:
    """Hear SIGINT's arrival through the wakeup fd on a helper thread (main thread; nothing where it cannot)."""
    if not _wakeup:
        listener = WakeupListener.start(_interrupt_now, "trt_widget-watch-wakeup")
        _wakeup[:] = [listener] if listener is not None else []


def _interrupt_now() -> None:
    """SIGINT arrived (this is not the handler: it runs on a helper thread, and may stop builds): the innermost
    holder with a running build marks it cancelling now, as its handler will when Python runs it."""
    for watch in reversed(list(_sigint_holders)):
        running = [b for b in list(watch.builds) if b.status == RUNNING]
        if running:
            for build in running:
                build.interrupted = True
                if build.monitor is not None:
                    build.monitor.interrupted = True
                build.stop(INTERRUPTED)
            return


def _unwatch_wakeup() -> None:
    """Put the wakeup fd from before back (main thread; elsewhere ours stays, harmless with no holder)."""
    if _wakeup and _wakeup[0].close():
        _wakeup.clear()


def _release_sigint(watch: Watch) -> None:
    """Remove ``watch``'s entry; once none is left, restore the handler from before (unless the program has
    installed its own since)."""
    if watch not in _sigint_holders:
        return
    _sigint_holders.remove(watch)
    if _sigint_holders or not _sigint_before:
        return
    with contextlib.suppress(ValueError):  # not the main thread: the handler stays, with no holder it defers
        if signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, _sigint_before[0])
        _sigint_before.clear()
    _unwatch_wakeup()


def _in_kernel() -> bool:
    import sys

    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and getattr(shell, "kernel", None) is not None


def stop_notice(running: Sequence[WatchedBuild | RelayedBuild]) -> str:
    """``"Stopping: waits for the current step of 'X' (build 2) to end — TensorRT cancels at step boundaries"``."""
    if not running:
        return "Stopping: no build is running now; a later build is cancelled at its first step"
    waits = []
    for build in running:
        phase = build.model.innermost_running()
        waits.append(f"the current step of {phase.name!r}" if phase else "the first step")
    return f"Stopping: waits for {', '.join(waits)} to end (TensorRT cancels only at step boundaries)"


class WatchedCall(Generic[R]):
    """``fn(*args, **kwargs)`` on a background thread inside a :class:`Watch` (``settings``: its options, see
    :func:`check_settings`); a Future of its return value."""

    def __init__(
        self,
        fn: Callable[..., R],
        args: tuple[object, ...],
        kwargs: dict[str, object],
        **settings: Unpack[WatchSettings],
    ):
        if not callable(fn):
            raise TypeError(f"watch_call needs a function to run; got {type(fn).__name__}")
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.watch = Watch(interrupt=False, display=False, **check_settings(settings))
        self.future: Future[R] = Future()
        self._thread = threading.Thread(target=self._run, name="trt_widget-watch", daemon=True)
        self._enter_cell: Callable[[], None] = lambda: None

    @property
    def builds(self) -> list[WatchedBuild]:
        return self.watch.builds

    def start(self) -> WatchedCall[R]:
        # fn's output (its prints, TensorRT's log lines) goes to the cell that started it, not a later one
        self._enter_cell = _lines.route_thread_to_current_cell()
        self.future.set_running_or_notify_cancel()
        self._thread.start()
        return self

    def _run(self) -> None:
        self._enter_cell()
        try:
            with self.watch:
                value = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:
            self.future.set_exception(exc)
        else:
            self.future.set_result(value)

    def stop(self, reason: str = "stopped by user") -> str:
        """Graceful: the running build ends at its next step boundary (see :meth:`Watch.stop`)."""
        return self.watch.stop(reason)

    def done(self) -> bool:
        return self.future.done()

    def running(self) -> bool:
        return not self.future.done()

    def result(self, timeout: float | None = None) -> R:
        """The function's return value; raises its exception (BuildCancelled when a Stop cancelled a build it
        did not catch), or TimeoutError."""
        return self.future.result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self.future.exception(timeout)

    def add_done_callback(self, fn: Callable[[WatchedCall[R]], object]) -> None:
        self.future.add_done_callback(lambda _f: fn(self))

    def timings(self) -> list[BuildTimings]:
        return self.watch.timings()

    def __await__(self) -> Generator[object, None, R]:
        return asyncio.wrap_future(self.future).__await__()

    def __repr__(self) -> str:
        state = "done" if self.future.done() else "running"
        return f"<WatchedCall {getattr(self.fn, '__qualname__', self.fn)!r} {state} builds={len(self.builds)}>"


def watch_call(
    fn: Callable[..., R], /, *args: object, watch_settings: Mapping[str, object] | None = None, **kwargs: object
) -> WatchedCall[R]:
    """Start ``fn(*args, **kwargs)`` on a background thread and watch every TensorRT build inside it."""
    return WatchedCall(fn, args, kwargs, **check_settings(watch_settings)).start()
