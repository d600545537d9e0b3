"""A build caught in the code's own call: a :class:`~trt_widget.Build` whose runner is "the user's code".

The patched Builder method (on the code's thread) starts a :class:`WatchedBuild`; its runner hands the build's
:class:`~trt_widget._runner.RunContext`-typed context to that thread, which builds with TensorRT's original
method and a :class:`WatchMonitor` fed by the context, then tells the runner how it ended. So a watched build
goes through the same phase model, subscribe, events and history path as any other.

A cancel that trt_widget asked for (Stop, budget, Ctrl-C) raises :class:`~trt_widget.BuildCancelled` from the
patched call (KeyboardInterrupt for a Ctrl-C on the main thread), so every tool's own error path says the build
was cancelled; a cancel by the code's own monitor returns None, as TensorRT does.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from types import FrameType
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar, runtime_checkable

from .._build import Build
from .._engine import ModelSource
from .._errors import BuildCancelled, BuildError
from .._status import CANCELLED, log
from .._tensorrt_types import ILayer, INetworkDefinition, ITensor
from ..runners import RunContext, tensorrt_call
from . import _patch
from ._monitor import WatchMonitor
from ._patch import Config, Method, network_file

if TYPE_CHECKING:
    from ._watch import Watch, WatchSettings

T = TypeVar("T")

_UNNAMED = re.compile(r"^Unnamed Network \d+$")  # TensorRT numbers unnamed networks per process


@runtime_checkable
class Network(INetworkDefinition, Protocol):
    """TensorRT's ``INetworkDefinition``, checked at run time (the code's call may pass anything)."""


class TensorInfo(TypedDict):
    name: str
    shape: list[int]
    dtype: str


class ConfigInfo(TypedDict):
    builder_optimization_level: int | None
    flags: int | None
    profiles: int | None


class _NetworkInfo(TypedDict):
    name: str
    layers: int
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    layer_digest: str


class NetworkInfo(_NetworkInfo, total=False):
    """:func:`network_info`'s description of a network (``config``: where a config was given)."""

    config: ConfigInfo


def _safe(fn: Callable[[], T], default: T) -> T:
    try:
        return fn()
    except Exception:
        return default


def network_info(network: Network, config: Config | None = None) -> NetworkInfo:
    """What identifies a network across runs: name, layer count, inputs (name, shape, dtype), outputs, a digest
    of its layers (name, type), and the engine-shaping config settings."""
    safe = _safe

    name = str(safe(lambda: network.name, "") or "")
    name = "Unnamed Network" if _UNNAMED.match(name) else name

    def tensor(get: Callable[[int], ITensor], i: int) -> TensorInfo | None:
        def describe() -> TensorInfo:
            t = get(i)
            return {"name": str(t.name), "shape": [int(d) for d in t.shape], "dtype": str(t.dtype).split(".")[-1]}

        return safe(describe, None)

    n_in = int(safe(lambda: network.num_inputs, 0))
    n_out = int(safe(lambda: network.num_outputs, 0))
    n_layers = int(safe(lambda: network.num_layers, 0))
    digest = hashlib.sha256()
    for i in range(n_layers):
        layer: ILayer | None = safe(functools.partial(network.get_layer, i), None)
        digest.update(f"{getattr(layer, 'name', '')}|{getattr(layer, 'type', '')}\n".encode(errors="surrogatepass"))
    info: NetworkInfo = {
        "name": name,
        "layers": n_layers,
        "inputs": [x for x in (tensor(network.get_input, i) for i in range(n_in)) if x],
        "outputs": [x for x in (tensor(network.get_output, i) for i in range(n_out)) if x],
        "layer_digest": digest.hexdigest()[:16],
    }
    if config is not None:
        info["config"] = {
            "builder_optimization_level": safe(lambda: int(config.builder_optimization_level), None),
            "flags": safe(lambda: int(config.flags), None),
            "profiles": safe(lambda: int(config.num_optimization_profiles), None),
        }
    return info


_unnamed_builds = itertools.count(1)  # numbers the watched builds of unnamed networks parsed from no known file


def network_label(info: NetworkInfo, file: str | None = None, number: int | None = None) -> str:
    """``"model.onnx · 12 layers · input 1x8x8x8"``: a short name for a watched build that tells builds apart: the
    ONNX file the parser read (``file``), else the network's name, else ``Unnamed Network #number``."""
    name = os.path.basename(file) if file else info["name"]
    if not file and (not name or name == "Unnamed Network") and number is not None:
        name = f"Unnamed Network #{number}"
    inputs = ", ".join(f"{t['name']} {'x'.join(str(d) for d in t['shape'])}" for t in info["inputs"][:3])
    more = f" +{len(info['inputs']) - 3}" if len(info["inputs"]) > 3 else ""
    return f"{name or 'network'} · {info['layers']} layers" + (f" · {inputs}{more}" if inputs else "")


class UserCodeRunner:
    """The runner of a watched build: the build happens in the code's own call; ``run`` hands over the context
    and waits for that call to say how it ended."""

    name = "user code"
    framed = True
    local = True

    def __init__(self) -> None:
        self._ctx: Future[RunContext] = Future()
        self._outcome: Future[bytes | None] = Future()

    def run(self, ctx: RunContext) -> bytes | None:
        self._ctx.set_result(ctx)
        return self._outcome.result()

    def context(self) -> RunContext:
        return self._ctx.result()

    def finish(self, engine: bytes | None) -> None:
        self._outcome.set_result(engine)

    def fail(self, error: BuildError) -> None:
        self._outcome.set_exception(error)


class WatchedBuild(Build):
    """One TensorRT build caught inside watched code (its source is the network's description, not a file)."""

    shared_roles = frozenset({"timing_cache=", "events="})  # a watch's builds append to its one events file

    def __init__(self, network: object, config: Config, *, method: str, settings: WatchSettings) -> None:
        if not isinstance(network, Network):
            raise TypeError(f"{method} was given {type(network).__name__}, not a TensorRT network")
        self.runner_ = UserCodeRunner()
        self.method = method
        self.network = network_info(network, config)
        self.interrupted = False  # a Ctrl-C asked for the cancel
        self.monitor: WatchMonitor | None = None
        description = json.dumps(self.network, sort_keys=True).encode()
        file = network_file(network)
        unnamed = not file and self.network["name"] in ("", "Unnamed Network")
        label = network_label(self.network, file, next(_unnamed_builds) if unnamed else None)
        super().__init__(
            ModelSource("network", description, label),
            runner=self.runner_,
            events=settings.get("events"),
            history=settings.get("history", True),
            resources=settings.get("resources", True),
            isolation="thread",
            budget=settings.get("budget"),
        )


@runtime_checkable
class _HostMemory(Protocol):
    """TensorRT's ``IHostMemory``: a serialized engine, ``nbytes`` long."""

    nbytes: int
    if TYPE_CHECKING:  # the C buffer protocol: no attribute to check at run time before Python 3.12

        def __buffer__(self, flags: int, /) -> memoryview: ...


def _result_of(method: str, result: object) -> tuple[bool, int | None]:
    """(an engine was produced, its size in bytes when known)."""
    if method == "build_serialized_network_to_stream":
        return bool(result), None
    if result is None:
        return False, None
    try:
        if isinstance(result, _HostMemory):
            return True, int(result.nbytes)
    except Exception:
        pass
    return True, None  # an ICudaEngine (build_engine_with_config): no serialized size


def call_watched(
    method: str,
    original: Method,
    builder: object,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    network: object,
    config: Config,
    owners: tuple[Watch, ...],
) -> object:
    """Run one Builder call as a watched build seen by ``owners`` (the innermost watch's settings apply)."""
    settings = owners[-1].settings
    try:
        build = WatchedBuild(network, config, method=method, settings=settings)
        theirs = config.progress_monitor
    except Exception:  # watching must never break the code's build: it runs unwatched
        log.exception("trt_widget could not watch this %s call; it runs unwatched", method)
        return original(builder, *args, **kwargs)
    for watch in owners:
        watch._adopt(build)
    build.start()
    ctx = build.runner_.context()
    monitor = build.monitor = WatchMonitor(ctx.model, ctx.cancel, theirs)
    stopped = next((w for w in owners if w.stopping), None)
    if stopped is not None:
        build.stop(stopped.stop_reason)
    config.progress_monitor = monitor
    try:
        with tensorrt_call(lambda: build.stop("the interpreter is exiting")), _ctrl_c_cancels(monitor):
            result = original(builder, *args, **kwargs)
    except BaseException as exc:
        build.runner_.fail(BuildError(f"{method} raised {type(exc).__name__}: {exc}"))
        build.wait()
        _settle(build, owners)
        raise
    finally:
        with contextlib.suppress(Exception):  # never lose the build's outcome over the restore
            config.progress_monitor = theirs
    produced, size = _result_of(method, result)
    ours = ctx.cancel.is_set() or monitor.interrupted  # trt_widget asked for this cancel (Stop, budget, Ctrl-C)
    if produced:
        if size is not None:  # None: the method returned an engine object or wrote a stream
            ctx.on_engine_size(size)
        keep = settings.get("keep_engines") and size is not None and isinstance(result, _HostMemory)
        build.runner_.finish(bytes(memoryview(result)) if keep and isinstance(result, _HostMemory) else b"")
    elif ours:
        if not ctx.cancel.is_set():  # a Ctrl-C whose helper thread has not marked the build yet
            build.stop("interrupted (Ctrl-C)")
        build.runner_.finish(None)
    elif monitor.cancelled_by_theirs:
        ctx.note("cancelled by the code's own progress monitor")
        build.runner_.finish(None)
    else:
        build.runner_.fail(BuildError(f"TensorRT's {method} returned no engine (see TensorRT's log)"))
    build.wait()
    _settle(build, owners)
    if produced or not ours or build.status != CANCELLED:
        return result
    message = f"the watched build of {build.source.label} was cancelled: {build.status_detail or 'stopped'}"
    if (build.interrupted or monitor.interrupted) and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt(message)
    raise BuildCancelled(message)


def _settle(build: WatchedBuild, owners: tuple[Watch, ...]) -> None:
    """The build ended: each owner's ``settle`` hook runs before the code goes on (never raises)."""
    for watch in owners:
        if watch.settle is not None:
            try:
                watch.settle(build)
            except Exception:
                log.debug("a watch's settle hook failed", exc_info=True)


@contextlib.contextmanager
def _ctrl_c_cancels(monitor: WatchMonitor) -> Iterator[None]:
    """On the main thread with Python's own SIGINT handler (``watch(interrupt=False)``): Ctrl-C would raise inside
    TensorRT's callback, where the bindings catch and print it and the interrupt is lost; it cancels the build at
    the next step boundary instead, and the call then raises KeyboardInterrupt. A handler of the program's own is
    left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        monitor.interrupted = True

    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield
            return
        signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            if signal.getsignal(signal.SIGINT) is on_sigint:
                signal.signal(signal.SIGINT, signal.default_int_handler)


_patch.set_handler(call_watched)
