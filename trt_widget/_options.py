"""Build options (the trtexec flags people expect), validated before any thread or process starts.

:class:`BuildOptions` is the one definition: each field's metadata holds its help text, its command-line flag,
whether an HTTP request may set it, and whether the builder applies it (and so where it must travel). The CLI,
the service's allowed options, the remote refusals and :class:`BuildOptionsDict` (the keyword arguments of
``Build`` and friends, checked equal to the fields by a test) follow from it. A field added without metadata
works in Python, has no CLI flag and is refused over HTTP.
"""

from __future__ import annotations

import argparse
import difflib
import math
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, SupportsIndex, TypedDict, TypeVar

from ._files import NotARegularFile, expand_user, writable_target
from ._json import JSON, JSONObject
from ._tensorrt_types import IBuilder, IBuilderConfig, INetworkDefinition

Shape = tuple[int, ...]
Profile = tuple[Shape, Shape, Shape]
# input name -> (min_shape, opt_shape, max_shape); a list of such dicts for several optimization profiles
ProfileSpec = Mapping[str, Sequence[Sequence[int]]]
ProfilesArg = ProfileSpec | Sequence[ProfileSpec]
# configure=: called as configure(builder, network, config) in the builder just before the build
ConfigureHook = Callable[[IBuilder, INetworkDefinition, IBuilderConfig], object]
T = TypeVar("T")

_MAX_SECONDS = 1e8  # well inside threading.TIMEOUT_MAX on every platform
_MAX_BYTES = 1 << 62  # what TensorRT's int64 memory-pool limit can hold, with room
# TensorRT 10's Dims hold int64 values, but a tensor's volume must fit int64 too and kernels index with int32 along
# a dimension: a dimension of 2**31 or more is a typo or an attack (2**63 raised inside the builder), never a shape
MAX_DIM = (1 << 31) - 1
MAX_RANK = 8  # nvinfer1::Dims::MAX_DIMS
NOT_OVER_HTTP = "not settable over HTTP"

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 10**3,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 10**6,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 10**9,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 10**12,
    "tib": 1 << 40,
}
_UNITS_SAID = "B, K/KiB, KB, M/MiB, MB, G/GiB, GB, T/TiB, TB; K, M, G, T are powers of 1024"
WEAK_PRECISIONS = ("fp16", "bf16", "int8", "fp8", "best")  # BuilderFlag precisions: weakly typed networks only
_ENUMS = {  # option -> (TensorRT enum, {accepted spelling: member name})
    "hardware_compatibility": (
        "HardwareCompatibilityLevel",
        {
            "none": "NONE",
            "ampere_plus": "AMPERE_PLUS",
            "ampere+": "AMPERE_PLUS",
            "same_compute_capability": "SAME_COMPUTE_CAPABILITY",
            "samecomputecapability": "SAME_COMPUTE_CAPABILITY",
        },
    ),
    "profiling_verbosity": (
        "ProfilingVerbosity",
        {"none": "NONE", "layer_names_only": "LAYER_NAMES_ONLY", "detailed": "DETAILED"},
    ),
    "tiling_optimization_level": (
        "TilingOptimizationLevel",
        {
            "none": "NONE",
            "0": "NONE",
            "fast": "FAST",
            "1": "FAST",
            "moderate": "MODERATE",
            "2": "MODERATE",
            "full": "FULL",
            "3": "FULL",
        },
    ),
}


def _option(
    default: T,
    help: str,
    *,
    flag: str | None = None,
    cli: dict[str, object] | None = None,
    http: str | None = None,
    builder: bool = True,
    engine: bool = True,
) -> T:
    """A BuildOptions field. ``flag``: its CLI flag (``cli``: more argparse settings); ``http``: why a request may
    not set it (None: it may); ``builder``: applied where TensorRT runs (so it travels to workers and Ray);
    ``engine``: it changes the engine (history keys compare builds by these)."""
    metadata = {"help": help, "flag": flag, "cli": cli or {}, "http": http, "builder": builder, "engine": engine}
    return field(default=default, metadata=metadata)


class _FlagArgs(TypedDict):
    flag: str
    cli: dict[str, object]


def _bool_flag(flag: str) -> _FlagArgs:
    return {"flag": flag, "cli": {"action": "store_true"}}


@dataclass(frozen=True)
class BuildOptions:
    """Everything that shapes an engine build. Unknown names are rejected with a suggestion.

    ``trt`` metadata says how an option reaches TensorRT's builder config, so the installed API is asked whether
    it can (``("flag", NAME)``: ``BuilderFlag.NAME``; ``("attr", NAME)``: an ``IBuilderConfig`` attribute;
    ``("enum", NAME, ENUM)``: an attribute set to a member of TensorRT's ``ENUM``).
    """

    optimization_level: int | None = _option(
        None,
        "builder optimization level 0..5 (trtexec --builderOptimizationLevel)",
        flag="--opt-level",
        cli={"type": int, "choices": range(6), "metavar": "N"},
    )
    fp16: bool = _option(
        False, "allow FP16 kernels: a weakly typed network (NVIDIA TensorRT 10.x)", **_bool_flag("--fp16")
    )
    strongly_typed: bool | None = _option(
        None,
        "the model's tensor types decide precision; None (default): strongly typed unless fp16, bf16, int8, fp8 or "
        "best asks for a weakly typed network (as trtexec); False: weak typing (NVIDIA TensorRT 10.x only)",
        flag="--strongly-typed",
        cli={"action": argparse.BooleanOptionalAction},
    )
    timing_cache: str | None = _option(
        None,
        "timing cache file, loaded before and saved after the build (trtexec --timingCacheFile)",
        flag="--timing-cache",
        cli={"metavar": "F"},
        http="a request cannot name a file on the server",
    )
    workspace: int | None = _option(
        None,
        "workspace memory-pool limit in bytes, e.g. 1GiB, 512MB or 1TiB (units B, KiB/KB, MiB/MB, GiB/GB, TiB/TB; "
        "K, M, G, T mean KiB ... TiB) (trtexec --memPoolSize=workspace:N)",
        flag="--workspace",
        cli={"metavar": "SIZE"},
    )
    profiles: dict[str, Profile] | list[dict[str, Profile]] | None = _option(
        None,
        "input name -> (min, opt, max) shapes; a list of such dicts for several optimization profiles",
        cli={"shapes": True},  # the CLI's --shapes / --min-shapes / --opt-shapes / --max-shapes
    )
    output: str | None = _option(
        None,
        "engine file, written atomically when the build succeeds",
        flag="--output",
        cli={"metavar": "ENGINE"},
        http="the server stores the engine itself: fetch it with GET /builds/{id}/engine",
        builder=False,
        engine=False,
    )
    budget: float | None = _option(
        None,
        "seconds; the build is cancelled when it runs longer",
        flag="--budget",
        cli={"type": float, "metavar": "S"},
        builder=False,
        engine=False,
    )
    verbose: bool = _option(False, "capture VERBOSE TensorRT log lines too", **_bool_flag("--verbose"), engine=False)
    isolation: str = _option(
        "process",
        "'process' (a warm builder process that Stop can always end) or 'thread' (stops only at TensorRT's next "
        "step boundary)",
        flag="--isolation",
        cli={"choices": ("process", "thread")},
        http="the server decides where builders run",
        builder=False,
        engine=False,
    )
    force_after: float | None = _option(
        None,
        "process isolation: terminate the builder this many seconds after a graceful stop (default 0.1)",
        flag="--force-after",
        cli={"type": float, "metavar": "S"},
        builder=False,
        engine=False,
    )
    bf16: bool = _option(
        False, "allow BF16 kernels: a weakly typed network (NVIDIA TensorRT 10.x)", **_bool_flag("--bf16")
    )
    int8: bool = _option(
        False,
        "allow INT8 kernels: a weakly typed network (NVIDIA TensorRT 10.x); Q/DQ models need no flag",
        **_bool_flag("--int8"),
    )
    fp8: bool = _option(
        False, "allow FP8 kernels: a weakly typed network (NVIDIA TensorRT 10.x)", **_bool_flag("--fp8")
    )
    best: bool = _option(
        False,
        "allow every precision the API has (FP16, INT8, BF16), as trtexec --best: a weakly typed network",
        **_bool_flag("--best"),
    )
    tf32: bool | None = _option(
        None,
        "TF32 kernels for FP32 layers; None: TensorRT's default (on); False as trtexec --noTF32",
        flag="--tf32",
        cli={"action": argparse.BooleanOptionalAction},
    )
    sparse_weights: bool = _option(
        False,
        "use structured-sparsity kernels where weights allow (trtexec --sparsity=enable)",
        **_bool_flag("--sparse-weights"),
    )
    tactic_sources: str | None = _option(
        None,
        "tactic sources to enable (+) or disable (-), trtexec syntax, e.g. -CUDNN,+CUBLAS (names of the backend's "
        "TacticSource)",
        flag="--tactic-sources",
        cli={"metavar": "+A,-B"},
    )
    max_aux_streams: int | None = _option(
        None,
        "auxiliary streams TensorRT may use per engine (trtexec --maxAuxStreams)",
        flag="--max-aux-streams",
        cli={"type": int, "metavar": "N"},
    )
    hardware_compatibility: str | None = _option(
        None,
        "hardware compatibility level: none, ampere_plus or same_compute_capability (trtexec "
        "--hardwareCompatibilityLevel)",
        flag="--hardware-compatibility",
        cli={"metavar": "LEVEL"},
    )
    version_compatible: bool = _option(
        False, "a version-compatible engine (trtexec --versionCompatible)", **_bool_flag("--version-compatible")
    )
    exclude_lean_runtime: bool = _option(
        False,
        "version-compatible engines: leave the lean runtime out (trtexec --excludeLeanRuntime)",
        **_bool_flag("--exclude-lean-runtime"),
    )
    profiling_verbosity: str | None = _option(
        None,
        "layer information kept in the engine: none, layer_names_only or detailed (trtexec --profilingVerbosity)",
        flag="--profiling-verbosity",
        cli={"metavar": "LEVEL"},
    )
    refit: bool = _option(False, "a refittable engine (trtexec --refit)", **_bool_flag("--refit"))
    strip_weights: bool = _option(
        False, "leave refittable weights out of the engine (trtexec --stripWeights)", **_bool_flag("--strip-weights")
    )
    avg_timing_iterations: int | None = _option(
        None,
        "timing iterations averaged per tactic (trtexec --avgTiming)",
        flag="--avg-timing",
        cli={"type": int, "metavar": "N"},
    )
    max_tactics: int | None = _option(
        None,
        "at most this many tactics timed per layer (trtexec --maxTactics)",
        flag="--max-tactics",
        cli={"type": int, "metavar": "N"},
    )
    tiling_optimization_level: str | None = _option(
        None,
        "tiling optimization: none, fast, moderate or full (or 0..3; trtexec --tilingOptimizationLevel)",
        flag="--tiling-optimization-level",
        cli={"metavar": "LEVEL"},
    )
    dla_core: int | None = _option(
        None,
        "build for this DLA core (Jetson; trtexec --useDLACore)",
        flag="--dla-core",
        cli={"type": int, "metavar": "N"},
    )
    gpu_fallback: bool = _option(
        False,
        "with dla_core: layers DLA cannot run go to the GPU (trtexec --allowGPUFallback)",
        **_bool_flag("--allow-gpu-fallback"),
    )
    device: int | None = _option(
        None,
        "the CUDA device to build on (trtexec --device); default: the current one",
        flag="--device",
        cli={"type": int, "metavar": "N"},
        http="the server decides which GPU builds",
        engine=False,
    )
    configure: ConfigureHook | None = _option(
        None,
        "configure(builder, network, config): called where the build runs, just before it, for any other setting",
        http="a request cannot send code to run on the server",
        engine=False,
    )

    plugins: tuple[str, ...] = _option(
        (),
        "TensorRT plugin libraries (.so / .dll) loaded in the process that builds, after TensorRT's standard ones",
        flag="--plugin",
        cli={"action": "append", "metavar": "LIB"},
        http="a request cannot load code on the server",
    )
    engine_report: bool = _option(
        True,
        "read the engine's layers, precisions, tactics and memory from TensorRT's log (build.engine_report); "
        "profiling_verbosity defaults to detailed for it",
        flag="--no-engine-report",
        cli={"action": "store_false"},
        engine=False,
    )

    reuse: bool = _option(
        False,
        "reuse an engine whose manifest matches everything that determines it (at --output or in --reuse-dir) "
        "instead of building; a build keeps its engine there for later (docs/reuse.md)",
        **_bool_flag("--reuse"),
        builder=False,
        engine=False,
    )
    reuse_dir: str | None = _option(
        None,
        "the engine cache directory of reuse (default: the user cache folder, see docs/reuse.md)",
        flag="--reuse-dir",
        cli={"metavar": "DIR"},
        http="a request cannot name a folder on the server",
        builder=False,
        engine=False,
    )
    log_file: str | None = _option(
        None,
        "write every TensorRT line of the build (VERBOSE included, timestamped, escaped; bounded in size) here",
        flag="--log-file",
        cli={"metavar": "F"},
        http="a request cannot name a file on the server",
        builder=False,
        engine=False,
    )

    def __post_init__(self) -> None:
        if self.strongly_typed is None:  # as trtexec: a precision flag asks for weak typing, else strong
            weak = any(getattr(self, name) is True for name in WEAK_PRECISIONS)
            object.__setattr__(self, "strongly_typed", not weak)

    @property
    def weak_precisions(self) -> list[str]:
        """The precision flags asked for (fp16, bf16, int8, fp8, best)."""
        return [name for name in WEAK_PRECISIONS if getattr(self, name) is True]

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> BuildOptions:  # raw values: validate() checks and normalises them
        known = [f.name for f in fields(cls)]
        for name in kwargs:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"unknown build option {name!r}{hint} Known options: {', '.join(known)}")
        options = cls(**kwargs)
        options.validate()
        return options

    def validate(self) -> None:
        level = self.optimization_level
        if level is not None and (not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 5):
            raise ValueError(f"optimization_level must be an integer 0..5, got {level!r}")
        if self.workspace is not None:
            object.__setattr__(self, "workspace", parse_bytes(self.workspace, "workspace"))
        for name in ("budget", "force_after"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or (isinstance(value, float) and not math.isfinite(value))  # an int is finite (and may be too big
                or value <= 0  # for a float: math.isfinite(10**400) raised OverflowError)
            ):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        for f in fields(self):
            if f.type in ("bool", "bool | None"):
                value = getattr(self, f.name)
                if not isinstance(value, bool) and not (value is None and f.type == "bool | None"):
                    raise TypeError(f"{f.name} must be True or False, got {value!r}")
        for name, lowest in _COUNTS.items():
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not lowest <= value <= INT32_MAX
            ):
                raise ValueError(
                    f"{name} must be an integer from {lowest} to {INT32_MAX:,} (TensorRT's int32), got {value!r}"
                )
        for name, (_enum, spellings) in _ENUMS.items():
            value = getattr(self, name)
            if value is None:
                continue
            key = str(value).strip().lower().replace("-", "_") if isinstance(value, (str, int)) else None
            if key not in spellings or isinstance(value, bool):
                choices = ", ".join(dict.fromkeys(s.lower() for s in spellings.values()))
                raise ValueError(f"{name} must be one of {choices}, got {value!r}")
            object.__setattr__(self, name, spellings[key].lower())
        if self.tactic_sources is not None:
            object.__setattr__(self, "tactic_sources", _check_tactic_sources(self.tactic_sources))
        if self.gpu_fallback and self.dla_core is None:
            raise ValueError("gpu_fallback=True needs dla_core= (GPU fallback is for layers a DLA core cannot run)")
        if self.exclude_lean_runtime and not self.version_compatible:
            raise ValueError("exclude_lean_runtime=True needs version_compatible=True (as TensorRT's flag does)")
        if self.configure is not None and not callable(self.configure):
            raise TypeError(
                f"configure must be a function called as configure(builder, network, config), got {self.configure!r}"
            )
        if self.isolation not in ("thread", "process"):
            raise ValueError(f"isolation must be 'process' or 'thread', got {self.isolation!r}")
        if self.force_after is not None and self.isolation == "thread":
            raise ValueError(
                "force_after needs isolation='process' (a thread cannot be terminated: with "
                "isolation='thread' a stop waits for TensorRT's next step boundary)"
            )
        for name in ("budget", "force_after"):
            value = getattr(self, name)
            if value is not None and value > _MAX_SECONDS:
                raise ValueError(f"{name} must be at most {_MAX_SECONDS:g} s (about 3 years), got {value!r}")
        for name in ("timing_cache", "output", "reuse_dir", "log_file"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, (str, os.PathLike)):
                    raise TypeError(f"{name} must be a file path, got {type(value).__name__}")
                object.__setattr__(self, name, str(expand_user(value)))
        for name in ("timing_cache", "output", "log_file"):
            value = getattr(self, name)
            if value is None:
                continue
            if Path(value).is_dir():
                raise IsADirectoryError(f"{name} must be a file path, got the directory {value}")
            try:
                target = writable_target(value)
            except NotARegularFile as exc:
                raise ValueError(f"{name}: {exc}") from None
            if not target.parent.is_dir():
                raise FileNotFoundError(f"{name} directory does not exist: {target.parent}")
        if self.reuse_dir is not None and Path(self.reuse_dir).exists() and not Path(self.reuse_dir).is_dir():
            raise NotADirectoryError(f"reuse_dir must be a folder, got the file {self.reuse_dir}")
        if (
            self.output is not None
            and self.timing_cache is not None
            and writable_target(self.output) == writable_target(self.timing_cache)
        ):
            raise ValueError(f"output and timing_cache are the same file ({self.output}): give each its own path")
        if self.profiles is not None:
            object.__setattr__(self, "profiles", _check_profiles(self.profiles))
        object.__setattr__(self, "plugins", _check_plugins(self.plugins))

    def profile_list(self) -> list[dict[str, Profile]]:
        """The optimization profiles, one dict (input name -> (min, opt, max)) per profile."""
        if self.profiles is None:
            return []
        return list(self.profiles) if isinstance(self.profiles, list) else [self.profiles]

    def summary(self) -> JSONObject:
        """The options that change the engine (for history keys), JSON-ready; those added after the first five
        only when set, so that keys of earlier builds stay valid."""
        profiles: list[JSON] = [
            {k: [[int(d) for d in s] for s in v] for k, v in sorted(p.items())} for p in self.profile_list()
        ]
        out: JSONObject = {
            "optimization_level": self.optimization_level,
            "fp16": self.fp16,
            "strongly_typed": self.strongly_typed,
            "workspace": self.workspace,
            "profiles": profiles[0] if len(profiles) == 1 else (profiles or {}),
        }
        for f in fields(self):
            if f.name not in out and f.metadata.get("engine", True) and f.metadata.get("builder", True):
                value = getattr(self, f.name)
                if value != f.default and not callable(value):
                    out[f.name] = list(value) if isinstance(value, tuple) else value  # JSON-ready
        return out


INT32_MAX = 2**31 - 1  # TensorRT's counts are int32_t: a larger Python int fails inside the bindings
_COUNTS = {"max_aux_streams": 0, "avg_timing_iterations": 1, "max_tactics": 1, "dla_core": 0, "device": 0}

# How an option reaches TensorRT's builder config (see BuildOptions); options without an entry are applied by
# code of their own in _engine (precisions, profiles, workspace, timing cache, tactic sources, DLA, device).
TRT_SETTINGS: dict[str, tuple[str, ...]] = {
    "tf32": ("flag", "TF32"),
    "sparse_weights": ("flag", "SPARSE_WEIGHTS"),
    "version_compatible": ("flag", "VERSION_COMPATIBLE"),
    "exclude_lean_runtime": ("flag", "EXCLUDE_LEAN_RUNTIME"),
    "refit": ("flag", "REFIT"),
    "strip_weights": ("flag", "STRIP_PLAN"),
    "gpu_fallback": ("flag", "GPU_FALLBACK"),
    "max_aux_streams": ("attr", "max_aux_streams"),
    "avg_timing_iterations": ("attr", "avg_timing_iterations"),
    "max_tactics": ("attr", "max_num_tactics"),
    "dla_core": ("attr", "DLA_core"),
    "hardware_compatibility": ("enum", "hardware_compatibility_level", "HardwareCompatibilityLevel"),
    "profiling_verbosity": ("enum", "profiling_verbosity", "ProfilingVerbosity"),
    "tiling_optimization_level": ("enum", "tiling_optimization_level", "TilingOptimizationLevel"),
}
PRECISION_FLAGS = {"fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fp8": "FP8"}


class BuildOptionsDict(TypedDict, total=False):
    """The build options as keyword arguments (``Build(model, **options)``); one key per BuildOptions field."""

    optimization_level: int | None
    fp16: bool
    strongly_typed: bool | None
    timing_cache: str | os.PathLike[str] | None
    workspace: int | str | None
    profiles: ProfilesArg | None
    output: str | os.PathLike[str] | None
    budget: float | None
    verbose: bool
    isolation: str
    force_after: float | None
    bf16: bool
    int8: bool
    fp8: bool
    best: bool
    tf32: bool | None
    sparse_weights: bool
    tactic_sources: str | Sequence[str] | None
    max_aux_streams: int | None
    hardware_compatibility: str | None
    version_compatible: bool
    exclude_lean_runtime: bool
    profiling_verbosity: str | None
    refit: bool
    strip_weights: bool
    avg_timing_iterations: int | None
    max_tactics: int | None
    tiling_optimization_level: str | int | None
    dla_core: int | None
    gpu_fallback: bool
    device: int | None
    configure: ConfigureHook | None
    plugins: Sequence[str | os.PathLike[str]]
    engine_report: bool
    reuse: bool
    reuse_dir: str | os.PathLike[str] | None
    log_file: str | os.PathLike[str] | None


def option_fields() -> tuple[Field[object], ...]:
    """BuildOptions' fields, with their metadata."""
    return fields(BuildOptions)


def http_refusals() -> dict[str, str]:
    """Option -> why an HTTP request may not set it (a field without metadata is refused)."""
    return {
        f.name: f.metadata.get("http", NOT_OVER_HTTP)
        for f in fields(BuildOptions)
        if f.metadata.get("http", NOT_OVER_HTTP)
    }


def http_options() -> tuple[str, ...]:
    """The options a request to the build service may set."""
    refused = http_refusals()
    return tuple(f.name for f in fields(BuildOptions) if f.name not in refused)


def builder_options() -> tuple[str, ...]:
    """The options applied where TensorRT runs (what travels to a Ray task's build)."""
    return tuple(f.name for f in fields(BuildOptions) if f.metadata.get("builder", True))


def add_option_arguments(parser: argparse._ActionsContainer, *, exclude: Sequence[str] = ()) -> None:
    """One command-line flag per option that has one (its help from the field), plus the shape flags."""
    for f in fields(BuildOptions):
        if f.name in exclude:
            continue
        cli = dict(f.metadata.get("cli", {}))
        if cli.pop("shapes", False):
            add_shape_arguments(parser)
            continue
        flag = f.metadata.get("flag")
        if not flag:
            continue
        flags = ("-o", flag) if f.name == "output" else (flag,)
        parser.add_argument(*flags, dest=f.name, default=None, help=f.metadata.get("help"), **cli)


def options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The options given on the command line (those left out keep their defaults)."""
    options: dict[str, Any] = {}
    for f in fields(BuildOptions):
        value = getattr(args, f.name, None)
        if f.metadata.get("cli", {}).get("shapes"):
            value = profiles_from_args(args)
        if value is not None:  # every flag defaults to None: False is --no-tf32 / --no-strongly-typed
            options[f.name] = value
    return options


SHAPES_EPILOG = """shapes (as trtexec; NAME:DIMS, several inputs separated by commas, dimensions by x):
  --shapes input:1x3x224x224                       a fixed shape for a dynamic input
  --min-shapes input:1x3x224x224 --opt-shapes input:8x3x224x224 --max-shapes input:32x3x224x224
  --minShapes=input:1x3x224x224 ...                trtexec's spelling works too
  --profile 0 --min-shapes … --profile 1 --min-shapes …   several optimization profiles (trtexec --profile=N)
  in Python: profiles={"input": ((1, 3, 224, 224), (8, 3, 224, 224), (32, 3, 224, 224))}"""


def add_shape_arguments(parser: argparse._ActionsContainer) -> None:
    """trtexec's shape flags: --shapes (min = opt = max), or --min-shapes / --opt-shapes / --max-shapes."""
    shapes = {
        "shapes": "fixed shapes of dynamic inputs, e.g. input:1x3x224x224 (min = opt = max; trtexec --shapes)",
        "min_shapes": "the smallest shapes of a range, e.g. input:1x3x224x224 (trtexec --minShapes)",
        "opt_shapes": "the shapes to tune for (trtexec --optShapes)",
        "max_shapes": "the largest shapes (trtexec --maxShapes)",
    }
    for dest, text in shapes.items():
        camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), dest)
        spellings = dict.fromkeys([f"--{dest.replace('_', '-')}", f"--{camel}"])
        parser.add_argument(*spellings, dest=dest, action=_ShapeFlag, metavar="NAME:DIMS", help=text)
    parser.add_argument(
        "--profile",
        dest="profile",
        type=int,
        action=_ProfileFlag,
        metavar="N",
        help="several optimization profiles: the shape flags after --profile N are profile N's (trtexec --profile=N)",
    )


class _ProfileFlag(argparse.Action):
    """``--profile N``: the shape flags that follow belong to profile N (the order on the command line)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option: str | None = None,
    ) -> None:
        namespace.profile_order = [*(getattr(namespace, "profile_order", None) or []), values]
        setattr(namespace, self.dest, values)


class _ShapeFlag(argparse._AppendAction):
    """A shape flag, appended as before and also recorded with the profile it follows (None before any)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option)
        given = (getattr(namespace, "profile", None), self.dest, values)
        namespace.shape_flags = [*(getattr(namespace, "shape_flags", None) or []), given]


def parse_shapes(text: str, flag: str = "--shapes") -> dict[str, Shape]:
    """``"input:1x3x224x224,mask:1x128"`` -> {"input": (1, 3, 224, 224), "mask": (1, 128)} (trtexec's syntax;
    a name may be quoted, a scalar is written as NAME:)."""
    out: dict[str, Shape] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, dims = part.rpartition(":")
        name = name.strip().strip("'\"")
        if not sep or not name:
            raise ValueError(f"{flag} {part!r}: write NAME:DIMS, e.g. input:1x3x224x224")
        texts = [d.strip() for d in dims.split("x")] if dims.strip() else []
        if not all(d.isascii() and d.lstrip("-").isdigit() for d in texts):
            raise ValueError(f"{flag} {part!r}: dimensions are integers separated by x, e.g. 1x3x224x224")
        if any(d.startswith("-") for d in texts):
            raise ValueError(f"{flag} {part!r}: a shape for the build has no -1 dimensions")
        where = f"{flag} {part[:80]!r}"
        if any(len(d) > 30 for d in texts):  # int() of thousands of digits is slow, or refused
            raise ValueError(f"{where}: a dimension of more than 30 digits is too large (at most {MAX_DIM:,})")
        out[name] = _check_dims(tuple(int(d) for d in texts), where)
    if not out:
        raise ValueError(f"{flag} needs NAME:DIMS, e.g. input:1x3x224x224")
    return out


_SHAPE_DESTS = ("shapes", "min_shapes", "opt_shapes", "max_shapes")


def profiles_from_args(args: argparse.Namespace) -> dict[str, Profile] | list[dict[str, Profile]] | None:
    """The optimization profile from --shapes or --min/--opt/--max-shapes (a flag given twice adds inputs); with
    ``--profile N`` before each group of shape flags, several profiles (a list), numbered 0, 1, … as trtexec's."""
    order = getattr(args, "profile_order", None)
    if not order:
        given = {k: ",".join(getattr(args, k, None) or []) for k in _SHAPE_DESTS}
        return profiles_from_shapes(**{k: v or None for k, v in given.items()})
    if sorted(order) != list(range(len(order))):
        raise ValueError(f"--profile numbers the profiles 0, 1, 2, … each once; got {', '.join(map(str, order))}")
    flags = getattr(args, "shape_flags", None) or []
    stray = [f"--{dest.replace('_', '-')} {value}" for index, dest, value in flags if index is None]
    if stray:
        raise ValueError(f"with --profile, each shape flag follows the --profile it belongs to: {' '.join(stray)}")
    profiles = []
    for number in range(len(order)):
        texts = {k: ",".join(v for i, d, v in flags if i == number and d == k) or None for k in _SHAPE_DESTS}
        profile = profiles_from_shapes(**texts)
        if profile is None:
            raise ValueError(f"--profile {number} has no shapes: follow it with --min-shapes/--opt-shapes/--max-shapes")
        profiles.append(profile)
    return profiles[0] if len(profiles) == 1 else profiles


def profiles_from_shapes(
    shapes: str | None = None,
    min_shapes: str | None = None,
    opt_shapes: str | None = None,
    max_shapes: str | None = None,
) -> dict[str, Profile] | None:
    """trtexec's rules (sampleOptions.cpp processShapes): --shapes sets min = opt = max; otherwise a missing min is
    the opt (else the max), a missing opt the max (else the min), a missing max the opt (else the min)."""
    if shapes and (min_shapes or opt_shapes or max_shapes):
        raise ValueError("give either --shapes or --min-shapes/--opt-shapes/--max-shapes, not both")
    if shapes:
        return {name: (s, s, s) for name, s in parse_shapes(shapes, "--shapes").items()}
    parsed = [
        parse_shapes(text, flag) if text else {}
        for flag, text in (("--min-shapes", min_shapes), ("--opt-shapes", opt_shapes), ("--max-shapes", max_shapes))
    ]
    profiles: dict[str, Profile] = {}
    for name in dict.fromkeys(n for given in parsed for n in given):
        lo, opt, hi = (given.get(name) for given in parsed)
        first = lo or opt or hi
        assert first is not None  # the name came from one of them
        profiles[name] = (lo or opt or first, opt or hi or first, hi or opt or first)
    return profiles or None


def parse_bytes(value: int | str, what: str) -> int:
    """``1 << 30``, ``"1GiB"``, ``"512MB"`` -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{what} must be positive, got {value}")
        if value > _MAX_BYTES:
            raise ValueError(f"{what} must be at most {_MAX_BYTES:,} bytes (2**62), got {value:,}")
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
        if match and match.group(2).lower() in _UNITS:
            try:
                count = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
            except OverflowError:  # more digits than a float holds: infinity
                raise ValueError(f"{what} must be at most {_MAX_BYTES:,} bytes (2**62), got {value[:40]!r}") from None
            if count <= 0:
                raise ValueError(f"{what} must be positive, got {value!r}")
            return parse_bytes(count, what)
    raise ValueError(
        f"{what} must be a byte count like 1073741824 or '1GiB' (units, any case: {_UNITS_SAID}), got {value!r}"
    )


_TACTIC_ALIASES = {"CUBLASLT": "CUBLAS_LT"}


def _check_tactic_sources(value: object) -> str:
    """trtexec's ``-CUDNN,+CUBLAS`` (or a list of such items) -> the normalised text ``-CUDNN,+CUBLAS``."""
    items = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    if items is None:
        raise TypeError(f"tactic_sources must be text like '-CUDNN,+CUBLAS' or a list of such items, got {value!r}")
    seen: dict[str, str] = {}
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        sign, name = item[0], item[1:].strip().upper()
        if sign not in "+-" or not re.fullmatch(r"[A-Z_]+", name):
            raise ValueError(
                f"tactic_sources item {item!r}: prefix each source with + (enable) or - (disable), e.g. -CUDNN,+CUBLAS"
            )
        name = _TACTIC_ALIASES.get(name, name)
        if seen.get(name, sign) != sign:
            raise ValueError(f"tactic_sources enables and disables {name}")
        seen[name] = sign
    if not seen:
        raise ValueError("tactic_sources is empty: name sources like -CUDNN,+CUBLAS")
    return ",".join(sign + name for name, sign in seen.items())


def _check_profiles(profiles: object) -> dict[str, Profile] | list[dict[str, Profile]]:
    if isinstance(profiles, (list, tuple)) and profiles and all(isinstance(p, Mapping) for p in profiles):
        checked = [_check_profile(p, f"profile #{i} ") for i, p in enumerate(profiles)]
        if len({frozenset(p) for p in checked}) > 1:
            raise ValueError("every optimization profile must name the same inputs")
        return checked
    return _check_profile(profiles, "")


def _check_dims(shape: Shape, where: str) -> Shape:
    """``shape`` when TensorRT can take it: at most MAX_RANK dimensions, each below 2**31 (MAX_DIM)."""
    if len(shape) > MAX_RANK:
        raise ValueError(f"{where}: {len(shape)} dimensions; TensorRT takes at most {MAX_RANK}")
    big = next((d for d in shape if d > MAX_DIM), None)
    if big is not None:
        shown = f"{big:,}" if big < 10**30 else "of more than 30 digits"
        raise ValueError(f"{where}: dimension {shown} is too large (at most 2**31-1 = {MAX_DIM:,} per dimension)")
    return shape


def _dimension(value: object) -> int:
    """One profile dimension as an int: an integer (also numpy's), integer text ("4") or a whole float; a
    fraction, infinity, NaN or a bool is refused (``int()`` would turn 1.5 into 1 and inf into OverflowError)."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a dimension")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not a whole number")
        return int(value)
    if isinstance(value, str):
        return int(value)
    if isinstance(value, SupportsIndex):
        return operator.index(value)
    raise TypeError(f"not a dimension: {type(value).__name__}")


def _check_profile(profiles: object, where: str) -> dict[str, Profile]:
    if not isinstance(profiles, Mapping):
        raise TypeError(
            "profiles must be a dict: input name -> (min_shape, opt_shape, max_shape), or a list of such dicts"
        )
    checked: dict[str, Profile] = {}
    for name, shapes in profiles.items():
        try:
            lo, opt, hi = (tuple(_dimension(d) for d in s) for s in shapes)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(
                f"{where}profile for input {name!r} must be (min, opt, max) shapes, got {shapes!r}"
            ) from None
        if any(d < 0 for d in lo):
            raise ValueError(f"{where}profile for input {name!r} has a negative dimension: {shapes!r}")
        if not (len(lo) == len(opt) == len(hi)) or any(not a <= b <= c for a, b, c in zip(lo, opt, hi, strict=True)):
            raise ValueError(f"{where}profile for input {name!r} needs min <= opt <= max per dimension, got {shapes!r}")
        _check_dims(hi, f"{where}profile for input {name!r}")
        checked[str(name)] = (lo, opt, hi)
    return checked


def _check_plugins(plugins: object) -> tuple[str, ...]:
    """Plugin library paths, absolute; each must be an existing file now (the builder loads them later)."""
    if isinstance(plugins, (str, os.PathLike)) or not isinstance(plugins, (list, tuple)):
        raise TypeError(f"plugins must be a list of plugin library paths, got {plugins!r}")
    checked = []
    for entry in plugins:
        if not isinstance(entry, (str, os.PathLike)):
            raise TypeError(f"plugins: each entry must be a file path, got {type(entry).__name__}")
        path = expand_user(entry).absolute()
        if not path.exists():
            raise FileNotFoundError(f"plugins: no plugin library at {path}")
        if not path.is_file():
            raise ValueError(f"plugins: {path} is not a file (a plugin library such as libmy_plugins.so)")
        checked.append(str(path))
    return tuple(checked)
