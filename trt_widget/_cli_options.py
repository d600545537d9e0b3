"""The command line's projection of :class:`~trt_widget._options.BuildOptions`: one flag per option that has one
(its help from the field's metadata), trtexec's shape flags (``--shapes``, ``--min-shapes`` …, ``--profile N``),
and the options read back from the parsed arguments."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from ._options import BuildOptions
from ._shapes import Profile, profiles_from_shapes


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
    given = {
        f.name: profiles_from_args(args) if f.metadata.get("cli", {}).get("shapes") else getattr(args, f.name, None)
        for f in fields(BuildOptions)
    }
    # every flag defaults to None: False is --no-tf32 / --no-strongly-typed
    return {name: value for name, value in given.items() if value is not None}


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
        parser.add_argument(*spellings, dest=dest, action=_InOrder, metavar="NAME:DIMS", help=text)
    parser.add_argument(
        "--profile",
        dest="profile",
        type=int,
        action=_InOrder,
        metavar="N",
        help="several optimization profiles: the shape flags after --profile N are profile N's (trtexec --profile=N)",
    )


class _InOrder(argparse._AppendAction):
    """``--profile N`` and the shape flags: each appended to its own list, as ``action="append"`` does, and to
    ``shape_flags``, one list of (dest, value) of them all in command-line order: a shape flag belongs to the
    ``--profile`` before it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option)
        namespace.shape_flags = [*(getattr(namespace, "shape_flags", None) or []), (self.dest, values)]


_SHAPE_DESTS = ("shapes", "min_shapes", "opt_shapes", "max_shapes")


def profiles_from_args(args: argparse.Namespace) -> dict[str, Profile] | list[dict[str, Profile]] | None:
    """The optimization profile from --shapes or --min/--opt/--max-shapes (a flag given twice adds inputs); with
    ``--profile N`` before each group of shape flags, several profiles (a list), numbered 0, 1, … as trtexec's."""
    flags: list[tuple[str, str | int]] = getattr(args, "shape_flags", None) or []
    order: list[int] = []  # the --profile numbers, as given
    grouped: list[tuple[int | None, str, str]] = []  # (the --profile it follows or None, dest, value)
    for dest, value in flags:
        if dest == "profile":
            order.append(int(value))
        else:
            grouped.append((order[-1] if order else None, dest, str(value)))
    if not order:
        given = {k: ",".join(getattr(args, k, None) or []) for k in _SHAPE_DESTS}
        return profiles_from_shapes(**{k: v or None for k, v in given.items()})
    if sorted(order) != list(range(len(order))):
        raise ValueError(f"--profile numbers the profiles 0, 1, 2, … each once; got {', '.join(map(str, order))}")
    stray = [f"--{dest.replace('_', '-')} {value}" for index, dest, value in grouped if index is None]
    if stray:
        raise ValueError(f"with --profile, each shape flag follows the --profile it belongs to: {' '.join(stray)}")
    profiles = []
    for number in range(len(order)):
        texts = {k: ",".join(v for i, d, v in grouped if i == number and d == k) or None for k in _SHAPE_DESTS}
        profile = profiles_from_shapes(**texts)
        if profile is None:
            raise ValueError(f"--profile {number} has no shapes: follow it with --min-shapes/--opt-shapes/--max-shapes")
        profiles.append(profile)
    return profiles[0] if len(profiles) == 1 else profiles


def _flag_table() -> dict[str, tuple[str, bool]]:
    """Option name -> (its flag, whether ``--no-FLAG`` is its False)."""
    return {
        f.name: (str(f.metadata["flag"]), f.metadata.get("cli", {}).get("action") is argparse.BooleanOptionalAction)
        for f in fields(BuildOptions)
        if f.metadata.get("flag")
    }


def in_flags(message: str) -> str:
    """A :class:`BuildOptions` error as the command line says it: each option's Python name (``budget``,
    ``fp16=True``, ``optimization_level``) replaced by the flag that sets it (``--budget``, ``--fp16``,
    ``--opt-level``). A one-word name (``output``, ``budget``) counts only where it is the error's subject: at the
    start or before "must"; a name with an underscore or a digit, or with ``=``, anywhere."""
    table = _flag_table()
    names = "|".join(sorted(map(re.escape, table), key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w\-./'\"=])({names})(=[^\s,;:)]*)?(?=[\s:,;)]|$)")

    def flag(match: re.Match[str]) -> str:
        name, assigned = match.group(1), match.group(2)
        option, negatable = table[name]
        subject = match.start() == 0 or message.startswith(" must", match.end())
        if assigned is None and not re.search(r"[_\d]", name) and not subject:
            return match.group(0)  # an ordinary word of the sentence ("the output of ...")
        value = (assigned or "=")[1:]
        if value in ("", "True"):
            return option
        if value == "False":
            return f"--no-{option[2:]}" if negatable else f"{option} off"
        return f"{option} {value}"

    return pattern.sub(flag, message)


def checked_options(args: argparse.Namespace, **more: Any) -> dict[str, Any]:
    """The options given on the command line (with ``more``), checked as :class:`BuildOptions` and against the
    selected backend before anything builds; a ValueError names the flags (:func:`in_flags`), a
    FileNotFoundError passes as it is."""
    from ._backend import check_options

    try:
        options = {**options_from_args(args), **more}
        check_options(BuildOptions.from_kwargs(**options))
    except FileNotFoundError:
        raise
    except (ValueError, TypeError) as exc:
        raise ValueError(in_flags(str(exc))) from None
    return options
