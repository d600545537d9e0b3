"""``trt-widget inspect ENGINE``: what an engine's manifest knows (where it came from, TensorRT, options, the engine
report its build saved), without deserializing the engine (that needs the GPU it was built for); any other file
goes on to the engine report's ``inspect``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping

from .._format import fmt_bytes, fmt_s, say
from .._json import JSON, json_int
from ..engine import MEMORY_KEYS, MEMORY_WORDS, cli_inspect, display
from ._check import read_engine_header
from ._manifest import Manifest, ManifestError, read_manifest


def inspect_run(args: argparse.Namespace) -> int:
    """``trt-widget inspect FILE``: an engine (or its manifest) here, any other file as the engine report reads it."""
    code = _engine(args)
    return cli_inspect(args) if code is None else code


def _error(text: str) -> int:
    say(f"trt-widget inspect: error: {text}", sys.stderr)
    return 1


def _engine(args: argparse.Namespace) -> int | None:
    """An engine (or its manifest): what the manifest knows, or why it cannot say; None for any other file."""
    path: str = args.file
    try:
        manifest = read_manifest(path)
    except FileNotFoundError:
        manifest = None
    except (ManifestError, OSError, ValueError) as exc:  # ValueError: ~name of no user
        if not os.path.isfile(path):
            return None  # a folder, a missing file: the report's own errors say it
        return _error(f"{path}: its manifest cannot be read: {exc}")
    if manifest is None:
        try:
            header = read_engine_header(path)
        except (OSError, ValueError):
            return None
        if header is None:
            return None
        return _error(
            f"{path}: a TensorRT for RTX {header.version} engine with no manifest beside it; what it holds is in its "
            f"build's log or recording (trt-widget build --json > build.jsonl, then trt-widget inspect build.jsonl), "
            f"and trt-widget check {path} says whether it loads here"
        )
    engine = manifest.engine_path()
    other = manifest.names_other(path)
    if other:
        return _error(f"{path}: {other}")
    if args.json:
        print(json.dumps({"engine": str(engine), "manifest": manifest.data, "engine_report": manifest.engine_report}))
    else:
        say(manifest_text(manifest, str(engine) if path.endswith(".manifest.json") else path))
    return 0


def _text(value: JSON, limit: int = 120) -> str:
    return display(value if isinstance(value, str) else json.dumps(value), limit)


def _count(value: JSON) -> int | None:
    return value if json_int(value) else None


def _counts(value: JSON) -> str:
    items = value.items() if isinstance(value, Mapping) else ()
    return ", ".join(f"{display(k, 40)} {n:,}" for k, v in list(items)[:12] if (n := _count(v)) is not None)


def manifest_text(manifest: Manifest, engine: str) -> str:
    """What an engine's manifest records, as lines: where it came from, TensorRT, options, the engine report the
    build saved, and where its layer table is (every value escaped and cut: the manifest is untrusted)."""
    data = manifest.data
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    assert isinstance(model, dict)
    size = _count(model.get("size"))
    sha = model.get("sha256")
    source = _text(model.get("label", "?"))
    facts = ", ".join(
        [
            *([fmt_bytes(size)] if size is not None else []),
            *([f"sha256 {display(sha[:12], 12)}…"] if isinstance(sha, str) else []),
        ]
    )
    took = f" in {fmt_s(manifest.build_s)}" if manifest.build_s is not None else ""
    device = manifest.device or {}
    lines = [
        f"{engine}: a TensorRT engine (not loaded: reading its layers needs the GPU it was built for)",
        f"From its manifest ({manifest.path.name}):",
        f"  model: {source}" + (f" ({facts})" if facts else ""),
        f"  built: {_text(manifest.built_at, 40)}{took} by trt_widget {_text(manifest.trt_widget_version, 40)}",
        f"  TensorRT: {_text(manifest.backend, 20)} {_text(manifest.tensorrt_version, 40)}; GPU: "
        + (_text(device.get("name", "?"), 80) if device else "none recorded"),
        "  options: " + (", ".join(f"{display(k, 40)}={_text(v, 80)}" for k, v in manifest.options.items()) or "none"),
    ]
    actual = None
    try:
        actual = os.stat(manifest.engine_path()).st_size
    except OSError:
        lines.append(f"  engine: {fmt_bytes(manifest.engine_size)} recorded; the file is not there")
    if actual is not None:
        same = "as recorded" if actual == manifest.engine_size else f"the manifest says {manifest.engine_size:,} B"
        lines.append(f"  engine: {fmt_bytes(actual)} ({same})")
    report = manifest.engine_report
    if report is not None:
        layers = _count(report.get("total_layers")) or _count(report.get("layers"))
        lines.append("Engine report saved by its build:")
        lines.append(f"  {layers if layers is not None else '?'} layers; types: {_counts(report.get('types'))}")
        lines.append(f"  precision: {_counts(report.get('precision_mix'))}")
        memory = report.get("memory") if isinstance(report.get("memory"), dict) else {}
        assert isinstance(memory, dict)
        said = [f"{MEMORY_WORDS[k]} {fmt_bytes(n)}" for k in MEMORY_KEYS if (n := _count(memory.get(k))) is not None]
        if said:
            lines.append("  memory: " + ", ".join(said))
    lines.append(
        "Its layer table is in its build's log or recording (trt-widget build --json > build.jsonl, then "
        f"trt-widget inspect build.jsonl); trt-widget check {engine} says whether it loads here."
    )
    return "\n".join(lines)
