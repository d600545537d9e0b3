"""Build options (the trtexec flags people expect), validated before any thread or process starts.

:class:`BuildOptions` is the one definition: each field's metadata holds its help text, its command-line flag,
whether an HTTP request may set it, and whether the builder applies it (and so where it must travel). The CLI
(``_cli_options``), the service's allowed options and the remote refusals (``_http_options``) and
:class:`BuildOptionsDict` (the keyword arguments of ``Build`` and friends, checked equal to the fields by a test)
follow from it. A field added without metadata works in Python, has no CLI flag and is refused over HTTP.
Shapes and profiles are ``_shapes``'.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from ._files import NotARegularFile, expand_user, writable_target
from ._json import JSON, JSONObject, json_int, json_number
from ._shapes import Profile, ProfilesArg, check_profiles
from ._tensorrt_types import IBuilder, IBuilderConfig, INetworkDefinition

# configure=: called as configure(builder, network, config) in the builder just before the build
ConfigureHook = Callable[[IBuilder, INetworkDefinition, IBuilderConfig], object]
T = TypeVar("T")

_MAX_SECONDS = 1e8  # well inside threading.TIMEOUT_MAX on every platform
_MAX_BYTES = 1 << 62  # what TensorRT's int64 memory-pool limit can hold, with room

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
UNITS, UNITS_SAID = _UNITS, _UNITS_SAID  # the units of every size (trtexec's --memPoolSize too)
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
        "auxiliary streams TensorRT may use per engine, 0 to 32 (trtexec --maxAuxStreams)",
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
    def from_kwargs(cls, **kwargs: Any) -> BuildOptions:  # raw values: validated() checks and normalises them
        known = [f.name for f in fields(cls)]
        for name in kwargs:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"unknown build option {name!r}{hint} Known options: {', '.join(known)}")
        return cls(**kwargs).validated()

    def validated(self) -> BuildOptions:
        """These options checked, as a new BuildOptions with the values normalised (byte counts, enum spellings,
        tactic sources, absolute paths, profiles as tuples); raises on the first bad value."""
        level = self.optimization_level
        if level is not None and (not json_int(level) or not 0 <= level <= 5):
            raise ValueError(f"optimization_level must be an integer 0..5, got {level!r}")
        workspace = None if self.workspace is None else parse_bytes(self.workspace, "workspace")
        for name in ("budget", "force_after"):
            value = getattr(self, name)
            if value is not None and (
                not json_number(value)
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
            highest, why = _COUNT_MAXIMA.get(name, (INT32_MAX, "TensorRT's int32"))
            if value is not None and (not json_int(value) or not lowest <= value <= highest):
                raise ValueError(f"{name} must be an integer from {lowest} to {highest:,} ({why}), got {value!r}")
        enums: dict[str, str | None] = {}  # the member names, lower case
        for name, (_enum, spellings) in _ENUMS.items():
            value = enums[name] = getattr(self, name)
            if value is None:
                continue
            key = str(value).strip().lower().replace("-", "_") if isinstance(value, (str, int)) else None
            if key not in spellings or isinstance(value, bool):
                choices = ", ".join(dict.fromkeys(s.lower() for s in spellings.values()))
                raise ValueError(f"{name} must be one of {choices}, got {value!r}")
            enums[name] = spellings[key].lower()
        tactic_sources = None if self.tactic_sources is None else _check_tactic_sources(self.tactic_sources)
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
        paths: dict[str, str | None] = {}  # the file options, with ~ expanded
        for name in ("timing_cache", "output", "reuse_dir", "log_file"):
            value = paths[name] = getattr(self, name)
            if value is not None:
                if not isinstance(value, (str, os.PathLike)):
                    raise TypeError(f"{name} must be a file path, got {type(value).__name__}")
                paths[name] = str(expand_user(value))
        for name in ("timing_cache", "output", "log_file"):
            value = paths.get(name)
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
        reuse_dir = paths.get("reuse_dir")
        if reuse_dir is not None and Path(reuse_dir).exists() and not Path(reuse_dir).is_dir():
            raise NotADirectoryError(f"reuse_dir must be a folder, got the file {reuse_dir}")
        output, timing_cache = paths.get("output"), paths.get("timing_cache")
        if output is not None and timing_cache is not None and writable_target(output) == writable_target(timing_cache):
            raise ValueError(f"output and timing_cache are the same file ({output}): give each its own path")
        return replace(
            self,
            workspace=workspace,
            tactic_sources=tactic_sources,
            hardware_compatibility=enums["hardware_compatibility"],
            profiling_verbosity=enums["profiling_verbosity"],
            tiling_optimization_level=enums["tiling_optimization_level"],
            timing_cache=paths["timing_cache"],
            output=paths["output"],
            reuse_dir=paths["reuse_dir"],
            log_file=paths["log_file"],
            profiles=None if self.profiles is None else check_profiles(self.profiles),
            plugins=_check_plugins(self.plugins),
        )

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
# TensorRT sets no maximum of its own but allocates per auxiliary stream (10**9 took gigabytes, then bad_alloc);
# a GPU runs at most 32 streams' work at once (CUDA_DEVICE_MAX_CONNECTIONS, 1 to 32), so more gains nothing
MAX_AUX_STREAMS = 32
_COUNT_MAXIMA = {"max_aux_streams": (MAX_AUX_STREAMS, "a GPU runs at most 32 streams at once")}

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


def builder_options() -> tuple[str, ...]:
    """The options applied where TensorRT runs (what travels to a Ray task's build)."""
    return tuple(f.name for f in fields(BuildOptions) if f.metadata.get("builder", True))


def parse_bytes(value: int | str, what: str) -> int:
    """``1 << 30``, ``"1GiB"``, ``"512MB"`` -> bytes."""
    if json_int(value):
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
