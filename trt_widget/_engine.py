"""One engine build with the selected TensorRT backend: model source -> network -> config -> engine bytes.

Used as is by the thread runner and inside the child process of process isolation. Bad input raises
:class:`BuildError` with a message that names the problem; nothing here touches threads or front ends.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mmap
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, SupportsInt, Union

from . import _external_data
from ._backend import LoggerBase, builder_failure_message, capabilities, select_backend, trt
from ._errors import BuildError
from ._expected import PARSE_PHASE, RTX_TIMING_CACHE, held_back, significant
from ._external_data import check_external_data, external_locations, file_locations
from ._files import (
    BadModelPath,
    atomic_write,
    expand_user,
    is_text,
    model_file,
    not_onnx,
    open_lock_file,
    read_regular,
    writable_target,
)
from ._format import escape_controls
from ._options import PRECISION_FLAGS, TRT_SETTINGS, BuildOptions, ConfigureHook
from ._shapes import Profile
from ._tensorrt_log import MAX_MESSAGE, LogRecord, to_logging
from ._tensorrt_types import (
    IBuilder,
    IBuilderConfig,
    INetworkDefinition,
    IOnnxParser,
    IParserError,
    ITimingCache,
    TensorRT,
)
from ._verbose import TacticWatch, wanted
from .engine import EngineLog, engine_line

if TYPE_CHECKING:
    from ._monitor import BuildMonitor

SEVERITIES = ("INTERNAL_ERROR", "ERROR", "WARNING", "INFO", "VERBOSE")


class OnnxGraph(Protocol):
    """What trt_widget reads of an ``onnx.GraphProto``: its name."""

    @property
    def name(self) -> str: ...


class OnnxModelProto(Protocol):
    """What trt_widget uses of an ``onnx.ModelProto``."""

    @property
    def graph(self) -> OnnxGraph: ...

    def SerializeToString(self) -> bytes: ...


# model=: an ONNX file path, ONNX bytes, an onnx.ModelProto, or a function that fills a TensorRT network
ModelLike = Union[
    str, "os.PathLike[str]", bytes, bytearray, memoryview, OnnxModelProto, Callable[[INetworkDefinition], object]
]


@dataclass(frozen=True)
class ModelSource:
    """A normalised model: ONNX path, ONNX bytes, or a callable that fills a network definition."""

    kind: str  # "path" | "bytes" | "callable"
    value: Any  # by kind: a path (str), ONNX bytes, the function; what a runner reads, for other runners
    label: str
    # where the model's external data may lie: its own directory for a path, None (none allowed) otherwise
    directory: str | None = None
    hint: str = ""  # how to pass a model with external data here, when the default advice does not fit

    @property
    def shown(self) -> str:
        """The label as one line, every control escaped: what an error quotes (a newline in a path forges no line,
        and an error's first line, the status detail, is whole)."""
        return escape_controls(self.label)

    @classmethod
    def of(cls, model: ModelLike | ModelSource | object) -> ModelSource:
        if isinstance(model, ModelSource):  # a source a runner reads (a recording, a server's build, user code)
            return model
        if isinstance(model, (str, os.PathLike)):
            path = str(expand_user(model))
            return cls("path", path, str(model), os.path.dirname(os.path.abspath(path)))
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            return cls("bytes", data, f"ONNX bytes ({len(data):,} B)")
        if hasattr(model, "SerializeToString") and hasattr(model, "graph"):
            data = model.SerializeToString()
            hint = (
                "An onnx.ModelProto does not know its directory: load it with its data (onnx.load(path)), or "
                "pass the path of the ONNX file"
            )
            return cls("bytes", data, f"onnx.ModelProto {model.graph.name or ''}".strip(), None, hint)
        if callable(model):
            return cls("callable", model, getattr(model, "__qualname__", repr(model)))
        raise TypeError(
            "model must be an ONNX file path, ONNX bytes, an onnx.ModelProto, or a callable that defines "
            f"the network (called with a TensorRT INetworkDefinition); got {type(model).__name__}"
        )


class CaptureLogger:
    """Keeps TensorRT log lines with severity and build time; warnings and errors are never dropped."""

    def __init__(
        self,
        verbose: bool = False,
        clock: Callable[[], float] = time.perf_counter,
        on_record: Callable[[LogRecord], None] | None = None,
    ) -> None:
        self.verbose = verbose
        self._max = 4 if verbose else 3
        self._clock = clock
        self._t0 = clock()
        self.on_record = on_record
        self._listeners: list[Callable[[LogRecord], None]] = []
        self.records: deque[LogRecord] = deque(maxlen=5000)
        self.tactics = TacticWatch()  # what a silent step is timing, from VERBOSE lines (kept or not)
        self.on_tactic_line: Callable[[str], None] | None = None  # a builder process forwards them
        self.problems: list[LogRecord] = []  # WARNING and worse, capped below
        self.engine_log: EngineLog | None = None  # set: the layer record and memory lines are kept (engine_report)
        self.full = False  # wants every line, VERBOSE included (log_file=): the router forwards them all
        self.on_line: Callable[[int, str, float], None] | None = None  # every line given, kept or not (log_file=)
        self.label: str | None = None  # set: every line given also goes to logging's trt_widget.tensorrt
        self.cancel: threading.Event | None = None  # the build's stop: once set, its "BuildCanceled" is expected
        # errors logged while the model is parsed wait here for logging (_expected.held_back): the build's
        # ``parse_status`` says whether its parse row runs ("running"), ended (its status) or has not begun (None)
        self.parse_status: Callable[[], str | None] | None = None
        self._held: list[tuple[int, str]] = []
        self._held_lock = threading.Lock()
        self.probing = (
            0  # >0 while trt_widget probes TensorRT (an empty timing cache): its INFO lines are not the build's
        )

    def restart_clock(self) -> None:
        """Make t=0 now: call when the build actually starts."""
        self._t0 = self._clock()

    def log(self, severity: SupportsInt, msg: str, at: float | None = None) -> None:
        """Keep one line; ``at`` is the line's own clock reading when replayed from a builder process."""
        try:
            level = int(severity)
            if self.probing and level >= 3:  # warnings and errors are never dropped
                return
            if self.on_line is not None or self.label is not None:
                self._route(level, str(msg), at)
            if level == 4 and wanted(msg):
                self.tactics.feed(msg, (self._clock() if at is None else min(at, self._clock())) - self._t0)
                if self.on_tactic_line is not None:
                    self.on_tactic_line(msg)
            elif self.engine_log is not None and engine_line(msg):
                self.engine_log.feed(msg)
                if level == 4 and self.on_tactic_line is not None:  # a builder process forwards the record
                    self.on_tactic_line(msg)
            if level > self._max:
                return
            now = self._clock() if at is None else min(at, self._clock())
            text = str(msg)  # a model's names reach TensorRT's lines: a 2 MB node name, a 2 MB line
            if len(text) > MAX_MESSAGE:
                text = text[:MAX_MESSAGE] + "…"
            record: LogRecord = {"severity": SEVERITIES[min(level, 4)], "message": text, "t": now - self._t0}
            self.records.append(record)
            if level <= 2 and len(self.problems) < 1000:
                self.problems.append(record)
            if self.on_record is not None:
                self.on_record(record)
            for listener in self._listeners:
                try:  # noqa: SIM105  (once per kept log line)
                    listener(record)
                except Exception:  # a broken reader must not lose the line for the others
                    pass
        except Exception:
            pass

    def _route(self, level: int, msg: str, at: float | None) -> None:
        """One line to the log file and to Python logging (each guarded: neither may cost TensorRT's line)."""
        t = (self._clock() if at is None else min(at, self._clock())) - self._t0
        if self.on_line is not None:
            with contextlib.suppress(Exception):
                self.on_line(level, msg, t)
        if self.label is not None:
            with contextlib.suppress(Exception):
                # the rule every front end applies (_expected.held_back): a parse's errors are news only if the
                # parse succeeds; held while it runs, at DEBUG once it failed (release_held)
                holdable = held_back(SEVERITIES[min(level, 4)], "running", verbose=False)  # held if the parse runs
                status = self.parse_status() if self.parse_status is not None and (holdable or self._held) else None
                if status == "running" and holdable:
                    with self._held_lock:
                        self._held.append((level, msg))
                    return
                if status not in (None, "running"):
                    self.release_held(status)
                to_logging(level, msg, self.label, cancelled=self.cancel is not None and self.cancel.is_set())

    def release_held(self, parse_status: str | None) -> None:
        """The parse ended (``parse_status``, its row's): its held errors go to ``logging`` as they came, or,
        where it failed (the build's failure says what they mean, in words), at DEBUG: a server's console shows
        no parser assertion."""
        with self._held_lock:
            held, self._held = self._held, []
        if self.label is None:
            return
        for level, msg in held:
            with contextlib.suppress(Exception):
                failed = held_back(SEVERITIES[min(level, 4)], parse_status, verbose=False)  # the parse ended: failed
                to_logging(level, msg, self.label, held_back=failed)

    def subscribe(self, listener: Callable[[LogRecord], None]) -> Callable[[], None]:
        """Call ``listener(record)`` for every kept line; returns a function that unsubscribes."""
        self._listeners = [*self._listeners, listener]

        def unsubscribe() -> None:
            self._listeners = [x for x in self._listeners if x is not listener]

        return unsubscribe

    def errors(self) -> list[str]:
        return [r["message"] for r in self.problems if r["severity"] in ("ERROR", "INTERNAL_ERROR")]


class _LogRouter(LoggerBase):
    """TensorRT keeps the first logger a process registers, so one router forwards each line to its build: the
    build running on the calling thread, or the build whose progress monitor that thread reported to. A line
    from any other thread goes to the only running build, and to none while several run (it may belong to any
    of them): those are kept in ``unattributed`` (the last 200) and counted."""

    def __init__(self) -> None:
        LoggerBase.__init__(self)
        self.sinks: dict[int, CaptureLogger] = {}  # builder thread id -> its build's logger
        self.claimed: dict[int, CaptureLogger] = {}  # a TensorRT internal thread -> the build it reported for
        self.any_verbose = False  # True while a running build wants VERBOSE lines
        self.unattributed: deque[tuple[int, str]] = deque(maxlen=200)
        self.unattributed_count = 0

    def log(self, severity: SupportsInt, msg: str) -> None:
        # TensorRT sends every VERBOSE line (tens of thousands per build): drop them before any other work, but for
        # the autotuner's lines that say what a silent step is timing (see _verbose.py) and the engine's layer record.
        if not self.any_verbose and int(severity) == 4 and not wanted(msg) and not engine_line(msg):
            return
        ident = threading.get_ident()
        sink = self.sinks.get(ident) or self.claimed.get(ident)
        if sink is None:
            sinks = list(self.sinks.values())
            if len(sinks) != 1:
                self.unattributed_count += 1
                self.unattributed.append((int(severity), str(msg)))
                return
            sink = sinks[0]
        sink.log(severity, msg)

    def claim(self, ident: int, sink: CaptureLogger) -> None:
        """Lines from thread ``ident`` belong to ``sink``'s build (its progress monitor was called there)."""
        if ident not in self.sinks:
            self.claimed[ident] = sink

    def set_sink(self, ident: int, sink: CaptureLogger | None) -> None:
        if sink is None:
            ended = self.sinks.pop(ident, None)
            self.claimed = {k: v for k, v in self.claimed.items() if v is not ended}
        else:
            self.sinks[ident] = sink
        self.any_verbose = any(s.verbose or s.full for s in list(self.sinks.values()))


_router: _LogRouter | None = None
_router_lock = threading.Lock()


@contextmanager
def routed_logs(logger: CaptureLogger) -> Iterator[_LogRouter]:
    """The process-wide TensorRT logger, forwarding this thread's lines to ``logger`` while in the block."""
    global _router
    with _router_lock:
        if _router is None:
            _router = _LogRouter()
        ident = threading.get_ident()
        _router.set_sink(ident, logger)
    try:
        yield _router
    finally:
        with _router_lock:
            _router.set_sink(ident, None)


# The time before TensorRT's first phase, reported as a phase of its own (see Build's AFTER_PHASE for the end)
BEFORE_PHASES = {"model": PARSE_PHASE, "callable": "Defining the network"}


def build_engine(
    source: ModelSource, options: BuildOptions, monitor: BuildMonitor, logger: CaptureLogger, *, opened: bool = False
) -> memoryview | None:
    """Build and return the serialized engine (a view of TensorRT's buffer), or None when cancelled. ``opened``:
    the caller already started the BEFORE_PHASES row (a builder process, while it received the model)."""
    with routed_logs(logger) as router:
        return _build_engine(source, options, monitor, logger, router, opened)


def _build_engine(
    source: ModelSource,
    options: BuildOptions,
    monitor: BuildMonitor,
    logger: CaptureLogger,
    router: _LogRouter,
    opened: bool = False,
) -> memoryview | None:
    t = trt()
    before = BEFORE_PHASES["callable" if source.kind == "callable" else "model"]
    if not opened:
        monitor.phase_start(before, None, 0)  # from here: on a GPU, CUDA starts in the next calls (no silent gap)
    with _on_device(options.device):
        return _build_on_device(t, source, options, monitor, logger, router, before)


def _build_on_device(
    t: TensorRT,
    source: ModelSource,
    options: BuildOptions,
    monitor: BuildMonitor,
    logger: CaptureLogger,
    router: _LogRouter,
    before: str,
) -> memoryview | None:
    try:
        builder = t.Builder(router)
    except TypeError as exc:  # pybind11: "factory function returned nullptr"
        if select_backend()[0] == "rtx":
            raise BuildError(f"{capabilities()['label']} could not create a builder ({exc})") from None
        raise BuildError(builder_failure_message(str(capabilities()["label"]), exc)) from None
    _register_plugins(t, options.plugins, logger, router)
    flags = 0
    strong = getattr(t.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    if options.strongly_typed and strong is not None:
        flags |= 1 << int(strong)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TensorRT 11: the flag is deprecated (always on)
        network = builder.create_network(flags)
    parser = _populate(t, network, source, logger, router)  # owns the weights: kept alive until the end
    _check_network(network, options, logger)
    config = builder.create_builder_config()
    cache, loaded = _configure(t, builder, config, network, options, logger)
    monitor.on_thread = lambda ident: router.claim(ident, logger)
    if options.configure is not None:
        _call_configure(options.configure, builder, network, config)
    config.progress_monitor = monitor
    monitor.phase_finish(before)
    try:
        serialized = builder.build_serialized_network(network, config)
    finally:
        config.progress_monitor = None
    if serialized is None:
        if monitor.cancel_event.is_set():
            if cache is not None and options.timing_cache:  # what TensorRT timed before the stop: a later build resumes
                _save_timing_cache(config, options.timing_cache, logger, stopped=True, loaded=loaded)
            return None
        details = (
            "; ".join(_short(m) for m in significant(logger.errors())[-3:]) or "TensorRT gave no reason (see the log)"
        )
        raise BuildError(escape_controls(f"TensorRT could not build an engine from {source.label}: {details}"))
    engine = memoryview(serialized)
    if cache is not None and options.timing_cache:
        _save_timing_cache(config, options.timing_cache, logger, loaded=loaded)
    del parser  # only now may the weights the network points into go
    return engine


_plugins_lock = threading.Lock()
_standard_plugins: bool | None = None  # init_libnvinfer_plugins ran in this process (None: not tried yet)
_loaded_plugins: dict[str, object] = {}  # real path -> TensorRT's library handle, for the life of this process


def _register_plugins(t: TensorRT, paths: tuple[str, ...], logger: CaptureLogger, router: _LogRouter) -> None:
    """TensorRT's standard plugins once per process (as trtexec does: the ONNX parser looks only in the registry),
    then the build's plugin libraries; each library stays loaded for later builds in this process."""
    global _standard_plugins
    loaded = []
    with _plugins_lock:
        if _standard_plugins is None:
            init = getattr(t, "init_libnvinfer_plugins", None)
            try:
                _standard_plugins = bool(init(router, "")) if init is not None else False
            except Exception:
                _standard_plugins = False
        for path in paths:
            real = os.path.realpath(path)
            if real not in _loaded_plugins:
                registry = getattr(t, "get_plugin_registry", None)
                if registry is None:  # the lean/dispatch runtimes' bindings have no plugin registry
                    raise BuildError(
                        f"plugins: {capabilities()['label']} has no plugin registry to load {escape_controls(path)}"
                    )
                before = len(logger.problems)
                handle = registry().load_library(real)
                if handle is None:  # TensorRT said why in an ERROR line
                    said = [_short(r["message"]) for r in logger.problems[before:]][:2]
                    why = "; ".join(said) or "not a TensorRT plugin library, or its plugins are registered already"
                    # one line, whole: TensorRT's own lines repeat the path as given
                    raise BuildError(escape_controls(f"TensorRT could not load the plugin library {path}: {why}"))
                _loaded_plugins[real] = handle
            loaded.append(path)
    standard = "registered" if _standard_plugins else "not available in this TensorRT"
    extra = f"; loaded {', '.join(loaded)}" if loaded else ""
    logger.log(3, f"plugins: TensorRT's standard plugins {standard}{extra} (builder pid {os.getpid()})")


def _call_configure(
    configure: ConfigureHook, builder: IBuilder, network: INetworkDefinition, config: IBuilderConfig
) -> None:
    """``configure(builder, network, config)``; its exception fails the build with its traceback."""
    import traceback

    try:
        configure(builder, network, config)
    except Exception as exc:
        name = getattr(configure, "__qualname__", repr(configure))
        raise BuildError(f"configure= {name} raised {exc!r}\n{traceback.format_exc()}") from exc


@contextmanager
def _on_device(device: int | None) -> Iterator[None]:
    """Build on CUDA device ``device`` (trtexec --device): its primary context made current on this thread (the
    CUDA runtime inside TensorRT uses the thread's current context), the previous one restored after."""
    if device is None:
        yield
        return
    import ctypes

    cuda = None
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(name)
            break
        except OSError:
            continue
    count = ctypes.c_int(0)
    if cuda is None or cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        raise BuildError(f"device={device}: no CUDA driver or GPU is usable here; leave device unset")
    if device >= count.value:
        raise BuildError(f"device={device}: this machine has {count.value} CUDA device(s), numbered from 0")
    handle, context, previous = ctypes.c_int(0), ctypes.c_void_p(), ctypes.c_void_p()
    if (
        cuda.cuDeviceGet(ctypes.byref(handle), device) != 0
        or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle) != 0
    ):
        raise BuildError(f"device={device}: CUDA could not open the device")
    cuda.cuCtxGetCurrent(ctypes.byref(previous))
    cuda.cuCtxSetCurrent(context)
    try:
        yield
    finally:
        cuda.cuCtxSetCurrent(previous)
        cuda.cuDevicePrimaryCtxRelease(handle)


@contextmanager
def _probing(logger: CaptureLogger | None) -> Iterator[None]:
    """While trt_widget serializes an empty timing cache to compare with, TensorRT's INFO lines about it
    ("Serialized 0 timing cache entries") are about the probe, not the build: not kept."""
    if logger is None:
        yield
        return
    logger.probing += 1
    try:
        yield
    finally:
        logger.probing -= 1


def _looks_like_a_timing_cache(config: IBuilderConfig, data: bytes, logger: CaptureLogger | None = None) -> bool:
    """Whether ``data`` begins as the timing caches this TensorRT writes do (their magic, e.g. ``ptrt``). TensorRT
    reads any other bytes as an empty cache, and saving the build's cache would then overwrite whatever the file
    was; a cache of another TensorRT version or device still begins the same way and may be replaced."""
    try:
        with _probing(logger):
            empty = config.create_timing_cache(b"")
            serialized = empty.serialize() if empty is not None else None
        magic = bytes(memoryview(serialized))[:4] if serialized is not None else b""
    except Exception:
        return True  # nothing to compare with: TensorRT's own check decides
    return not magic or data.startswith(magic)


def _save_timing_cache(
    config: IBuilderConfig, path: str, logger: CaptureLogger, *, stopped: bool = False, loaded: bytes | None = None
) -> None:
    """Merge the build's timing cache into the file's current one and replace the file, under a lock beside it: a
    concurrent build sharing the file (a matrix, the service) keeps its entries. Any failure is a warning: the
    engine is the product, the cache an extra. ``stopped``: the build was stopped; the cache the application owns
    (``create_timing_cache``, attached by ``set_timing_cache``) still holds what TensorRT timed until then and may
    be serialized (NvInfer.h documents no state in which ``ITimingCache::serialize`` is refused). ``loaded``: the
    file's bytes the build's cache was made from; a file still holding them is not read into TensorRT again (the
    build's cache holds its entries already, and TensorRT would log its reading of them a second time)."""
    try:
        with warnings.catch_warnings(), _file_lock(path):
            warnings.simplefilter("ignore", DeprecationWarning)
            cache = config.get_timing_cache()
            try:
                current = read_regular(path, TIMING_CACHE_LIMIT)  # another user's may have been swapped since
            except FileNotFoundError:
                current = b""
            if current == loaded:  # unchanged since the build read it: nothing to merge
                current = b""
            if current and not _looks_like_a_timing_cache(config, current, logger):  # another file meanwhile
                logger.log(2, f"timing_cache: {path} is not a TensorRT timing cache any more; left as it was")
                return
            unread = False
            if current and cache is not None:
                theirs = config.create_timing_cache(current)
                if _unreadable(config, current, theirs, logger):  # only its 4 magic bytes matched: keep what it was
                    unread, theirs = True, None
                # False where the file is from another TensorRT version or device: ours replaces it, a copy stays
                if theirs is not None and not cache.combine(theirs, False):
                    kept = _keep_a_copy(path, current)
                    if kept is None:
                        logger.log(
                            2,
                            f"timing_cache: {path} does not fit this TensorRT version or device, and no free name "
                            f"to keep a copy beside it ({path}.previous …): left as it was, this build's cache not "
                            "saved. Name another file to keep one",
                        )
                        return
                    logger.log(
                        2,
                        f"timing_cache: {path} does not fit this TensorRT version or device; replaced by this "
                        f"build's cache, the previous one kept as {kept}",
                    )
            serialized = cache.serialize() if cache is not None else None
            if serialized is None:
                logger.log(2, f"timing_cache: TensorRT returned no timing cache to save; {path} is left as it was")
                return
            if unread:
                kept = _keep_a_copy(path, current)
                if kept is None:
                    logger.log(
                        2,
                        f"timing_cache: {path} is not a timing cache this TensorRT reads, and no copy of "
                        "it could be kept; left as it was",
                    )
                    return
                logger.log(
                    2,
                    f"timing_cache: {path} is not a timing cache this TensorRT reads (another TensorRT's, "
                    f"or another file beginning as one does); kept as {kept}, replaced",
                )
            atomic_write(path, bytes(memoryview(serialized)))
            if stopped:
                logger.log(3, f"timing_cache: the build was stopped; what TensorRT timed until then is kept in {path}")
    except OSError as exc:
        logger.log(2, f"timing_cache: could not save to {path} ({exc.strerror or exc}); the engine is fine")
    except Exception as exc:
        logger.log(2, f"timing_cache: could not save to {path} ({type(exc).__name__}: {exc}); the engine is fine")


def _unreadable(
    config: IBuilderConfig, current: bytes, theirs: ITimingCache | None, logger: CaptureLogger | None = None
) -> bool:
    """TensorRT read ``current`` (which is not an empty cache) as an empty one: it is not a cache this TensorRT
    can use, whatever its first bytes say (TensorRT reads any bytes it cannot parse as an empty cache)."""
    try:
        with _probing(logger):
            empty = config.create_timing_cache(b"")
            if empty is None:
                return False
            blank = bytes(memoryview(empty.serialize()))
            read = bytes(memoryview(theirs.serialize())) if theirs is not None else b""
    except Exception:
        return False  # nothing to compare with: the magic check stands
    return current != blank and (theirs is None or read == blank)


TIMING_CACHE_LIMIT = 1 << 30  # bytes of a timing cache read (NVIDIA's are KiB to tens of MiB); a larger file is not one
CACHE_LOCK_WAIT_S = 30.0  # what saving a timing cache waits for another build saving the same file


MAX_CACHE_COPIES = 9


def _keep_a_copy(path: str, data: bytes) -> str | None:
    """Keep ``data``, the file at ``path`` about to be replaced (another TensorRT version's or GPU's cache, or a
    file TensorRT cannot read), as ``PATH.previous`` (``.previous-2`` … when taken; never over an existing file or
    through a link): a hard link where one can be made (the very file: its bytes, mode and owner), else a new file
    with its mode (0600 when it is another user's). Its name, or None when no name is free or it cannot be kept."""
    try:
        old = os.stat(path)
        same = read_regular(path, TIMING_CACHE_LIMIT) == data  # under the lock: the file is still the one read
    except OSError:
        return None
    mode = old.st_mode & 0o777 if old.st_uid == os.geteuid() else 0o600
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for number in range(1, MAX_CACHE_COPIES + 1):
        name = f"{path}.previous" + (f"-{number}" if number > 1 else "")
        if same:
            try:
                os.link(path, name)  # a new name for the same inode; EEXIST where the name is taken (a link too)
                return name
            except FileExistsError:
                continue
            except OSError:
                pass  # no hard links here (another filesystem, protected_hardlinks): a copy
        try:
            fd = os.open(name, flags, mode)
        except FileExistsError:
            continue
        except OSError:
            return None
        try:
            with open(fd, "wb") as handle:
                os.fchmod(handle.fileno(), mode)  # exactly, whatever the umask: a private cache stays private
                handle.write(data)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(name)
            return None
        return name
    return None


@contextmanager
def _file_lock(path: str) -> Iterator[None]:
    """An exclusive advisory lock on ``<path>.lock`` across threads and processes (none on Windows): created for
    the lock, never through a link (``open_lock_file``), and removed when released, so no ``.lock`` file stays
    beside the cache. The wait is bounded: a process holding the lock for ever (another user's, in a shared
    folder) costs the cache, never the build."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; concurrent writers there keep the last writer's entries
        yield
        return
    lock = f"{writable_target(path)}.lock"
    deadline = time.monotonic() + CACHE_LOCK_WAIT_S
    while True:  # each retry means another holder released and removed the file meanwhile
        fd = open_lock_file(path)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise OSError(
                            errno.EAGAIN, f"{lock} was held by another process for {CACHE_LOCK_WAIT_S:g} s; not saved"
                        ) from None
                    time.sleep(0.02)
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, lock):
            break
        os.close(fd)  # the holder before us removed the file while we waited: lock the one at ``lock`` now
    try:
        yield
    finally:
        try:
            if _same_file(fd, lock):  # removed while still held, so a waiter on this file sees it gone and retries
                os.unlink(lock)
        except OSError:
            pass  # a folder that allows creating but not removing: the lock file stays, as before
        finally:
            os.close(fd)  # closing releases the lock


def _same_file(fd: int, path: str) -> bool:
    """Whether the locked descriptor is still the file at ``path`` (not removed or replaced meanwhile)."""
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(path))
    except OSError:
        return False


def _populate(
    t: TensorRT, network: INetworkDefinition, source: ModelSource, logger: CaptureLogger, router: _LogRouter
) -> IOnnxParser | None:
    if source.kind == "callable":
        try:
            source.value(network)
        except Exception as exc:
            raise BuildError(f"the network definition function {source.shown} raised {exc!r}") from exc
        return None
    parser = t.OnnxParser(network, router)
    logged_before = len(logger.problems)
    if source.kind == "path":
        try:
            path = model_file(source.value)  # the one rule every surface says (not found, not a file, refused)
        except BadModelPath as exc:
            raise BuildError(str(exc)) from None
        try:
            ok = _parse_file(parser, str(path), source)
        except OSError as exc:  # also a path stat() refuses (a name too long, a folder not entered)
            raise BuildError(f"cannot read the model {source.shown}: {exc.strerror or exc}") from None
    else:
        if not source.value:
            raise BuildError("the ONNX bytes are empty")
        check_external_data(external_locations(source.value), None, source.label, source.hint)
        ok = _parse_bytes(parser, source.value)
    if not ok or parser.num_errors:
        problems = [_short(_describe_parser_error(parser.get_error(i)), 1000) for i in range(parser.num_errors)]
        causes = [
            c
            for c in significant([r["message"] for r in logger.problems[logged_before:]])
            if not any(c.strip()[-60:] in p for p in problems)
        ]  # not an echo of a parser error
        if any("ParseFromCodedStream" in p for p in problems) or is_text(_head(source)):  # no ONNX protobuf
            raise BuildError(f"could not parse {source.shown} as ONNX: {_not_a_model(source)}")
        reason = "; ".join([*(_short(c) for c in causes[:2]), *problems[:5]]) or "the parser gave no reason"
        raise BuildError(escape_controls(f"could not parse {source.label} as ONNX: {reason}"))  # one line, whole
    if network.num_layers == 0 and network.num_inputs == 0 and network.num_outputs == 0:
        if is_text(_head(source)):  # text that happened to decode as a protobuf: said as any text file is
            raise BuildError(f"could not parse {source.shown} as ONNX: {_not_a_model(source)}")
        raise BuildError(
            f"could not parse {source.shown} as ONNX: it holds no graph (no nodes, inputs or "
            "outputs) — is it really an ONNX model?"
        )
    return parser


def _head(source: ModelSource) -> bytes:
    """The model's first 4 KiB (what says whether it is text), or b"" where they cannot be read."""
    try:
        if source.kind == "path":
            with open(_external_data.open_model(source.value), "rb") as handle:
                return handle.read(4096)
        return bytes(source.value[:4096])
    except (OSError, TypeError):
        return b""


def _not_a_model(source: ModelSource) -> str:
    """Why bytes that are no ONNX model were refused, in words (not the parser's assertion)."""
    return f"{not_onnx(_head(source))} — is it really an ONNX model?"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


@contextmanager
def _parser_path(path: str) -> Iterator[str | bytes]:
    """``path`` as TensorRT's parser takes it (it finds external data in the path's folder). A name that is not
    UTF-8 (a Latin-1 folder, held with a lone surrogate) the bindings refuse as a str, and a log line naming its
    bytes fails their decoding (an "Exception caught in log()" line): its folder goes through its descriptor
    (``/proc/self/fd/N``), else (no ``/proc``, a file name that is not UTF-8) the path goes as bytes."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        yield path
        return
    folder, name = os.path.split(path)
    try:
        name.encode("utf-8")
        fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except (UnicodeEncodeError, OSError):
        yield os.fsencode(path)
        return
    try:
        through = f"/proc/self/fd/{fd}"
        yield f"{through}/{name}" if os.path.isdir(through) else os.fsencode(path)
    finally:
        os.close(fd)


def _parse_file(parser: IOnnxParser, path: str, source: ModelSource) -> bool:
    """Check the model file's external data, then parse the very bytes checked, through one read-only map in the
    builder process (TensorRT's ``parse_from_file`` reads through a stream, ~0.1 s more for a 100 MB model here),
    read into memory in the user's process, or where another user may write the file (a shared map would show
    their rewrite to the parser: W23-1). The parser reads only the external-data files checked (see
    :func:`_parse_with_data`)."""
    with open(_external_data.open_model(path), "rb") as handle:  # a regular file
        before = os.fstat(handle.fileno())
        # another user may write it, or its stat may not stand for its bytes yet: parsed from memory, by their hash
        unvouched = not _external_data.stat_vouches(before, handle.fileno(), time.time_ns())
        ok = _parse_opened(parser, path, source, handle, before, unvouched)
        if not unvouched:  # (else noted by the hash of the bytes parsed)
            _note_model_read(path, handle, before)
    return ok


def _note_model_read(path: str, handle: BinaryIO, before: os.stat_result) -> None:
    """Record the model file as read (``_external_data.note_read``): unchanged on its descriptor, and its name still
    leading to it (a parser given the path reads it by name)."""
    try:
        after: os.stat_result | None = os.fstat(handle.fileno())
        named = os.stat(path)
        if after is not None and (named.st_dev, named.st_ino) != (after.st_dev, after.st_ino):
            after = None
    except OSError:
        after = None
    _external_data.note_read(_external_data.MODEL_FILE, before, after)


def _parse_opened(
    parser: IOnnxParser, path: str, source: ModelSource, handle: BinaryIO, before: os.stat_result, unvouched: bool
) -> bool:
    """:func:`_parse_file` of the model file open as ``handle`` (stat ``before`` the read; ``unvouched``: its stat
    does not vouch for its bytes, :func:`_external_data.stat_vouches`)."""
    empty = f"could not parse {source.shown} as ONNX: the file is empty (0 bytes)"  # said here: the parser would
    if os.fstat(handle.fileno()).st_size == 0:  # open the file again by name to say it
        raise BuildError(empty)
    # the user's process: a mapped file that shrinks would be SIGBUS
    if not _external_data.MAP_FILES or unvouched:
        data = _external_data.read_model(handle, path)
        if not data:
            raise BuildError(empty)
        if unvouched:  # these bytes are parsed, whatever the file holds by then
            after = os.fstat(handle.fileno())
            _external_data.note_read(_external_data.MODEL_FILE, before, after, hashlib.sha256(data).hexdigest())
        locations = external_locations(data)
        check_external_data(locations, source.directory, source.label, source.hint)
        return _parse_with_data(parser, path, source, locations, data, unvouched)
    if capabilities()["gil_unsafe_parse"]:
        locations = file_locations(path, remembered=False)
        check_external_data(locations, source.directory, source.label, source.hint)
        return _parse_with_data(parser, path, source, locations, None)
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            locations = file_locations(path, mapped)
            check_external_data(locations, source.directory, source.label, source.hint)
            return _parse_with_data(parser, path, source, locations, view)
        finally:
            view.release()


def _parse_with_data(
    parser: IOnnxParser,
    path: str,
    source: ModelSource,
    locations: list[str],
    data: bytes | memoryview | None,
    unvouched: bool = False,
) -> bool:
    """Parse the model (``data``, or the file at ``path`` where ``data`` is None) with the
    external-data files just checked, each opened once and checked on its descriptor. Where another user could
    rename names in the model's folder (or a folder on its way), or the model file's stat does not vouch for its
    bytes (``unvouched``) while the parser would read it again by name, the parser reads a private 0700 copy of the
    model (``data``) and of those very files; elsewhere it reads them in place, and a name that no longer leads to
    the file held once it is done fails the build (the parser opens the names again)."""
    by_name = data is None or bool(capabilities()["gil_unsafe_parse"])  # the parser opens ``path``
    again = unvouched and data is not None and by_name
    if (not locations and not by_name) or source.directory is None:
        with _parser_path(path) as given:
            return _parse_at(parser, given, data)
    with _external_data.HeldData(locations, source.directory, source.label) as held:
        held.model = path
        if again or held.unvouched or held.shared():
            if data is None:
                with open(_external_data.open_model(path), "rb") as handle:
                    before = os.fstat(handle.fileno())
                    data = _external_data.read_model(handle, path)
                    _note_model_read(path, handle, before)
            snapshot = held.copy_to_snapshot(data)
            held.note_reads()  # the copies are what the parser reads
            with _parser_path(snapshot) as given:
                return _parse_at(parser, given, data)
        with _parser_path(path) as given:
            ok = _parse_at(parser, given, data)
        held.check_unchanged()
        held.note_reads()
        return ok


def _parse_at(parser: IOnnxParser, given: str | bytes, data: bytes | memoryview | None) -> bool:
    """Parse ``data`` (its external data found from the path ``given``), or the file at ``given`` where there is no
    ``data`` or the bindings would read the buffer without the GIL (:func:`_parse_bytes`)."""
    if data is None or capabilities()["gil_unsafe_parse"]:
        return bool(parser.parse_from_file(given))
    return bool(parser.parse(data, given))  # path: where its external data lies


def _parse_bytes(parser: IOnnxParser, data: bytes) -> bool:
    """``parser.parse(data)``, except where the bindings read the buffer without the GIL (NVIDIA 10.0-10.12):
    there the parser reads a private temporary file instead."""
    if not capabilities()["gil_unsafe_parse"]:
        return bool(parser.parse(data))
    import tempfile

    from ._leftovers import check_parent

    with tempfile.TemporaryDirectory(prefix="trt_widget-", dir=check_parent(tempfile.gettempdir())) as directory:
        path = os.path.join(directory, "model.onnx")
        with open(path, "wb") as handle:
            handle.write(data)
        with _parser_path(path) as given:  # a TMPDIR that is not UTF-8
            return bool(parser.parse_from_file(given))


def _describe_parser_error(error: IParserError) -> str:
    text = str(error.desc()).strip()
    node = ""
    try:
        if error.node_name():
            node = f"node {_short(str(error.node_name()), 200)!r}"
        if error.node_operator():
            node += f" ({error.node_operator()})"
    except Exception:
        pass
    return f"{node}: {text}" if node else text


def _check_network(network: INetworkDefinition, options: BuildOptions, logger: CaptureLogger | None = None) -> None:
    if network.num_outputs == 0:
        raise BuildError("the network has no outputs: mark at least one tensor with network.mark_output(tensor)")
    inputs = {network.get_input(i).name: tuple(network.get_input(i).shape) for i in range(network.num_inputs)}
    for profile in options.profile_list() or [{}]:
        _check_profile(inputs, profile)
    fixed = sorted({name for p in options.profile_list() for name in p if all(d >= 0 for d in inputs[name])})
    if fixed and logger is not None:  # TensorRT builds the model's own shapes: said, as trtexec stays silent
        said = ", ".join(f"{n!r} {'x'.join(map(str, inputs[n]))}" for n in fixed)
        logger.log(2, f"[trt_widget] the shapes given have no effect: the model's input(s) {said} have fixed shapes")


def _check_profile(inputs: dict[str, tuple[int, ...]], profiles: dict[str, Profile]) -> None:
    unknown = sorted(set(profiles) - set(inputs))
    if unknown:
        raise BuildError(
            f"the shapes given (--shapes / --min-shapes... on the command line, profiles= in Python) name unknown "
            f"input(s) {unknown}; the network's inputs are {sorted(inputs)}"
        )
    for name, shape in inputs.items():
        if name in profiles:
            lo = profiles[name][0]
            if len(lo) != len(shape):
                given = "x".join(map(str, lo)) or "(a scalar)"
                dims = "x".join(str(d) if d >= 0 else "N" for d in shape) or "(a scalar)"
                raise BuildError(
                    f"the shape given for input {name!r} (--shapes / --min-shapes... on the command line, profiles= "
                    f"in Python) has {len(lo)} dimension(s), {given}, but the input has {len(shape)}: {dims}"
                )
            fixed = [(i, d) for i, d in enumerate(shape) if d >= 0 and any(p[i] != d for p in profiles[name])]
            if fixed:
                raise BuildError(_fixed_dimensions(name, shape, profiles[name], fixed))
        elif any(d < 0 for d in shape):
            dims = "x".join(str(d) if d >= 0 else "N" for d in shape)
            raise BuildError(
                f"input {name!r} has a dynamic shape {shape}: give its shapes — on the command line --shapes "
                f"{name}:{dims} (N a number) or --min-shapes/--opt-shapes/--max-shapes {name}:{dims}; in Python "
                f"profiles={{{name!r}: (min_shape, opt_shape, max_shape)}}"
            )


def _set_precisions(t: TensorRT, config: IBuilderConfig, options: BuildOptions) -> None:
    """The weak-typing precision flags (check_options refused those the API lacks); best: every one it has but FP8,
    as trtexec --best."""
    for name in options.weak_precisions:
        names = ["FP16", "INT8", "BF16"] if name == "best" else [PRECISION_FLAGS[name]]
        for flag in names:
            if hasattr(t.BuilderFlag, flag):
                config.set_flag(getattr(t.BuilderFlag, flag))


def _configure(
    t: TensorRT,
    builder: IBuilder,
    config: IBuilderConfig,
    network: INetworkDefinition,
    options: BuildOptions,
    logger: CaptureLogger,
) -> tuple[ITimingCache | None, bytes | None]:
    """Apply ``options`` to ``config``; returns the timing cache attached (or None) and the file's bytes it was
    made from (None where it was not: no file, or a new cache replaced one that did not fit)."""
    if options.optimization_level is not None:
        config.builder_optimization_level = options.optimization_level
    if options.workspace is not None:
        config.set_memory_pool_limit(t.MemoryPoolType.WORKSPACE, options.workspace)
    _set_precisions(t, config, options)
    for profile_shapes in options.profile_list():
        profile = builder.create_optimization_profile()
        for name, (lo, opt, hi) in profile_shapes.items():
            profile.set_shape(name, lo, opt, hi)
        config.add_optimization_profile(profile)
    if options.dla_core is not None:
        cores = int(getattr(builder, "num_DLA_cores", 0))
        if options.dla_core >= cores:
            raise BuildError(f"dla_core={options.dla_core}: this device has {cores} DLA core(s) (DLA: Jetson AGX/NX)")
        config.default_device_type = t.DeviceType.DLA
    if options.engine_report and options.profiling_verbosity is None and hasattr(t, "ProfilingVerbosity"):
        config.profiling_verbosity = t.ProfilingVerbosity.DETAILED  # the layer record needs it (engine_report)
    for name, how in TRT_SETTINGS.items():  # check_options made sure the API has each one that is set
        value = getattr(options, name)
        if value is None:
            continue
        if how[0] == "flag":
            if value is False and name != "tf32":  # False is the default of every flag option but tf32
                continue
            flag = getattr(t.BuilderFlag, how[1])
            if value:
                config.set_flag(flag)
            else:
                config.clear_flag(flag)
            kept = bool(config.get_flag(flag)) == bool(value)
        else:
            target = value if how[0] == "attr" else getattr(getattr(t, how[2]), value.upper())
            setattr(config, how[1], target)
            kept = getattr(config, how[1]) == target
        if not kept:  # the API has the setting but ignores it (TensorRT for RTX: hardware compatibility, DLA core)
            raise BuildError(
                f"{name}={value!r} is not available with {capabilities()['label']}: its builder config ignores "
                f"{how[1]} (see the WARNING lines TensorRT logged)"
            )
    if options.tactic_sources is not None:
        mask = int(config.get_tactic_sources())
        for item in options.tactic_sources.split(","):
            bit = 1 << int(getattr(t.TacticSource, item[1:]))
            mask = mask | bit if item[0] == "+" else mask & ~bit
        config.set_tactic_sources(mask)
    cache, loaded = None, None
    if options.timing_cache:
        path = Path(options.timing_cache)
        if not uses_timing_cache(select_backend()[0]):
            logger.log(
                2, f"{RTX_TIMING_CACHE}; {path} is neither read nor written (it speeds up NVIDIA TensorRT builds)"
            )
            return None, None
        try:
            data = read_regular(path, TIMING_CACHE_LIMIT) if path.exists() else b""  # checked at start, maybe swapped
        except OSError as exc:
            logger.log(2, f"timing_cache: could not read {path} ({exc.strerror or exc}); building without it")
            data = b""
        if options.optimization_level == 0:
            logger.log(2, "timing_cache: optimization_level=0 does not use the timing cache")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if data and not _looks_like_a_timing_cache(config, data, logger):
                logger.log(
                    2,
                    f"timing_cache: {path} is not a TensorRT timing cache (it does not begin as one does); "
                    "building without a cache, and the file is left as it was. Name a new file to keep one",
                )
                return None, None
            cache = config.create_timing_cache(data)
            accepted = cache is not None and config.set_timing_cache(cache, False)
            # a file TensorRT reads as empty is not what the cache holds: saving must still keep a copy of it
            loaded = data if accepted and data and not _unreadable(config, data, cache, logger) else None
            if not accepted and data:
                logger.log(
                    2,
                    f"timing_cache: {path} does not fit this TensorRT version or device; building with "
                    f"a new cache, which replaces it when the build succeeds (a copy is kept as {path}.previous)",
                )
                cache = config.create_timing_cache(b"")
                accepted = cache is not None and config.set_timing_cache(cache, False)
        if not accepted:
            logger.log(2, "timing_cache: TensorRT refused a new timing cache; building without one")
            return None, None
    return cache, loaded


def uses_timing_cache(backend: str) -> bool:
    """Whether ``timing_cache=`` is read and written: NVIDIA TensorRT's builds reuse its tactic timings; TensorRT
    for RTX tunes no tactics (NVIDIA: its timing-cache calls do not affect RTX engines; deprecated in RTX 1.2)."""
    return backend != "rtx"


def _fixed_dimensions(name: str, shape: tuple[int, ...], given: Profile, fixed: list[tuple[int, int]]) -> str:
    """A profile that changes dimensions the model fixes, said plainly: which ones, to what, and what to give."""
    model = "x".join(str(d) if d >= 0 else "N" for d in shape)
    changes = ", ".join(
        f"dimension {i} to {'/'.join(str(v) for v in sorted({p[i] for p in given}))} where the model fixes it at {d}"
        for i, d in fixed
    )
    kept = "x".join(str(d) if d >= 0 else str(given[1][i]) for i, d in enumerate(shape))
    if all(d >= 0 for d in shape):  # nothing can vary: the shape flags are not for this input
        return (
            f"the shapes given for input {name!r} set {changes}: the model's input is {model}, fixed in every "
            f"dimension, so it takes no shape flags — leave {name} out of them, or export the model with a "
            "dynamic dimension (e.g. the batch)"
        )
    return (
        f"the shapes given for input {name!r} set {changes}: the model's input is {model}, and only its dynamic "
        f"dimensions (N) can vary — give {name}:{kept} there, or export the model with that dimension dynamic"
    )
