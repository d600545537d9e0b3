"""“Δ last build” for the engine: what changed from the last build of the same model, options and backend (the
history store's match, as for the timings): layer count, precision mix, memory and engine size.

A history record keeps a small brief of its engine (:func:`engine_brief`: counts and bytes, no layer names); a
stored record is untrusted (a file anyone may have edited): :func:`engine_delta` reads only ints under short keys.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._format import fmt_bytes
from .._json import json_int
from ._layer import _MEMORY_WORDS, JSON, display
from ._model import EngineReport

# the engine's memory; the allocators' peaks (peak_cpu, peak_gpu) are the build process's, and vary run to run
ENGINE_MEMORY = ("weights", "activations", "host_persistent", "device_persistent", "scratch", "engine_size")
_KEYS_KEPT = 20  # precisions kept in a brief


def engine_brief(report: EngineReport) -> dict[str, JSON]:
    """What a history record keeps of an engine: its layer count, precision mix and memory (bytes)."""
    mix = list(report.precision_mix().items())[:_KEYS_KEPT]
    return {
        "layers": report.total_layers,
        "precision_mix": {k[:40]: v for k, v in mix},
        "memory": {k: v for k in ENGINE_MEMORY if (v := report.memory.get(k)) is not None},
    }


def _int(value: object) -> int | None:
    return value if json_int(value) else None


def _counts(value: object) -> dict[str, int] | None:
    """A stored ``{name: int}`` (names cut, at most 20), or None where it is not one."""
    if not isinstance(value, Mapping):
        return None
    out: dict[str, int] = {}
    for key, count in list(value.items())[:_KEYS_KEPT]:
        number = _int(count)
        if not isinstance(key, str) or number is None:
            return None
        out[key[:40]] = number
    return out


def engine_delta(past: object, report: EngineReport) -> dict[str, JSON] | None:
    """This engine − the past one's brief: ``{"layers": ±n, "precision": {p: ±n}, "memory": {key: ±bytes}}``,
    only what changed (all zero/empty: the same engine by these measures); None where ``past`` is no readable
    brief (a record written before briefs were kept, or edited)."""
    return brief_delta(past, engine_brief(report))


def brief_delta(past: object, now: object) -> dict[str, JSON] | None:
    """:func:`engine_delta` between two briefs (:func:`engine_brief`'s form, e.g. two builds of a matrix); None
    where either is no readable brief."""
    if not isinstance(past, Mapping) or not isinstance(now, Mapping):
        return None
    layers, mix, memory = _int(past.get("layers")), _counts(past.get("precision_mix")), _counts(past.get("memory"))
    now_layers, now_mix = _int(now.get("layers")), _counts(now.get("precision_mix"))
    if layers is None or mix is None or memory is None or now_layers is None or now_mix is None:
        return None
    precision = {k: d for k in dict.fromkeys([*now_mix, *mix]) if (d := now_mix.get(k, 0) - mix.get(k, 0))}
    now_memory = _counts(now.get("memory")) or {}
    changed = {k: now_memory[k] - memory[k] for k in ENGINE_MEMORY if k in now_memory and k in memory}
    return {
        "layers": now_layers - layers,
        "precision": dict[str, JSON](precision),
        "memory": {k: v for k, v in changed.items() if v},
    }


def signed(delta: int) -> str:
    """``+2``, ``−10`` (a true minus sign, as everywhere the CLI and the widget show a change)."""
    return f"{delta:+,}".replace("-", "−")


def signed_bytes(delta: int) -> str:
    """``+1.0 MiB``, ``−340 B``."""
    return ("+" if delta >= 0 else "−") + fmt_bytes(abs(delta))


def delta_text(delta: Mapping[str, JSON]) -> str:
    """``Δ last build: +2 layers, FP16 +10, FP32 −10, weights −1.0 MiB, engine −1.2 MiB`` (names escaped); "same
    layer count, precisions and memory" where nothing changed."""
    parts: list[str] = []
    layers = _int(delta.get("layers")) or 0
    if layers:
        parts.append(f"{signed(layers)} layer{'s' if abs(layers) != 1 else ''}")
    precision = _counts(delta.get("precision")) or {}
    parts += [f"{display(k, 20)} {signed(v)}" for k, v in precision.items() if v]
    memory = _counts(delta.get("memory")) or {}
    parts += [f"{_MEMORY_WORDS[k]} {signed_bytes(memory[k])}" for k in ENGINE_MEMORY if memory.get(k)]
    return "Δ last build: " + (", ".join(parts) if parts else "same layer count, precisions and memory")
