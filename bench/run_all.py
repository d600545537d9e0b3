"""Run every benchmark (P1-P7) as its own subprocess, one after another, and summarise against the targets.

    python bench/run_all.py            # full run (a few minutes; P1 is the long one) -> bench/results.json
    python bench/run_all.py --quick    # smaller builds and fewer repeats -> bench/results-quick.json
    python bench/run_all.py --only p3 p4

Each script prints its own table and one ``BENCH_JSON {...}`` line; this prints every figure with its target
and PASS / FAIL (or "info" where there is no target). The exit status is 0 even when a target is missed: the
figures are reported, not enforced.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import JSON_PREFIX, load_avg, machine  # noqa: E402

SCRIPTS = [
    ("p1", "p1_build_overhead.py", ["--repeats", "2", "--blocks", "300"]),
    ("p2", "p2_callback_cost.py", ["--steps", "20000", "--blocks", "200"]),
    ("p3", "p3_sync_rate.py", ["--blocks", "200", "--seconds", "1.5"]),
    ("p4", "p4_stop_latency.py", ["--trials", "6", "--blocks", "200"]),
    ("p5", "p5_main_thread.py", ["--blocks", "200", "--large", "1200"]),
    ("p6", "p6_memory.py", ["--steps", "200000", "--sizes", "1000", "10000"]),
    ("p7", "p7_frontend.py", ["--updates", "20"]),
    ("p7-10000", "p7_frontend.py --instances 10000 --changed 200", ["--updates", "10"]),
    ("p8", "p8_default_runner.py", ["--repeats", "2", "--trials", "3", "--blocks", "400"]),
    ("p9", "p9_serve.py", ["--builds", "3", "--measurements", "3000"]),
    ("p11", "p11_sync_bytes.py", ["--measurements", "300", "--seconds", "4"]),
    ("p10", "p10_matrix.py", ["--blocks", "20", "--repeats", "3"]),
    ("p12", "p12_kernel_shutdown.py", ["--repeats", "1"]),
    ("p14", "p14_agents.py", ["--builds", "2", "--trials", "3"]),
]
ORDER = [
    "P1",
    "P1-cpu",
    "P1-own",
    "P2",
    "P2-trt",
    "P2-build",
    "P2-log",
    "P3",
    "P3-final",
    "P3-large",
    "P4",
    "P4-real",
    "P5",
    "P5-nolog",
    "P5-1200",
    "P5-10000",
    "P6",
    "P6-linear",
    "P7",
    "P7-expanded",
    "P7-timeline",
    "P7-10000",
    "P7-expanded-10000",
    "P7-timeline-10000",
    "P1-default",
    "P1-first",
    "P4-default",
    "P5-default",
    "P9-latency",
    "P9-fanout",
    "P9-rate",
    "P9-replay",
    "P9-builder",
    "P10-rate",
    "P10-stall",
    "P10-ray",
    "P11-total",
    "P11-update",
    "P11-full",
    "P12",
    "P12-s",
    "P14-progress",
    "P14-cancel-mcp",
    "P14-cancel-lsp",
]


def run_script(name: str, args: list[str], timeout: float) -> tuple[dict[str, Any] | None, str, float]:
    """Run one script, echoing its output; returns (its BENCH_JSON record or None, error text, seconds)."""
    start = time.perf_counter()
    print(f"\n=== {name} {' '.join(args)}", flush=True)
    script, *base = name.split()  # "p7_frontend.py --instances 10000": the script and its fixed arguments
    proc = subprocess.Popen(
        [sys.executable, str(HERE / script), *base, *args],
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    record: dict[str, Any] | None = None
    lines: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith(JSON_PREFIX):
                record = json.loads(line[len(JSON_PREFIX) :])
                continue
            lines.append(line)
            print(line, end="", flush=True)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None, f"timed out after {timeout:g} s", time.perf_counter() - start
    error = "" if proc.returncode == 0 and record else f"exit {proc.returncode}: {''.join(lines[-5:]).strip()}"
    return record, error, time.perf_counter() - start


def verdict(fig: dict[str, Any]) -> str:
    if fig.get("pass") is None:
        return "info" if fig.get("value") is not None else "n/a"
    return "PASS" if fig["pass"] else "FAIL"


def fmt_value(fig: dict[str, Any]) -> str:
    value, unit = fig.get("value"), fig.get("unit", "")
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{value:,} B"
    if unit == "ratio":
        return f"{value:g}x" if "x" in str(fig.get("target", "")) else f"{value:.4g}"
    return f"{value:g} {unit}"


def markdown(figures: dict[str, dict[str, Any]], header: str) -> str:
    """The summary as a Markdown table (for bench/README.md)."""
    lines = [header, "", "| id | figure | value | target | result |", "|---|---|---|---|---|"]
    for key in sorted(figures, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        fig = figures[key]
        what = str(fig.get("what", "")).replace("|", "/")
        lines.append(f"| {key} | {what} | {fmt_value(fig)} | {fig.get('target', '-')} | {verdict(fig)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller builds, fewer repeats (a smoke run)")
    parser.add_argument("--only", nargs="*", default=None, help="ids to run, e.g. p1 p7")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()

    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    load_start = load_avg()
    figures: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    for key, script, quick_args in SCRIPTS:
        if args.only and key not in [o.lower() for o in args.only]:
            continue
        record, error, seconds = run_script(script, quick_args if args.quick else [], args.timeout)
        runs[key] = {
            "script": script,
            "seconds": round(seconds, 1),
            "error": error or None,
            "load_avg_start": (record or {}).get("load_avg_start"),
            "load_avg_end": (record or {}).get("load_avg_end"),
        }
        if record:
            figures.update(record["figures"])
        if error:
            print(f"!!! {script}: {error}", flush=True)
            figures.setdefault(
                key.upper(),
                {"value": None, "target": "-", "pass": False, "unit": "", "what": f"{script} did not finish: {error}"},
            )

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"\n=== Summary ({'quick' if args.quick else 'full'} run, commit {commit}, "
        f"load average at start {load_start}, at end {load_avg()}, {machine()['cpus']} CPUs)"
    )
    width = max([len(k) for k in figures] + [2])
    for key in sorted(figures, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        fig = figures[key]
        print(
            f"{key.ljust(width)}  {verdict(fig):4}  {fmt_value(fig):>14}  target {fig.get('target', '-'):<28} "
            f"{fig.get('what', '')}"
        )
    failed = [k for k, f in figures.items() if f.get("pass") is False]
    print(
        f"{len(figures) - len(failed)} of {len(figures)} figures pass or are informational; "
        f"missed: {', '.join(failed) or 'none'}"
    )

    out = HERE / ("results-quick.json" if args.quick else "results.json")
    if args.only:
        out = out.with_name(out.stem + "-partial.json")
    out.write_text(
        json.dumps(
            {
                "started": started,
                "commit": commit,
                "quick": args.quick,
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "machine": machine(),
                "load_avg_start": load_start,
                "load_avg_end": load_avg(),
                "runs": runs,
                "figures": figures,
            },
            indent=1,
            default=str,
        )
        + "\n"
    )
    md = out.with_suffix(".md")
    command = " ".join(["python", "bench/run_all.py", *sys.argv[1:]])
    md.write_text(
        markdown(
            figures,
            f"`{command}` — {started}, commit {commit}, {machine()['cpus']} CPUs, "
            f"load average {load_start} at start, {load_avg()} at end",
        )
    )
    print(f"wrote {out.relative_to(HERE.parent)} and {md.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
