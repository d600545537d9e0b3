"""TensorRT's Python API as trt_widget uses it: one Protocol per object it touches, only the members it uses.

NVIDIA's ``tensorrt`` and ``tensorrt_rtx_bindings`` ship no type information (pybind11), so without these every
builder, network and config would be untyped. :func:`trt_widget._backend.trt` returns the module as
:class:`TensorRT`; the objects it makes follow from the signatures here. TensorRT's classes to subclass
(``ProgressMonitorBase``, ``LoggerBase``) are in ``_backend``. This module imports nothing of trt_widget's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, SupportsInt

Shape = Sequence[int]  # what TensorRT takes for a shape (its Dims, a tuple or a list of ints)


class IHostMemory(Protocol):
    """A serialized engine or timing cache: TensorRT's buffer (read through ``memoryview``)."""

    def __buffer__(self, flags: int, /) -> memoryview: ...

    @property
    def nbytes(self) -> int: ...


class ILogger(Protocol):
    """TensorRT's logger interface: ``log(severity, msg)``; int(severity): 0 INTERNAL_ERROR … 4 VERBOSE."""

    def log(self, severity: SupportsInt, msg: str, /) -> None: ...


class IProgressMonitor(Protocol):
    """TensorRT's progress monitor interface (``config.progress_monitor``); False from ``step_complete`` cancels."""

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int, /) -> None: ...

    def step_complete(self, phase_name: str, step: int, /) -> bool: ...

    def phase_finish(self, phase_name: str, /) -> None: ...


class ITensor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> Iterable[int]: ...  # TensorRT's Dims: iterable, -1 for a dynamic dimension

    @property
    def dtype(self) -> object: ...  # a DataType enum member (``str()`` names it)


class ILayer(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def type(self) -> object: ...  # a LayerType enum member


class INetworkDefinition(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def num_layers(self) -> int: ...

    @property
    def num_inputs(self) -> int: ...

    @property
    def num_outputs(self) -> int: ...

    def get_input(self, index: int, /) -> ITensor: ...

    def get_output(self, index: int, /) -> ITensor: ...

    def get_layer(self, index: int, /) -> ILayer: ...

    def mark_output(self, tensor: ITensor, /) -> None: ...


class IParserError(Protocol):
    def desc(self) -> str: ...

    def node_name(self) -> str: ...

    def node_operator(self) -> str: ...


class IOnnxParser(Protocol):
    @property
    def num_errors(self) -> int: ...

    def get_error(self, index: int, /) -> IParserError: ...

    def parse(self, model: bytes | memoryview, path: str | bytes = ..., /) -> bool: ...

    def parse_from_file(self, path: str | bytes, /) -> bool: ...


class ITimingCache(Protocol):
    def serialize(self) -> IHostMemory: ...

    def combine(self, other: ITimingCache, ignore_mismatch: bool, /) -> bool: ...


class IOptimizationProfile(Protocol):
    def set_shape(self, name: str, min: Shape, opt: Shape, max: Shape, /) -> None: ...


class IBuilderConfig(Protocol):
    """The builder config members trt_widget sets; enum values (flags, pools, device types) are opaque here."""

    progress_monitor: IProgressMonitor | None
    builder_optimization_level: int
    profiling_verbosity: object
    default_device_type: object

    @property
    def flags(self) -> int: ...

    @property
    def num_optimization_profiles(self) -> int: ...

    def set_flag(self, flag: object, /) -> None: ...

    def clear_flag(self, flag: object, /) -> None: ...

    def get_flag(self, flag: object, /) -> bool: ...

    def set_memory_pool_limit(self, pool: object, pool_size: int, /) -> None: ...

    def add_optimization_profile(self, profile: IOptimizationProfile, /) -> int: ...

    def get_tactic_sources(self) -> int: ...

    def set_tactic_sources(self, tactic_sources: int, /) -> bool: ...

    def create_timing_cache(self, serialized_timing_cache: bytes, /) -> ITimingCache | None: ...

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool, /) -> bool: ...

    def get_timing_cache(self) -> ITimingCache | None: ...


class IBuilder(Protocol):
    def create_network(self, flags: int = 0, /) -> INetworkDefinition: ...

    def create_builder_config(self) -> IBuilderConfig: ...

    def create_optimization_profile(self) -> IOptimizationProfile: ...

    def build_serialized_network(
        self, network: INetworkDefinition, config: IBuilderConfig, /
    ) -> IHostMemory | None: ...


class IPluginRegistry(Protocol):
    def load_library(self, plugin_path: str, /) -> object | None: ...  # the library's handle, None on failure


class IEngineInspector(Protocol):
    def get_engine_information(self, format: object, /) -> str: ...


class ICudaEngine(Protocol):
    def create_engine_inspector(self) -> IEngineInspector | None: ...


class IRuntime(Protocol):
    def deserialize_cuda_engine(self, serialized_engine: bytes, /) -> ICudaEngine | None: ...


class _Members(Protocol):
    """An enum's members, read by name (``getattr``) where the name comes from an option."""


class MemoryPoolType(_Members, Protocol):
    @property
    def WORKSPACE(self) -> object: ...


class DeviceType(_Members, Protocol):
    @property
    def DLA(self) -> object: ...


class ProfilingVerbosity(_Members, Protocol):
    @property
    def DETAILED(self) -> object: ...


class LayerInformationFormat(_Members, Protocol):
    @property
    def JSON(self) -> object: ...


class TensorRT(Protocol):
    """The module (``tensorrt`` or ``tensorrt_rtx_bindings``): its factories, enums and version. Members a
    backend may lack (plugins, ``ProfilingVerbosity``) are still read with ``getattr``/``hasattr``."""

    @property
    def __name__(self) -> str: ...

    @property
    def __version__(self) -> str: ...

    @property
    def BuilderFlag(self) -> _Members: ...

    @property
    def NetworkDefinitionCreationFlag(self) -> _Members: ...

    @property
    def TacticSource(self) -> _Members: ...

    @property
    def MemoryPoolType(self) -> MemoryPoolType: ...

    @property
    def DeviceType(self) -> DeviceType: ...

    @property
    def ProfilingVerbosity(self) -> ProfilingVerbosity: ...

    @property
    def LayerInformationFormat(self) -> LayerInformationFormat: ...

    def Builder(self, logger: ILogger, /) -> IBuilder: ...

    def Runtime(self, logger: ILogger, /) -> IRuntime: ...

    def OnnxParser(self, network: INetworkDefinition, logger: ILogger, /) -> IOnnxParser: ...
