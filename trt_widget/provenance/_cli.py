"""``trt-widget check ENGINE [--json]``: will this engine load on this machine? One line from its manifest (or
a TensorRT for RTX engine's header)."""

from __future__ import annotations

import argparse
import json

from .._format import escape_controls, say
from ._check import check_engine


def check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "engine",
        help="an engine file: trt_widget's (its manifest lies beside it) or, without a manifest, a TensorRT for "
        "RTX engine (its header is read)",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"loads": true|false|null, "verdict": "...", "reason": "..."}'
    )


def check_run(args: argparse.Namespace) -> int:
    """0 when the engine loads here, 1 when it does not, nothing can tell, or only its header matches (the line says
    why)."""
    result = check_engine(args.engine)
    if args.json:
        said = {"engine": args.engine, "loads": result.loads, "verdict": result.verdict, "reason": result.reason}
        print(json.dumps(said))
    else:
        say(f"{escape_controls(args.engine)}: {result.reason}")  # the reason is escaped already
    return 0 if result.loads else 1
