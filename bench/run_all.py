"""Run every benchmark as its own subprocess, one after another, and summarise against the targets.

    python bench/run_all.py            # full run (several minutes) -> bench/results.json
    python bench/run_all.py --quick    # the smoke run: small sizes, few repeats -> bench/results-quick.json
    python bench/run_all.py --only p3 p4
    python bench/run_all.py --quick --jobs 2   # scripts side by side: a faster smoke run (figures need --jobs 1)

It first builds what the scripts need (the JS bench bundle js/dist/bench.js: ``node js/build.mjs --bench``).
Each script prints its own table and one ``BENCH_JSON {...}`` line; this prints every figure with its target
and PASS / FAIL (or "info" where there is no target). A missed target does not change the exit status (the
figures are reported, not enforced: machines are noisy); a script that crashes, hangs past ``--timeout`` or
prints no figures makes it exit 1, so the test suite's smoke run (tests/test_bench_smoke.py) catches rot.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import JSON_PREFIX, load_avg, machine  # noqa: E402
from report import PAGE, fmt_value, ordered, render, verdict  # noqa: E402

QUICK_REC = ["--record-blocks", "20"]  # p16: the layer record of a small build, not of a verbose resnet50 build
QUICK_P8 = ["--window", "1", "--stall-blocks", "100", "--p1-blocks", "20"]  # P1: not resnet50's four builds
# (id, script and its fixed arguments, the --quick arguments: the smallest sizes that still run every path)
SCRIPTS = [
    ("p1", "p1_build_overhead.py", ["--repeats", "1", "--blocks", "100"]),
    ("p1-small", "p1_small_build.py", ["--repeats", "1", "--cli-repeats", "1", "--blocks", "20"]),
    ("p2", "p2_callback_cost.py", ["--steps", "5000", "--blocks", "100"]),
    ("p3", "p3_sync_rate.py", ["--blocks", "100", "--seconds", "1"]),
    ("p4", "p4_stop_latency.py", ["--trials", "4", "--blocks", "100"]),
    ("p5", "p5_main_thread.py", ["--blocks", "100", "--large", "1200", "--idle-s", "0.5"]),
    ("p6", "p6_memory.py", ["--steps", "50000", "--sizes", "1000", "3000"]),
    ("p7", "p7_frontend.py", ["--updates", "10"]),
    ("p7-10000", "p7_frontend.py --instances 10000 --changed 200", ["--updates", "5"]),
    ("p8", "p8_default_runner.py", ["--repeats", "1", "--trials", "2", "--blocks", "200", *QUICK_P8]),
    ("p9", "p9_serve.py", ["--blocks", "50", "--builds", "1", "--measurements", "1000"]),
    ("p11", "p11_sync_bytes.py", ["--measurements", "200", "--seconds", "2"]),
    ("p10", "p10_matrix.py", ["--blocks", "10", "--repeats", "1", "--no-ray"]),  # quick: no Ray start (~20 s)
    ("p12", "p12_kernel_shutdown.py", ["--repeats", "1"]),
    ("p14", "p14_agents.py", ["--builds", "1", "--trials", "2"]),  # trials: the earliest and latest cancel
    ("p13", "p13_matrix_100.py", ["--builds", "20", "--measurements", "100", "--seconds", "2"]),
    ("p15", "p15_watch.py", ["--repeats", "1", "--blocks", "20"]),
    (
        "p16",
        "p16_engine_report.py",
        ["--repeats", "1", "--blocks", "20", "--layers", "1000", "--parses", "1", *QUICK_REC],
    ),
    ("p16-view", "p16_engine_view.py", ["--layers", "1000", "--repeats", "2", *QUICK_REC]),
    ("p17", "p17_reuse.py", ["--repeats", "1", "--hash-mib", "64"]),
]
KEPT_OUT_OF_DIRTY = [":!bench/results*", ":!docs/performance.md"]
NEEDS_JS = {"p7", "p7-10000", "p16-view"}  # scripts that load js/dist/bench.js


_PRINT = threading.Lock()


def run_script(
    name: str, args: list[str], timeout: float, echo: bool = True
) -> tuple[dict[str, Any] | None, str, float]:
    """Run one script, echoing its output as it comes (``echo``) or as one block at its end (scripts run side by
    side); returns (its BENCH_JSON record or None, error text, seconds)."""
    start = time.perf_counter()
    header = f"\n=== {name} {' '.join(args)}"
    if echo:
        print(header, flush=True)
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
    timer = threading.Timer(timeout, proc.kill)  # reading stdout blocks: a hung script is killed from here
    timer.daemon = True
    timer.start()
    try:
        for line in proc.stdout:
            if line.startswith(JSON_PREFIX):
                record = json.loads(line[len(JSON_PREFIX) :])
                continue
            lines.append(line)
            if echo:
                print(line, end="", flush=True)
        proc.wait()
    finally:
        timer.cancel()
    if not echo:
        with _PRINT:
            print(header + "\n" + "".join(lines), end="", flush=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0 and seconds >= timeout:
        return None, f"timed out after {timeout:g} s", seconds
    error = "" if proc.returncode == 0 and record else f"exit {proc.returncode}: {''.join(lines[-5:]).strip()}"
    return record, error, seconds


def build_js_bench() -> str:
    """Build js/dist/bench.js from js/src (esbuild, ~1 s); returns an error text, or "" when built."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed: it builds js/dist/bench.js (Node >= 20, then `cd js && npm ci`)"
    try:
        done = subprocess.run(
            [node, "build.mjs", "--bench"], cwd=HERE.parent / "js", capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"building js/dist/bench.js failed: {exc}"
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip()[-500:]
        return f"building js/dist/bench.js failed (exit {done.returncode}): {said}"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller builds, fewer repeats (a smoke run)")
    parser.add_argument("--only", nargs="*", default=None, help="ids to run, e.g. p1 p7")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per script (900; --quick: 180)")
    parser.add_argument("--out", type=Path, default=None, help="the results file (default bench/results*.json)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="scripts run side by side (a smoke run's speed; figures need 1)"
    )
    args = parser.parse_args()
    timeout = args.timeout if args.timeout is not None else (180.0 if args.quick else 900.0)
    selected = [s for s in SCRIPTS if not args.only or s[0] in [o.lower() for o in args.only]]
    js_error = build_js_bench() if any(key in NEEDS_JS for key, _, _ in selected) else ""

    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    load_start = load_avg()
    figures: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}

    def one(entry: tuple[str, str, list[str]]) -> tuple[dict[str, Any] | None, str, float]:
        key, script, quick_args = entry
        if key in NEEDS_JS and js_error:
            return None, js_error, 0.0
        return run_script(script, quick_args if args.quick else [], timeout, echo=args.jobs <= 1)

    with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
        outcomes = list(pool.map(one, selected))
    for (key, script, _), (record, error, seconds) in zip(selected, outcomes, strict=True):
        if record and not error:
            missing = [k for k, f in record.get("figures", {}).items() if f.get("value") is None]
            if not record.get("figures") or missing:
                error = f"no value for {', '.join(missing) or 'any figure'}"
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
    for key in ordered(figures):
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
    if args.out is not None:
        out = args.out.resolve()
    dirty = subprocess.run(  # what was measured differs from the commit named (results files aside)
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *KEPT_OUT_OF_DIRTY],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
    ).stdout.strip()
    results = {
        "started": started,
        "commit": commit,
        "dirty": bool(dirty),
        "quick": args.quick,
        "command": " ".join(["python", "bench/run_all.py", *sys.argv[1:]]),
        "machine": machine(),
        "load_avg_start": load_start,
        "load_avg_end": load_avg(),
        "runs": runs,
        "figures": figures,
    }
    out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    # the page: beside a quick or partial results file; a full run's is the docs page (bench/report.py renders it)
    page = PAGE if out == HERE / "results.json" else out.with_suffix(".md")
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render(json.loads(out.read_text()), "bench/results.json" if page == PAGE else out.name))
    print(f"wrote {out} and {page}")
    crashed = [k for k, r in runs.items() if r["error"]]
    if crashed:
        print(f"!!! {len(crashed)} script(s) did not run to the end: {', '.join(crashed)}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
