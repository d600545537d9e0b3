"""TensorRT log lines reach the build they belong to. NVIDIA TensorRT logs from internal threads too (on a CPU,
TensorRT for RTX logs every line on the builder thread): the calls below from a thread that is no build's
thread reproduce exactly that difference, through the process's real router."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from trt_widget import models
from trt_widget._engine import CaptureLogger, routed_logs
from trt_widget._monitor import BuildMonitor


def _on_thread(fn: Callable[[], Any]) -> None:
    """Run ``fn`` on a new thread, as TensorRT's internal threads call the logger."""
    thread = threading.Thread(target=fn)
    thread.start()
    thread.join(10)


def _builder(logger: CaptureLogger, ready: threading.Event, release: threading.Event, out: dict[str, Any]) -> None:
    with routed_logs(logger) as router:
        out["router"] = router
        router.log(2, f"own thread line {id(logger)}")
        ready.set()
        release.wait(10)


def _two_builds() -> tuple[list[CaptureLogger], Any, threading.Event, list[threading.Thread]]:
    loggers = [CaptureLogger(), CaptureLogger()]
    readies = [threading.Event(), threading.Event()]
    release = threading.Event()
    out: dict[str, Any] = {}
    pairs = zip(loggers, readies, strict=True)
    threads = [threading.Thread(target=_builder, args=(lg, r, release, out)) for lg, r in pairs]
    for t in threads:
        t.start()
    for r in readies:
        assert r.wait(10)
    return loggers, out["router"], release, threads


def _messages(logger: CaptureLogger) -> list[str]:
    return [r["message"] for r in logger.records]


def test_a_line_from_an_unknown_thread_reaches_no_build_while_two_run() -> None:
    loggers, router, release, threads = _two_builds()
    before = router.unattributed_count
    _on_thread(lambda: router.log(1, "internal thread error"))
    release.set()
    for t in threads:
        t.join(10)
    for lg in loggers:
        assert _messages(lg) == [f"own thread line {id(lg)}"]  # each build's own line only
    assert router.unattributed_count == before + 1 and router.unattributed[-1] == (1, "internal thread error")


def test_a_thread_that_reported_progress_for_a_build_logs_to_that_build() -> None:
    loggers, router, release, threads = _two_builds()
    monitor = BuildMonitor()
    monitor.on_thread = lambda ident: router.claim(ident, loggers[1])  # as build_engine wires it

    def internal_thread() -> None:
        monitor.phase_start("Timing tactics", None, 1)  # TensorRT calls the monitor from this thread ...
        router.log(2, "tactic warning")  # ... and logs from it

    _on_thread(internal_thread)
    release.set()
    for t in threads:
        t.join(10)
    assert _messages(loggers[0]) == [f"own thread line {id(loggers[0])}"]
    assert _messages(loggers[1]) == [f"own thread line {id(loggers[1])}", "tactic warning"]
    assert all(v is not loggers[1] for v in router.claimed.values())  # forgotten when that build ended


def test_with_one_build_running_every_line_is_its() -> None:
    logger = CaptureLogger()
    with routed_logs(logger) as router:
        _on_thread(lambda: router.log(2, "from an internal thread"))
    assert _messages(logger) == ["from an internal thread"]


def test_a_real_build_claims_the_threads_its_monitor_is_called_on() -> None:
    from trt_widget import Build

    build = Build(models.deep_residual(1), isolation="thread", history=False).start()
    assert build.wait(180) == "succeeded", build.error
    threads = {row.get("thread") for row in build.model.rows()}
    assert threads  # RTX calls the monitor on the builder thread; the claim is then a no-op (no stale entries)
    with routed_logs(CaptureLogger()) as router:
        assert router.claimed == {}
