"""What history records are matched by: a build's key (model + engine-shaping options + backend) and the
paths of its phase instances (name, occurrence among same-name siblings), stable across builds."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from .._build import Build
    from .._engine import ModelSource
    from .._gpu import GpuFacts
    from .._phases import PhaseRow

PhasePath = tuple[tuple[str, int], ...]  # a phase instance across builds: (name, occurrence among same-name siblings)


class ProfileRow(TypedDict):
    """A phase instance as a history record stores it (``path`` is a list of [name, k] pairs once stored)."""

    path: PhasePath
    name: str
    start_s: float
    end_s: float | None
    duration_s: float | None
    step: int
    num_steps: int
    status: str


class LikeFacts(TypedDict, total=False):
    """What else makes two builds comparable (:func:`like_facts`)."""

    gpu: GpuFacts
    timing_cache: str


def phase_paths(rows: Iterable[PhaseRow]) -> dict[int, PhasePath]:
    """id -> path of names with each name's occurrence index among same-name siblings (stable across builds)."""
    paths: dict[int, PhasePath] = {}
    counts: dict[tuple[int | None, str], int] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        parent = row.get("parent")
        k = counts.get((parent, row["name"]), 0)
        counts[(parent, row["name"])] = k + 1
        base = paths.get(parent, ()) if parent is not None else ()
        paths[row["id"]] = (*base, (row["name"], k))
    return paths


def profile_rows(rows: Iterable[PhaseRow]) -> list[ProfileRow]:
    """The stored form of timings rows: path, name, start/end/duration, steps and status."""
    rows = list(rows)
    paths = phase_paths(rows)
    return [
        {
            "path": paths[r["id"]],
            "name": r["name"],
            "start_s": r["start_s"],
            "end_s": r["end_s"],
            "duration_s": r["duration_s"],
            "step": r["step"],
            "num_steps": r["num_steps"],
            "status": r["status"],
        }
        for r in sorted(rows, key=lambda r: r["id"])
    ]


def path_label(path: PhasePath) -> str:
    """``"Building engine / Timing tactics [2]"``: the occurrence index is shown from the second one on."""
    return " / ".join(name if k == 0 else f"{name} [{k + 1}]" for name, k in path)


WHOLE_MAX = 16 << 20  # models up to this size are hashed whole
SAMPLES, SAMPLE_BYTES = 256, 16 << 10  # larger ones: their size and this many evenly spaced blocks (4 MiB)


def model_digest(source: ModelSource) -> str | None:
    """sha256 of an ONNX model (bytes or file), or None for a callable. Above 16 MiB only the size and 256
    evenly spaced 16 KiB blocks are hashed: a 100 MB model is neither re-read nor hashed whole on each build
    (~0.08 s of CPU per build); two such models that differ only between the blocks share a timing history."""
    if source.kind == "bytes":
        data = memoryview(source.value)
        if len(data) <= WHOLE_MAX:
            return hashlib.sha256(data).hexdigest()
        return _sampled(len(data), lambda offset: data[offset : offset + SAMPLE_BYTES])
    if source.kind != "path" or not os.path.isfile(source.value):
        return None
    from .._external_data import open_model

    with open(open_model(source.value), "rb") as handle:  # a regular file, opened without blocking
        size = os.fstat(handle.fileno()).st_size
        if size <= WHOLE_MAX:
            return hashlib.sha256(handle.read()).hexdigest()
        return _sampled(size, lambda offset: os.pread(handle.fileno(), SAMPLE_BYTES, offset))


def _sampled(size: int, block: Callable[[int], bytes | memoryview]) -> str:
    digest = hashlib.sha256(f"sampled:{size}:{SAMPLES}x{SAMPLE_BYTES}\n".encode())
    for i in range(SAMPLES):
        digest.update(block((size - SAMPLE_BYTES) * i // (SAMPLES - 1)))
    return digest.hexdigest()


def like_facts(build: Build) -> LikeFacts:
    """What else makes two builds comparable: the GPU (name, compute capability, driver; absent without NVML) and,
    for NVIDIA TensorRT, whether the timing cache starts warm (a warm build can take a tenth of a cold one)."""
    from .._backend import select_backend
    from .._gpu import gpu_identity

    facts: LikeFacts = {}
    gpu = gpu_identity(getattr(build.options, "device", None))  # the GPU of the build's device=
    if gpu:
        facts["gpu"] = gpu
    cache = build.options.timing_cache
    if cache and select_backend()[0] == "tensorrt":  # TensorRT for RTX ignores timing caches
        try:
            facts["timing_cache"] = "warm" if os.path.getsize(cache) > 0 else "cold"
        except OSError:
            facts["timing_cache"] = "cold"
    return facts


def describe_like(facts: LikeFacts) -> str:
    """'NVIDIA H200 (compute 9.0, driver 580.159.04), warm timing cache' (empty without such facts)."""
    parts = []
    gpu = facts.get("gpu")
    if gpu:
        known = (("compute", gpu.get("compute_capability")), ("driver", gpu.get("driver")))
        more = ", ".join(f"{label} {value}" for label, value in known if value is not None)
        parts.append(f"{gpu.get('name', 'GPU')}{f' ({more})' if more else ''}")
    if "timing_cache" in facts:
        parts.append(f"{facts['timing_cache']} timing cache")
    return ", ".join(parts)


def build_key(build: Build, like: LikeFacts | None = None) -> tuple[str, str]:
    """(key, model hash): the model's digest (:func:`model_digest`; a callable's name + source) + options +
    backend, + the GPU and the timing cache's warmth where known (:func:`like_facts`; absent facts leave older
    keys unchanged)."""
    from .._backend import backend_info

    source = build.source
    model_hash = model_digest(source)
    if model_hash is None:
        fn = source.value
        try:
            code = inspect.getsource(fn)
        except (OSError, TypeError):
            code = ""
        name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
        model_hash = hashlib.sha256(f"callable:{name}\n{code}".encode(errors="surrogatepass")).hexdigest()
    like = like_facts(build) if like is None else like
    blob = json.dumps(
        {"model": model_hash, "options": build.options.summary(), "backend": backend_info(), **like},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest(), model_hash
