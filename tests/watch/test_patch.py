"""The patch: user-style builder code (TensorRT for RTX, real builds) seen by a watch, the code's own monitor
chained and restored, cancels, nesting, concurrency, threads the code starts, and no patch left behind."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fixture_types import WaitUntil

import trt_widget
from trt_widget import BuildCancelled
from trt_widget._build import FRAME_PHASES
from trt_widget.models import deep_residual, to_bytes
from trt_widget.watch import METHODS, Watch, WatchedBuild, is_patched, watch, watch_call

from ._unpatched import PARSER_ORIGINALS, TRUE_ORIGINALS, left_behind, unpatched

trt: Any = trt_widget.trt
SMALL = to_bytes(deep_residual(2))
OTHER = to_bytes(deep_residual(3))


def make(data: bytes = SMALL) -> tuple[Any, Any, Any]:
    """What user code does: a builder, a parsed network, a config."""
    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse(data)
    make.keep = (logger, parser)  # type: ignore[attr-defined]  # the parser must outlive the build
    return builder, network, builder.create_builder_config()


def user_build(data: bytes = SMALL) -> Any:
    builder, network, config = make(data)
    return builder.build_serialized_network(network, config)


class Recorder(trt.IProgressMonitor):  # type: ignore[misc]
    """The code's own monitor: records every callback; cancels at step ``cancel_at`` of any phase if set."""

    def __init__(self, cancel_at: int | None = None, raise_in_step: bool = False) -> None:
        trt.IProgressMonitor.__init__(self)
        self.calls: list[tuple[str, str]] = []
        self.cancel_at = cancel_at
        self.raise_in_step = raise_in_step

    def phase_start(self, name: str, parent: str | None, num_steps: int) -> None:
        self.calls.append(("start", name))

    def step_complete(self, name: str, step: int) -> bool:
        self.calls.append(("step", name))
        if self.raise_in_step:
            raise ValueError("the code's monitor failed")
        return self.cancel_at is None or step < self.cancel_at

    def phase_finish(self, name: str) -> None:
        self.calls.append(("finish", name))


def test_a_build_in_user_code_is_seen_and_returns_what_tensorrt_returns() -> None:
    assert unpatched()
    with watch() as w:
        assert is_patched()
        engine = user_build()
    assert unpatched()
    assert type(engine).__name__ == "IHostMemory" and engine.nbytes > 0
    (build,) = w.builds
    assert build.status == "succeeded" and build.engine_size == engine.nbytes
    assert build.method == "build_serialized_network"
    assert re.match(r"Unnamed Network #\d+ · 6 layers · input 1x8x8x8", build.source.label), build.source.label
    names = {row["name"] for row in build.timings()}
    assert "Building engine" in names or len(names) > 3
    assert all(row["end_s"] is not None for row in build.timings())


def test_two_builds_in_order_and_builds_outside_are_not_seen() -> None:
    user_build()  # before: not seen (and no watch is open)
    with watch() as w:
        user_build(SMALL)
        user_build(OTHER)
    user_build()
    assert [b.network["layers"] for b in w.builds] == [6, 9]  # deep_residual(2), then (3)
    assert all(b.status == "succeeded" for b in w.builds)
    assert w.builds[0].elapsed_s > 0 and [t["index"] for t in w.timings()] == [0, 1]


def test_watched_builds_of_different_files_are_told_apart_by_their_file(tmp_path: Path) -> None:
    """Issue 39 (fourth trial): every watched build read "Unnamed Network · …". A build of a parsed file is
    labelled by the file; one of an unnamed network from bytes gets a number; a named network keeps its name."""
    (tmp_path / "small.onnx").write_bytes(SMALL)
    (tmp_path / "other.onnx").write_bytes(OTHER)
    with watch() as w:
        logger = trt.Logger(trt.Logger.ERROR)
        for name in ("small.onnx", "other.onnx"):
            builder = trt.Builder(logger)
            network = builder.create_network(0)
            parser = trt.OnnxParser(network, logger)
            assert parser.parse_from_file(str(tmp_path / name))
            builder.build_serialized_network(network, builder.create_builder_config())
        user_build(SMALL)
        user_build(SMALL)
        builder, network, config = make(SMALL)
        network.name = "resnet"
        builder.build_serialized_network(network, config)
    assert unpatched()
    labels = [b.source.label.split(" · ")[0] for b in w.builds]
    assert labels[:2] == ["small.onnx", "other.onnx"] and labels[4] == "resnet", labels
    assert re.fullmatch(r"Unnamed Network #\d+", labels[2]) and len(set(labels)) == 5, labels


def test_builds_on_threads_the_code_starts_are_seen_but_not_those_of_other_threads() -> None:
    outside_done = threading.Event()
    release = threading.Event()

    def unrelated() -> None:  # started before the watch: not the watched code's
        release.wait(60)
        user_build()
        outside_done.set()

    other = threading.Thread(target=unrelated)
    other.start()
    before = set(threading.enumerate())  # other tests' threads (servers that serve on) are not this test's
    with watch() as w:
        thread = threading.Thread(target=user_build)
        thread.start()
        thread.join()

        def start_a_thread_and_build() -> None:
            threading.Thread(target=user_build).start()
            user_build()

        with ThreadPoolExecutor(2) as pool:
            pool.submit(start_a_thread_and_build).result()
        release.set()
        assert outside_done.wait(120)
        for t in set(threading.enumerate()) - before:
            if t.name.startswith("Thread-"):
                t.join(120)
    other.join()
    assert len(w.builds) == 3  # the thread, the pool worker, and the thread the pool worker started
    assert unpatched()


def test_the_codes_own_monitor_sees_every_callback_and_is_restored() -> None:
    builder, network, config = make()
    theirs = Recorder()
    config.progress_monitor = theirs
    with watch() as w:
        engine = builder.build_serialized_network(network, config)
    assert engine is not None and config.progress_monitor is theirs
    starts = [name for kind, name in theirs.calls if kind == "start"]
    rows = [r for r in w.builds[0].timings() if r["name"] not in FRAME_PHASES]  # TensorRT's own phases
    assert starts == [row["name"] for row in sorted(rows, key=lambda r: r["id"])]
    assert sum(kind == "step" for kind, _ in theirs.calls) == sum(row["step"] or 0 for row in rows)
    assert len([c for c in theirs.calls if c[0] == "finish"]) == len(starts)


def test_the_codes_own_monitor_can_cancel_and_then_the_call_returns_none_as_tensorrt_does() -> None:
    builder, network, config = make()
    config.progress_monitor = Recorder(cancel_at=0)
    with watch() as w:
        assert builder.build_serialized_network(network, config) is None
    (build,) = w.builds
    assert build.status == "cancelled" and "own progress monitor" in build.status_detail


def test_an_exception_in_the_codes_step_complete_cancels_as_tensorrt_does_and_escapes_nowhere() -> None:
    builder, network, config = make()
    config.progress_monitor = Recorder(raise_in_step=True)
    with watch() as w:
        assert builder.build_serialized_network(network, config) is None
    assert w.builds[0].status == "cancelled"
    monitor = w.builds[0].monitor
    assert monitor is not None and any("the code's monitor failed" in e for e in monitor.errors)


def test_stop_cancels_at_the_next_step_and_the_call_raises_build_cancelled(
    long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    call = watch_call(user_build, long_model_bytes)
    wait_until(lambda: call.builds and call.builds[0].model.innermost_running())
    build = call.builds[0]
    notice = call.stop()
    assert notice.startswith("Stopping: waits for the current step of")
    with pytest.raises(BuildCancelled, match="cancelled"):
        call.result(180)
    assert build.status == "cancelled" and build.cancel_info is not None and build.cancel_info["phase"]
    assert unpatched()


def test_a_stopped_watch_cancels_a_later_build_at_its_first_step() -> None:
    def two() -> None:
        with contextlib.suppress(BuildCancelled):
            user_build()
        user_build(OTHER)

    w = Watch()
    w.stop("stopped before it began")
    with w, pytest.raises(BuildCancelled, match="stopped before it began"):
        two()
    assert [b.status for b in w.builds] == ["cancelled", "cancelled"]


def test_an_exception_in_user_code_after_a_build_is_the_calls_exception() -> None:
    def fails() -> None:
        user_build()
        raise LookupError("after the build")

    call = watch_call(fails)
    with pytest.raises(LookupError, match="after the build"):
        call.result(180)
    assert [b.status for b in call.builds] == ["succeeded"] and unpatched()


def test_result_and_await_give_the_functions_value() -> None:
    import asyncio

    call = watch_call(lambda n: [user_build().nbytes > 0 for _ in range(n)], 2)
    assert asyncio.run(_awaited(call)) == [True, True]
    assert len(call.timings()) == 2 and all(t["phases"] for t in call.timings())


async def _awaited(call: Any) -> Any:
    return await call


def test_nested_watches_both_see_the_inner_build_and_the_patch_lasts_until_the_outer_ends() -> None:
    with watch() as outer:
        with watch() as inner:
            user_build()
        assert is_patched()
        user_build(OTHER)
    assert unpatched()
    assert len(inner.builds) == 1 and len(outer.builds) == 2 and outer.builds[0] is inner.builds[0]


def test_concurrent_watches_each_see_only_their_own_builds() -> None:
    barrier = threading.Barrier(2)

    def work(data: bytes, n: int) -> int:
        barrier.wait(60)
        for _ in range(n):
            user_build(data)
        return n

    a, b = watch_call(work, SMALL, 1), watch_call(work, OTHER, 2)
    assert (a.result(180), b.result(180)) == (1, 2)
    assert [x.network["layers"] for x in a.builds if isinstance(x, WatchedBuild)] == [6]
    assert [x.network["layers"] for x in b.builds if isinstance(x, WatchedBuild)] == [9, 9]
    assert unpatched()


def test_an_exception_in_the_block_still_unpatches() -> None:
    with pytest.raises(ZeroDivisionError), watch():
        user_build()
        _ = 1 / 0
    assert unpatched()


def test_trt_widgets_own_thread_build_inside_a_watch_is_not_caught_twice() -> None:
    with watch() as w:
        own = trt_widget.Build(SMALL, isolation="thread", history=False, resources=False).start()
        assert own.wait(180) == "succeeded"
    assert w.builds == []


def test_torch_tensorrt_call_shapes_keyword_arguments_and_the_stream_method() -> None:
    with watch() as w:
        builder, network, config = make()
        assert builder.build_serialized_network(network=network, config=config) is not None
        assert "build_serialized_network_to_stream" in METHODS
        if hasattr(trt, "IStreamWriter"):

            class Sink(trt.IStreamWriter):  # type: ignore[misc]
                def __init__(self) -> None:
                    trt.IStreamWriter.__init__(self)
                    self.data = bytearray()

                def write(self, data: Any) -> int:
                    self.data += bytes(data)
                    return len(data)

            builder, network, config = make()
            sink = Sink()
            assert builder.build_serialized_network_to_stream(network, config, sink)
            assert len(sink.data) > 0
    assert [b.status for b in w.builds] == ["succeeded"] * len(w.builds)
    assert [b.method for b in w.builds][:1] == ["build_serialized_network"]
    if hasattr(trt, "IStreamWriter"):
        assert w.builds[1].method == "build_serialized_network_to_stream" and w.builds[1].engine_size is None


def test_history_key_comes_from_the_network_and_events_are_written(tmp_path: Path, wait_until: WaitUntil) -> None:
    events = tmp_path / "events.jsonl"
    store = tmp_path / "history.sqlite"
    with watch(events=str(events), history=str(store)) as w:
        user_build(SMALL)
        user_build(SMALL)
        user_build(OTHER)
    links = [b.history for b in w.builds]
    keys = [link.key for link in links if link is not None]
    assert len(keys) == len(links) and keys[0] == keys[1] != keys[2]
    wait_until(lambda: events.read_text().count('"build_end"') == 3, what="three build_end events")
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert {e["event"] for e in lines} >= {"build_start", "phase_start", "phase_finish", "build_end"}
    wait_until(lambda: len(trt_widget.history.list_builds(str(store))) == 3, what="three history records")


def test_watch_settings_reach_the_watch_and_every_other_keyword_reaches_the_function(
    tmp_path: Path, wait_until: WaitUntil
) -> None:
    events = tmp_path / "events.jsonl"

    def fn(data: bytes, *, events: str) -> tuple[int, str]:  # a keyword of its own named like a watch option
        return user_build(data).nbytes, events

    call = watch_call(fn, SMALL, events="fn's own", watch_settings={"events": str(events), "history": False})
    result = call.result(180)
    assert isinstance(result, tuple)
    size, own = result
    assert own == "fn's own" and call.builds[0].history is None
    wait_until(lambda: events.exists() and '"build_end"' in events.read_text(), what="the build_end event")
    end = json.loads(events.read_text().splitlines()[-1])
    assert end["event"] == "build_end" and end["status"] == "succeeded" and end["engine_bytes"] == size
    with pytest.raises(TypeError, match="unknown watch setting 'interrupt'"):
        watch_call(fn, watch_settings={"interrupt": False})
    with pytest.raises(ValueError, match="isolation='thread' only"):
        watch_call(fn, isolation="process", watch_settings={"budget": 5})


def test_keep_engines_copies_the_serialized_engine() -> None:
    with watch(keep_engines=True, history=False) as w:
        engine = user_build()
    assert w.builds[0].engine == bytes(memoryview(engine))


def test_an_engine_object_result_counts_as_built_without_a_size() -> None:
    """NVIDIA TensorRT's build_engine_with_config (torch-TensorRT's GPU path; not in TensorRT for RTX) returns
    an ICudaEngine, not serialized bytes: the only API difference this reproduces."""
    from trt_widget.watch._build import _result_of

    class ICudaEngine:  # no nbytes
        pass

    assert _result_of("build_engine_with_config", ICudaEngine()) == (True, None)
    assert _result_of("build_engine_with_config", None) == (False, None)
    assert _result_of("build_serialized_network_to_stream", False) == (False, None)


def test_a_watch_that_cannot_set_up_lets_the_build_run_unwatched(monkeypatch: pytest.MonkeyPatch) -> None:
    from trt_widget.watch import _build

    def broken(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("no history today")

    monkeypatch.setattr(_build, "network_info", broken)
    with watch() as w:
        engine = user_build()
    assert engine is not None and w.builds == [] and unpatched()


def test_the_no_patch_left_behind_check_sees_a_wrapper_the_bookkeeping_forgot(monkeypatch: pytest.MonkeyPatch) -> None:
    """A close that forgets the patch's bookkeeping but leaves the Builder wrappers in place is caught: the check
    compares with the methods recorded at import, not with what the class holds after the close."""
    from trt_widget.watch import _patch

    def leaky() -> None:  # restores Thread.start, leaves the Builder methods wrapped
        original = _patch._thread_start
        assert original is not None
        threading.Thread.start = original  # type: ignore[method-assign]
        _patch._thread_start = None
        _patch._patched.clear()
        _patch._originals.clear()

    monkeypatch.setattr(_patch, "_uninstall", leaky)
    try:
        with watch():
            pass
        assert not is_patched()  # the bookkeeping alone says all is well ...
        assert not unpatched() and "build_serialized_network" in left_behind()  # ... the methods say otherwise
    finally:
        for name, original in TRUE_ORIGINALS.items():
            setattr(trt.Builder, name, original)
        for name, original in PARSER_ORIGINALS.items():  # the leaky close left the parser's wrappers too
            setattr(trt.OnnxParser, name, original)
        _patch._parser_patched.clear()
        _patch._parser_originals.clear()
    assert unpatched()


def test_builds_caught_at_once_share_the_watchs_events_file(tmp_path: Path, wait_until: WaitUntil) -> None:
    """A running build's files are refused to other builds, but a watch's builds all append to its one events
    file: two running at the same time (each waits in its first phase for the other) are both watched."""
    events = tmp_path / "events.jsonl"
    both = threading.Barrier(2, timeout=120)

    class Meet(Recorder):
        def phase_start(self, name: str, parent: str | None, num_steps: int) -> None:
            if not self.calls:
                both.wait()
            super().phase_start(name, parent, num_steps)

    def one() -> Any:
        logger = trt.Logger(trt.Logger.ERROR)  # held here: make() keeps only the last thread's
        builder = trt.Builder(logger)
        network = builder.create_network(0)
        parser = trt.OnnxParser(network, logger)
        assert parser.parse(SMALL)
        config = builder.create_builder_config()
        config.progress_monitor = Meet()
        engine = builder.build_serialized_network(network, config)
        del parser
        return engine

    with watch(events=str(events), history=False) as w, ThreadPoolExecutor(2) as pool:
        engines = [f.result(180) for f in [pool.submit(one), pool.submit(one)]]
    assert all(e is not None and e.nbytes > 0 for e in engines)
    assert len(w.builds) == 2 and [b.status for b in w.builds] == ["succeeded", "succeeded"]
    wait_until(lambda: events.read_text().count('"build_end"') == 2, what="two build_end events")
