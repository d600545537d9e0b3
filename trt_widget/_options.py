"""Build options (the trtexec flags people expect), validated before any thread or process starts."""

from __future__ import annotations

import difflib
import math
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ._files import NotARegularFile, writable_target

Shape = tuple[int, ...]
Profile = tuple[Shape, Shape, Shape]

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
}


@dataclass(frozen=True)
class BuildOptions:
    """Everything that shapes an engine build. Unknown names are rejected with a suggestion."""

    optimization_level: int | None = None  # builder optimization level 0..5 (trtexec --builderOptimizationLevel)
    fp16: bool = False  # allow FP16 kernels (weakly typed networks; NVIDIA TensorRT only)
    strongly_typed: bool = True  # the model's tensor types decide precision; False (weak typing): NVIDIA 10.x only
    timing_cache: str | None = None  # file loaded before and saved after the build
    workspace: int | None = None  # workspace memory-pool limit in bytes ("2GiB" accepted)
    profiles: dict[str, Profile] | None = None  # input name -> (min, opt, max) shapes
    output: str | None = None  # engine file written atomically when the build succeeds
    budget: float | None = None  # seconds; the build is cancelled when it runs longer
    verbose: bool = False  # capture VERBOSE TensorRT log lines too
    isolation: str = "process"  # "process" (a warm builder process Stop can always end) or "thread"
    force_after: float | None = None  # process isolation: terminate this long after a graceful stop (0.5 s)
    plugins: tuple[str, ...] = ()  # TensorRT plugin libraries (.so / .dll) loaded in the process that builds

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> BuildOptions:
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
                not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0
            ):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        for name in ("fp16", "strongly_typed", "verbose"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")
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
        for name in ("timing_cache", "output"):
            value = getattr(self, name)
            if value is not None:
                if not isinstance(value, (str, os.PathLike)):
                    raise TypeError(f"{name} must be a file path, got {type(value).__name__}")
                object.__setattr__(self, name, str(Path(value).expanduser()))
        for name in ("timing_cache", "output"):
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
        if (
            self.output is not None
            and self.timing_cache is not None
            and writable_target(self.output) == writable_target(self.timing_cache)
        ):
            raise ValueError(f"output and timing_cache are the same file ({self.output}): give each its own path")
        if self.profiles is not None:
            object.__setattr__(self, "profiles", _check_profiles(self.profiles))
        object.__setattr__(self, "plugins", _check_plugins(self.plugins))

    def summary(self) -> dict[str, Any]:
        """The options that change the engine (for history keys), JSON-ready."""
        return {
            "optimization_level": self.optimization_level,
            "fp16": self.fp16,
            "strongly_typed": self.strongly_typed,
            "workspace": self.workspace,
            "profiles": {k: [list(s) for s in v] for k, v in sorted((self.profiles or {}).items())},
            **({"plugins": list(self.plugins)} if self.plugins else {}),  # absent when none: older keys stay valid
        }


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
            count = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
            if count <= 0:
                raise ValueError(f"{what} must be positive, got {value!r}")
            return parse_bytes(count, what)
    raise ValueError(f"{what} must be a byte count like 1073741824 or '1GiB', got {value!r}")


def _check_profiles(profiles: Any) -> dict[str, Profile]:
    if not isinstance(profiles, dict):
        raise TypeError("profiles must be a dict: input name -> (min_shape, opt_shape, max_shape)")
    checked: dict[str, Profile] = {}
    for name, shapes in profiles.items():
        try:
            lo, opt, hi = (tuple(int(d) for d in s) for s in shapes)
        except (TypeError, ValueError):
            raise ValueError(f"profile for input {name!r} must be (min, opt, max) shapes, got {shapes!r}") from None
        if any(d < 0 for d in lo):
            raise ValueError(f"profile for input {name!r} has a negative dimension: {shapes!r}")
        if not (len(lo) == len(opt) == len(hi)) or any(not a <= b <= c for a, b, c in zip(lo, opt, hi, strict=True)):
            raise ValueError(f"profile for input {name!r} needs min <= opt <= max per dimension, got {shapes!r}")
        checked[str(name)] = (lo, opt, hi)
    return checked


def _check_plugins(plugins: Any) -> tuple[str, ...]:
    """Plugin library paths, absolute; each must be an existing file now (the builder loads them later)."""
    if isinstance(plugins, (str, os.PathLike)) or not isinstance(plugins, (list, tuple)):
        raise TypeError(f"plugins must be a list of plugin library paths, got {plugins!r}")
    checked = []
    for entry in plugins:
        if not isinstance(entry, (str, os.PathLike)):
            raise TypeError(f"plugins: each entry must be a file path, got {type(entry).__name__}")
        path = Path(entry).expanduser().absolute()
        if not path.exists():
            raise FileNotFoundError(f"plugins: no plugin library at {path}")
        if not path.is_file():
            raise ValueError(f"plugins: {path} is not a file (a plugin library such as libmy_plugins.so)")
        checked.append(str(path))
    return tuple(checked)
