"""Input shapes and optimization profiles: trtexec's ``NAME:DIMS`` text, its rules for a missing min, opt or max,
and the checks every profile passes (``profiles=`` in Python, the shape flags on the command line)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import SupportsIndex

Shape = tuple[int, ...]
Profile = tuple[Shape, Shape, Shape]
# input name -> (min_shape, opt_shape, max_shape); a list of such dicts for several optimization profiles
ProfileSpec = Mapping[str, Sequence[Sequence[int]]]
ProfilesArg = ProfileSpec | Sequence[ProfileSpec]
# TensorRT 10's Dims hold int64 values, but a tensor's volume must fit int64 too and kernels index with int32 along
# a dimension: a dimension of 2**31 or more is a typo or an attack (2**63 raised inside the builder), never a shape
MAX_DIM = (1 << 31) - 1
MAX_RANK = 8  # nvinfer1::Dims::MAX_DIMS


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
            raise ValueError(
                f"{flag} {part!r}: a shape for the build must have no -1 (dynamic) dimensions: give the sizes to "
                "build for"
            )
        where = f"{flag} {part[:80]!r}"
        if any(len(d) > 30 for d in texts):  # int() of thousands of digits is slow, or refused
            raise ValueError(f"{where}: a dimension of more than 30 digits is too large (at most {MAX_DIM:,})")
        out[name] = _check_dims(tuple(int(d) for d in texts), where)
    if not out:
        raise ValueError(f"{flag} needs NAME:DIMS, e.g. input:1x3x224x224")
    return out


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


def check_profiles(profiles: object) -> dict[str, Profile] | list[dict[str, Profile]]:
    """``profiles=`` as given (a dict, or a list of dicts naming the same inputs) -> the shapes as tuples of ints,
    each profile min <= opt <= max per dimension."""
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
