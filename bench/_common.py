"""Shared helpers for the benchmark scripts: statistics, the table and the one machine-readable line.

Every script prints a short human table and exactly one ``BENCH_JSON {...}`` line that ``run_all.py`` parses.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/x.py` from anywhere, against this checkout
    sys.path.insert(0, str(ROOT))

JSON_PREFIX = "BENCH_JSON "


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100.0 * len(ordered) + 0.4999)))
    return float(ordered[rank - 1])


def load_avg() -> list[float]:
    """1/5/15-minute load averages: other work on this 2-core machine shows up in every figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain aligned text table."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))  # one cell per column
    sys.stdout.flush()


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0 or 0.01 <= abs(value) < 1e5:
            return f"{value:.3f}"
        return f"{value:.3g}"
    return str(value)


def emit(bench: str, figures: dict[str, Any], **extra: Any) -> None:
    """Print the one machine-readable line: figures keyed by id (P1..P7), each with value/target/pass."""
    record = {"bench": bench, "figures": figures, "load_avg_end": load_avg(), "machine": machine(), **extra}
    print(JSON_PREFIX + json.dumps(record, default=_jsonable), flush=True)


def figure(
    value: float | None, target: str, passed: bool | None, unit: str, what: str, **details: Any
) -> dict[str, Any]:
    """One figure: its value, the target as text, PASS/FAIL (None: no target, shown as info) and what it is."""
    verdict = None if passed is None else bool(passed)
    return {"value": value, "unit": unit, "target": target, "pass": verdict, "what": what, **details}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` until true; raise with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.002)


class ThreadCpu:
    """CPU seconds per Python thread name, read from /proc (Linux) each time ``poll()`` is called.

    A thread's last reading before it exits is what counts, so poll often enough (e.g. every 0.5 s) and
    once more right before joining. Threads TensorRT starts itself show up as "native".
    """

    def __init__(self) -> None:
        import threading

        self._threading = threading
        self._tick = os.sysconf("SC_CLK_TCK")
        self._base = self._read()
        self._last: dict[str, tuple[str, float]] = {}

    def _read(self) -> dict[str, tuple[str, float]]:
        names = {str(t.native_id): t.name for t in self._threading.enumerate()}
        out: dict[str, tuple[str, float]] = {}
        try:
            tids = os.listdir("/proc/self/task")
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[tid] = (names.get(tid, "native"), (int(fields[11]) + int(fields[12])) / self._tick)
        return out

    def poll(self) -> None:
        for tid, (name, cpu) in self._read().items():
            known = self._last.get(tid)
            self._last[tid] = (known[0] if known and name == "native" else name, cpu)

    def by_name(self) -> dict[str, float]:
        self.poll()
        totals: dict[str, float] = {}
        for tid, (name, cpu) in self._last.items():
            totals[name] = totals.get(name, 0.0) + cpu - self._base.get(tid, (name, 0.0))[1]
        return totals


class FakeBuild:
    """Just enough of a Build for the widget's snapshot pump: a running phase model, optionally pre-filled
    with ``n`` instances (one root and ``n - 1`` finished "Measuring tactic time" children)."""

    def __init__(self, n: int = 0, elapsed_s: float = 0.0) -> None:
        from trt_widget._phases import PhaseModel

        self.model = PhaseModel()
        self.status, self.status_detail, self.engine, self.error = "running", "", None, None
        self.problems: list[dict[str, Any]] = []
        self.cancel_info, self.history, self.resources = None, None, None
        self.options = type("Options", (), {"isolation": "thread"})()
        self.finished = False
        self.elapsed_s = elapsed_s
        if n:
            self.model.phase_start("Building engine", None, n)
        for _ in range(n - 1):
            self.model.phase_start("Measuring tactic time", "Building engine", 4)
            self.model.step_complete("Measuring tactic time", 3)
            self.model.phase_finish("Measuring tactic time")

    def done(self) -> bool:
        return self.finished

    def add_done_callback(self, _callback: Any) -> None:
        pass
