"""The patch: while any watch is active, TensorRT's ``Builder`` build methods set trt_widget's monitor on the
config (chaining the code's own), and ``threading.Thread.start`` passes the starting thread's watches on to the
new thread. Reference-counted: the first watch installs it, the last one to end restores the originals.

Which watches see a build: those open on its thread (innermost last), those of the thread that started it
(recursively), and the process-wide ones (``trt-widget run``). A build whose config already holds a trt_widget
monitor (trt_widget's own thread builds) is left alone.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .._tensorrt_types import IProgressMonitor
    from ._watch import Watch

# Builder methods that build (torch-TensorRT calls the first two positionally: (network, config)); each is
# patched where the bindings have it.
METHODS = (
    "build_serialized_network",
    "build_engine_with_config",
    "build_serialized_network_to_stream",
    "build_engine",  # TensorRT 8 (torch-TensorRT's fx path); gone since 10
)

_lock = threading.RLock()
_active: list[Watch] = []  # the open watches, in the order they opened
_process_wide: list[Watch] = []
_originals: dict[str, Method] = {}  # method name -> TensorRT's own (what the class held before the patch)
_patched: dict[str, Method] = {}  # method name -> our wrapper, as installed
_first: dict[str, Method] = {}  # method name -> what the class held before the first watch (kept after it closes)
_builder: object = None  # the Builder class patched
_thread_start: Callable[..., None] | None = None  # threading.Thread.start before the patch
_local = threading.local()  # .stack: the watches opened on this thread
_inherited: weakref.WeakKeyDictionary[threading.Thread, tuple[Watch, ...]] = weakref.WeakKeyDictionary()
# The ONNX parser, patched alongside: which network a parser fills, and the file a network was parsed from (what
# tells watched builds of different files apart). Weak: the code's objects live as long as the code keeps them.
PARSER_METHODS = ("__init__", "parse_from_file", "parse")
_parser: object = None  # the OnnxParser class patched
_parser_originals: dict[str, Method] = {}
_parser_patched: dict[str, Method] = {}
_parser_network: weakref.WeakKeyDictionary[object, weakref.ref[object]] = weakref.WeakKeyDictionary()
_network_file: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


@runtime_checkable
class Config(Protocol):
    """What a watched build reads and sets on TensorRT's ``IBuilderConfig``."""

    progress_monitor: IProgressMonitor | None
    builder_optimization_level: int
    flags: int
    num_optimization_profiles: int


Method = Callable[..., object]  # one of TensorRT's Builder methods (or the wrapper standing for it)
# (method name, TensorRT's method, the builder, args, kwargs, network, config, the watches that see it)
Handler = Callable[
    [str, Method, object, tuple[object, ...], dict[str, object], object, Config, tuple["Watch", ...]], object
]
_handler: Handler | None = None  # set by _calls: runs one watched build


def set_handler(handler: Handler) -> None:
    global _handler
    _handler = handler


def current_watches() -> tuple[Watch, ...]:
    """The open watches that see a build started on this thread now, outermost first."""
    if not _active:
        return ()
    inherited = _inherited.get(threading.current_thread(), ())
    own = tuple(getattr(_local, "stack", ()))
    seen: list[Watch] = []
    for watch in (*_process_wide, *inherited, *own):
        if watch.active and watch not in seen:
            seen.append(watch)
    return tuple(seen)


def is_patched() -> bool:
    """True while TensorRT's Builder holds trt_widget's wrappers."""
    with _lock:
        return bool(_patched)


def originals() -> dict[str, Method]:
    """TensorRT's own build methods as the Builder class held them before the first watch (what it holds now
    if no watch has opened yet)."""
    from .._backend import trt

    builder = trt().Builder
    with _lock:
        if _originals:
            return dict(_originals)
        if _first:
            return dict(_first)
    return {name: builder.__dict__[name] for name in METHODS if name in builder.__dict__}


def network_file(network: object) -> str | None:
    """The path of the ONNX file a parser read into ``network`` while a watch was open, or None."""
    try:
        return _network_file.get(network)
    except TypeError:  # an object that cannot be weakly referenced: never recorded
        return None


def activate(watch: Watch, *, process_wide: bool = False) -> None:
    """Open ``watch`` on this thread (installing the patch if it is the first)."""
    with _lock:
        if not _active:
            _install()
        _active.append(watch)
        if process_wide:
            _process_wide.append(watch)
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(watch)


def deactivate(watch: Watch) -> None:
    """Close ``watch`` (removing the patch if it was the last one open)."""
    stack = getattr(_local, "stack", [])
    if watch in stack:
        stack.remove(watch)
    with _lock:
        if watch in _active:
            _active.remove(watch)
        if watch in _process_wide:
            _process_wide.remove(watch)
        if not _active:
            _uninstall()


def _install() -> None:
    global _builder, _thread_start
    from .._backend import trt

    _builder = trt().Builder
    for name in METHODS:
        original = _builder.__dict__.get(name)
        if original is None:
            continue
        wrapper = _wrap(name, original)
        _originals[name] = original
        _first.setdefault(name, original)
        _patched[name] = wrapper
        setattr(_builder, name, wrapper)
    _thread_start = threading.Thread.start
    threading.Thread.start = _start  # type: ignore[method-assign]
    _install_parser(trt())


def _install_parser(module: object) -> None:
    global _parser
    _parser = getattr(module, "OnnxParser", None)
    if _parser is None:
        return
    for name in PARSER_METHODS:
        original = _parser.__dict__.get(name)
        if original is not None:
            _parser_originals[name] = original
            _parser_patched[name] = wrapper = _wrap_parser(name, original)
            setattr(_parser, name, wrapper)


def _wrap_parser(name: str, original: Method) -> Method:
    """The parser's ``name`` as it was, noting the network it fills (``__init__``) and the file it reads."""

    def noted(self: object, *args: object, **kwargs: object) -> object:
        result = original(self, *args, **kwargs)
        try:
            if name == "__init__":
                network = args[0] if args else kwargs.get("network")
                if network is not None:
                    _parser_network[self] = weakref.ref(network)
            else:
                path = args[0] if name == "parse_from_file" and args else kwargs.get("path")
                if name == "parse" and len(args) > 1:
                    path = args[1]
                held = _parser_network.get(self)
                network = held() if held is not None else None
                if isinstance(path, str) and path and network is not None:
                    _network_file[network] = path
        except Exception:  # the code's parse stands whatever the bookkeeping meets
            pass
        return result

    noted.__name__ = name
    noted.__qualname__ = f"OnnxParser.{name}"
    noted.__doc__ = getattr(original, "__doc__", None)
    noted.__wrapped__ = original  # type: ignore[attr-defined]
    return noted


def _uninstall() -> None:
    global _thread_start
    for name, wrapper in list(_patched.items()):
        if _builder.__dict__.get(name) is wrapper:  # someone patched over us: leave theirs in place
            setattr(_builder, name, _originals[name])
    _patched.clear()
    _originals.clear()
    for name, wrapper in list(_parser_patched.items()):
        if _parser is not None and _parser.__dict__.get(name) is wrapper:
            setattr(_parser, name, _parser_originals[name])
    _parser_patched.clear()
    _parser_originals.clear()
    if threading.Thread.start is _start and _thread_start is not None:
        threading.Thread.start = _thread_start  # type: ignore[method-assign]
    _thread_start = None


def _start(self: threading.Thread) -> None:
    watches = current_watches()
    if watches:
        _inherited[self] = watches
    start = _thread_start if _thread_start is not None else _ORIGINAL_THREAD_START
    start(self)


_ORIGINAL_THREAD_START = threading.Thread.start


def _network_config(args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, object]:
    network = args[0] if args else kwargs.get("network")
    config = args[1] if len(args) > 1 else kwargs.get("config")
    return network, config


def _wrap(name: str, original: Method) -> Method:
    def watched(self: object, *args: object, **kwargs: object) -> object:
        owners = current_watches()
        if not owners or _handler is None:
            return original(self, *args, **kwargs)
        network, maybe_config = _network_config(args, kwargs)
        config = _config_to_watch(maybe_config)
        if config is None or network is None:
            return original(self, *args, **kwargs)
        return _handler(name, original, self, args, kwargs, network, config, owners)

    watched.__name__ = name
    watched.__qualname__ = f"Builder.{name}"
    watched.__doc__ = getattr(original, "__doc__", None)
    watched.__wrapped__ = original  # type: ignore[attr-defined]
    return watched


def _config_to_watch(config: object) -> Config | None:
    """``config`` where the build is ours to watch; None where it is not a builder config, or carries a
    trt_widget monitor already (trt_widget's own build, or one the code set itself)."""
    from .._monitor import BuildMonitor  # a WatchMonitor is one too

    try:
        if isinstance(config, Config) and not isinstance(config.progress_monitor, BuildMonitor):
            return config
    except Exception:  # a config-like object whose attributes fail: not ours to watch
        pass
    return None
