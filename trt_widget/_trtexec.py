"""``trt-widget trtexec <trtexec arguments>``: trtexec's build arguments as written, built with the live tree and
Stop. Each argument is mapped to a build option, ignored (inference and reporting: trt-widget only builds), or
refused with the reason; what was ignored or refused is said plainly.

Names and value syntax follow trtexec's ``samples/common/sampleOptions.cpp`` (NVIDIA/TensorRT, v10.16 / v11.1).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from typing import Any

from ._options import UNITS, UNITS_SAID, parse_bytes
from ._shapes import Profile, profiles_from_shapes

# trtexec flag -> (option, value): value None takes the argument's value; a constant is used as is
_FLAGS: dict[str, tuple[str, bool]] = {
    "fp16": ("fp16", True),
    "bf16": ("bf16", True),
    "int8": ("int8", True),
    "fp8": ("fp8", True),
    "best": ("best", True),
    "stronglyTyped": ("strongly_typed", True),
    "noTF32": ("tf32", False),
    "refit": ("refit", True),
    "stripWeights": ("strip_weights", True),
    "weightless": ("strip_weights", True),  # trtexec: deprecated alias of --stripWeights
    "versionCompatible": ("version_compatible", True),
    "vc": ("version_compatible", True),
    "excludeLeanRuntime": ("exclude_lean_runtime", True),
    "allowGPUFallback": ("gpu_fallback", True),
    "verbose": ("verbose", True),
}
_VALUES: dict[str, tuple[str, type]] = {
    "saveEngine": ("output", str),
    "timingCacheFile": ("timing_cache", str),
    "builderOptimizationLevel": ("optimization_level", int),
    "tacticSources": ("tactic_sources", str),
    "maxAuxStreams": ("max_aux_streams", int),
    "hardwareCompatibilityLevel": ("hardware_compatibility", str),
    "profilingVerbosity": ("profiling_verbosity", str),
    "avgTiming": ("avg_timing_iterations", int),
    "maxTactics": ("max_tactics", int),
    "tilingOptimizationLevel": ("tiling_optimization_level", str),
    "useDLACore": ("dla_core", int),
    "device": ("device", int),
}
# inference, measuring and reporting: trt-widget builds the engine and runs nothing
INFERENCE_ONLY = frozenset(
    [
        "iterations",
        "duration",
        "warmUp",
        "avgRuns",
        "percentile",
        "threads",
        "useCudaGraph",
        "useSpinWait",
        "noDataTransfers",
        "streams",
        "infStreams",
        "exposeDMA",
        "separateProfileRun",
        "dumpProfile",
        "dumpLayerInfo",
        "dumpOutput",
        "dumpRawBindingsToFile",
        "exportTimes",
        "exportOutput",
        "exportProfile",
        "exportLayerInfo",
        "loadInputs",
        "sleepTime",
        "idleTime",
        "timeDeserialize",
        "timeRefit",
        "consistency",
        "persistentCacheRatio",
        "useManagedMemory",
        "dumpRefit",
        "allocationStrategy",
        "useRuntime",
        "leanDLLPath",
        "skipInference",
        "buildOnly",
        "noBuilderCache",
        "asyncFileReader",
        "useProfile",
    ]
)
# accepted and without effect in TensorRT 10 (trtexec also ignores them)
NO_OP = {"explicitBatch": "TensorRT 10 networks are always explicit-batch", "minTiming": "removed in TensorRT 10"}
REFUSED = {
    "loadEngine": "trt-widget builds engines; it does not load one",
    "uff": "UFF models are not supported by TensorRT 10",
    "caffe": "Caffe models are not supported by TensorRT 10",
    "deploy": "Caffe models are not supported by TensorRT 10",
    "model": "Caffe models are not supported by TensorRT 10",
    "batch": "implicit batch is gone in TensorRT 10: give shapes with --shapes / --minShapes …",
    "maxBatch": "implicit batch is gone in TensorRT 10: give shapes with --shapes / --minShapes …",
    "calib": "INT8 calibration caches are not an option: use a Q/DQ (quantized) model",
    "safe": "safety-certified builds are not supported",
    "restricted": "safety-certified builds are not supported",
    "sparsity=force": "it rewrites the weights (a measurement aid): prune the model instead",
}
_CONFIGURE_HINT = "not a trt-widget option: set it with configure= in Python (docs/options.md)"
_UNKNOWN_HINT = "if your trtexec has it, set it with configure= in Python (docs/options.md)"


@dataclass
class Translation:
    """What a trtexec command line asks trt-widget to build."""

    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # arguments without effect on the engine, as given
    refused: list[tuple[str, str]] = field(default_factory=list)  # (argument, why)
    notes: list[str] = field(default_factory=list)


def split_arguments(argv: Sequence[str]) -> list[str]:
    """The arguments of a pasted command line: ``trtexec`` (or ``./trtexec``) and backslash line breaks dropped;
    ValueError (one line, saying what to fix) when the line does not split as a shell would (an unbalanced quote)."""
    if len(argv) == 1 and " " in argv[0]:
        try:
            argv = shlex.split(argv[0].replace("\\\n", " "))
        except ValueError as exc:  # shlex: "No closing quotation", "No escaped character"
            raise ValueError(
                f"the pasted command line does not split as a shell would ({str(exc).lower()}): close the quote "
                "it opens, or pass the arguments one by one"
            ) from None
    args = [a for a in argv if a not in ("\\", "")]
    if args and re.search(r"(^|/)trtexec(\.exe)?$", args[0]):
        args = args[1:]
    return args


_RANGE = ("minShapes", "optShapes", "maxShapes")


def translate(argv: Sequence[str]) -> Translation:
    """Map trtexec's arguments to a model and build options (see the module docstring)."""
    out = Translation()
    shapes: dict[str, list[str]] = {"shapes": [], "minShapes": [], "optShapes": [], "maxShapes": []}
    # --profile=N: the min/opt/max shapes right behind it, each once, are profile N's (sampleOptions.cpp
    # getOptimizationProfiles); any other argument ends the run
    profiles: dict[int, dict[str, str]] = {}
    following: dict[str, str] | None = None
    given: dict[str, list[str]] = {}  # --onnx and the value options as given, to refuse one given twice
    for arg in split_arguments(argv):
        match = re.fullmatch(r"--([A-Za-z][A-Za-z0-9]*)(?:=(.*))?", arg, re.S)
        name, value = (match.group(1), match.group(2)) if match else ("", None)
        if following is not None and name in _RANGE and name not in following and value:
            following[name] = value
            continue
        following = None
        if match is None:
            out.refused.append((arg, "trtexec arguments are written --name or --name=value"))
            continue
        if (name == "onnx" or name in _VALUES) and value:
            given.setdefault(name, []).append(value)
        try:
            if name == "profile":
                following = _profile(profiles, _required(name, value))
            else:
                _one(out, shapes, arg, name, value)
        except ValueError as exc:
            out.refused.append((arg, str(exc)))
    if profiles:
        _profiles(out, shapes, profiles)
    else:
        _shapes(out, shapes)
    out.refused.extend(_repeated(given))
    if out.model is None and not any(a.startswith("--onnx") for a, _ in out.refused):
        out.refused.append(("--onnx", "no model: give --onnx=model.onnx"))
    return out


def _one(out: Translation, shapes: dict[str, list[str]], arg: str, name: str, value: str | None) -> None:
    if name == "onnx":
        out.model = _required(name, value)
    elif name in shapes:
        shapes[name].append(_required(name, value))
    elif name in _FLAGS:
        if value not in (None, "true", "1"):
            raise ValueError(f"--{name} takes no value")
        option, constant = _FLAGS[name]
        out.options[option] = constant
    elif name in _VALUES:
        option, kind = _VALUES[name]
        text = _required(name, value)
        try:
            out.options[option] = kind(text)
        except ValueError:
            raise ValueError(f"--{name} needs a {kind.__name__}, got {text!r}") from None
    elif name in ("staticPlugins", "dynamicPlugins", "plugins"):  # --plugins: trtexec's deprecated spelling
        out.options.setdefault("plugins", []).append(_required(name, value))
    elif name == "memPoolSize":
        _pools(out, _required(name, value))
    elif name == "workspace":  # trtexec's deprecated spelling: MiB
        out.options["workspace"] = parse_bytes(_size(_required(name, value)), "--workspace")
    elif name == "stripAllWeights":
        out.options.update(refit=True, strip_weights=True)
    elif name == "sparsity":
        mode = _required(name, value).lower()
        if mode == "enable":
            out.options["sparse_weights"] = True
        elif mode == "force":
            raise ValueError(REFUSED["sparsity=force"])
        elif mode != "disable":
            raise ValueError(f"--sparsity is disable, enable or force, got {value!r}")
    elif name in INFERENCE_ONLY:
        out.ignored.append(arg)
    elif name in NO_OP:
        out.ignored.append(arg)
        out.notes.append(f"--{name}: {NO_OP[name]}")
    elif name in REFUSED:
        raise ValueError(REFUSED[name])
    else:
        close = get_close_matches(name, _KNOWN, n=1, cutoff=0.75)
        unknown = f"not a trtexec option trt-widget knows; {_UNKNOWN_HINT}"
        raise ValueError(f"did you mean --{close[0]}? If not: {unknown}" if close else unknown)


# every argument name translate() knows, for the "did you mean" of a mistyped one
_KNOWN = sorted(
    {"onnx", "profile", "shapes", *_RANGE, "staticPlugins", "dynamicPlugins", "plugins", "memPoolSize", "workspace"}
    | {"stripAllWeights", "sparsity", *_FLAGS, *_VALUES, *INFERENCE_ONLY, *NO_OP, *REFUSED}
)


def _repeated(given: dict[str, list[str]]) -> list[tuple[str, str]]:
    """--onnx, --saveEngine, ... given twice with different values: trtexec silently takes the last; refused."""
    return [
        (" ".join(f"--{name}={v}" for v in values), f"--{name} is given {len(values)} times: give it once")
        for name, values in given.items()
        if len(set(values)) > 1
    ]


def _required(name: str, value: str | None) -> str:
    if value is None or value == "":
        raise ValueError(f"--{name} needs a value: --{name}=…")
    return value


def _size(text: str) -> str:
    """trtexec's sizes: a bare number is MiB (trtexec's unit); with a unit, every unit ``--workspace`` takes (K, M,
    G, T are powers of 1024, as trtexec's)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if match is None or match.group(2).lower() not in UNITS:
        raise ValueError(
            f"a size like 1024 (a bare number is MiB), 512K, 4G or 1TiB (units, any case: {UNITS_SAID}), got {text!r}"
        )
    return f"{match.group(1)}{match.group(2) or 'MiB'}"


def _pools(out: Translation, text: str) -> None:
    for spec in filter(None, (s.strip() for s in text.split(","))):
        pool, sep, size = spec.partition(":")
        if not sep:
            raise ValueError(f"--memPoolSize is POOL:SIZE, e.g. workspace:1024M, got {spec!r}")
        if pool != "workspace":
            raise ValueError(f"memory pool {pool!r}: {_CONFIGURE_HINT} (config.set_memory_pool_limit)")
        out.options["workspace"] = parse_bytes(_size(size), "--memPoolSize=workspace")


def _shapes(out: Translation, shapes: dict[str, list[str]]) -> None:
    ranged = shapes["minShapes"] or shapes["optShapes"] or shapes["maxShapes"]
    try:
        if ranged:
            if shapes["shapes"]:  # with a range, trtexec's --shapes are the inference shapes
                out.ignored.extend(f"--shapes={s}" for s in shapes["shapes"])
            profiles = profiles_from_shapes(
                min_shapes=",".join(shapes["minShapes"]) or None,
                opt_shapes=",".join(shapes["optShapes"]) or None,
                max_shapes=",".join(shapes["maxShapes"]) or None,
            )
        else:
            profiles = profiles_from_shapes(shapes=",".join(shapes["shapes"]) or None)
    except ValueError as exc:
        given = [f"--{k}={v}" for k, values in shapes.items() for v in values]
        out.refused.append((" ".join(given), str(exc)))
        return
    if profiles:
        out.options["profiles"] = profiles


MAX_PROFILE = 1023  # no build has more optimization profiles; larger numbers are typos (and were once a loop)


def _profile(profiles: dict[int, dict[str, str]], text: str) -> dict[str, str]:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"--profile numbers an optimization profile from 0, got {text!r}")
    if len(text) > 4 or int(text) > MAX_PROFILE:
        raise ValueError(f"--profile numbers the profiles 0, 1, 2, … (at most {MAX_PROFILE}), got {text}")
    if int(text) in profiles:
        raise ValueError(f"profile {int(text)} is given twice (trtexec: the index cannot be the same)")
    profiles[int(text)] = {}
    return profiles[int(text)]


def _profiles(out: Translation, shapes: dict[str, list[str]], profiles: dict[int, dict[str, str]]) -> None:
    """Several optimization profiles from --profile=N groups, as trtexec builds them."""
    stray = [f"--{k}={v}" for k in _RANGE for v in shapes[k]]
    if stray:
        why = "with --profile, each --minShapes/--optShapes/--maxShapes follows its --profile=N directly"
        out.refused.append((" ".join(stray), why))
    out.ignored.extend(f"--shapes={s}" for s in shapes["shapes"])  # with profiles, --shapes are inference shapes
    built: list[dict[str, Profile]] = []
    count = max(profiles) + 1
    if count > len(profiles):  # numbers left out: one refusal, not one per missing number
        missing = [str(i) for i in range(count) if i not in profiles]
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        numbers = ", ".join(map(str, sorted(profiles)))
        why = f"profiles are numbered 0, 1, … without gaps: no --profile={shown} (given: {numbers})"
        out.refused.append((f"--profile={missing[0]}", why))
        return
    for index in range(count):
        given = profiles.get(index)
        try:
            if given is None:
                raise ValueError(f"profiles are numbered 0, 1, … without gaps: no --profile={index}")
            profile = profiles_from_shapes(
                min_shapes=given.get("minShapes"), opt_shapes=given.get("optShapes"), max_shapes=given.get("maxShapes")
            )
            if profile is None:
                raise ValueError("no --minShapes/--optShapes/--maxShapes directly after it")
        except ValueError as exc:
            group = " ".join(f"--{k}={v}" for k, v in (given or {}).items())
            out.refused.append((f"--profile={index} {group}".strip(), str(exc)))
            continue
        built.append(profile)
    if len(built) == count and not stray:
        out.options["profiles"] = built[0] if len(built) == 1 else built


def _shape_flags(profile: dict[str, Profile]) -> list[str]:
    """``--min-shapes=input:1x3x224x224`` … for one profile, as ``trt-widget build`` reads them."""
    argv = []
    for flag, index in (("--min-shapes", 0), ("--opt-shapes", 1), ("--max-shapes", 2)):
        text = ",".join(f"{n}:{'x'.join(map(str, p[index]))}" for n, p in profile.items())
        argv.append(f"{flag}={text}")
    return argv


def build_argv(translation: Translation, extra: Sequence[str] = ()) -> list[str]:
    """The equivalent ``trt-widget build`` command line (what is shown, and what runs), with ``extra`` (trt-widget's
    own flags) before the model: after ``--``, a model named ``--help`` or ``-m.onnx`` is a file, not a flag."""
    from ._options import option_fields

    flags = {f.name: f.metadata.get("flag") for f in option_fields()}
    argv = ["build"]
    for option, value in translation.options.items():
        if option == "profiles" and isinstance(value, list):
            for index, profile in enumerate(value):
                argv += [f"--profile={index}", *_shape_flags(profile)]
        elif option == "profiles":
            argv += _shape_flags(value)
        elif option == "plugins":
            argv.extend(f"--plugin={library}" for library in value)
        elif value is True:
            argv.append(str(flags[option]))
        elif value is False:
            argv.append(f"--no-{str(flags[option])[2:]}")
        else:
            argv.append(f"{flags[option]}={value}")
    return [*argv, *extra, "--", str(translation.model)]
