"""BuildWidget with real TensorRT for RTX builds: synced final tree, the Stop message path, bounded sync."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fixture_types import RunAsync, WaitUntil

from trt_widget import BuildCancelled, BuildError, BuildWidget, models

SYNCED = sorted(BuildWidget.class_own_traits(sync=True))  # the traits the front end reads, declared in _widget.py


def record_writes(widget: BuildWidget) -> list[tuple[str, Any, int]]:
    """Every synced-trait change as (name, new value, writing thread id)."""
    writes: list[tuple[str, Any, int]] = []
    widget.observe(lambda change: writes.append((change["name"], change["new"], threading.get_ident())), names=SYNCED)
    return writes


def count_messages(widget: BuildWidget) -> list[float]:
    """Times of every state message the widget sends to the front end."""
    sent: list[float] = []
    original = widget.send_state

    def send_state(key: Any = None) -> None:
        sent.append(time.monotonic())
        original(key)

    widget.send_state = send_state
    return sent


def running_phase(widget: BuildWidget) -> str | None:
    phase = widget.build.model.innermost_running()
    return phase.name if phase else None


def test_real_build_ends_with_complete_tree_and_final_status(resnet50_bytes: bytes) -> None:
    widget = BuildWidget(resnet50_bytes, history=False)
    writes = record_writes(widget)
    assert widget.status == "idle" and widget.phases == []
    assert widget.start() is widget
    assert widget.wait(timeout=300) == "succeeded"

    assert widget.status == "succeeded"
    assert widget.engine_size == len(widget.engine or b"") > 0
    timings = widget.timings()
    assert [row["id"] for row in widget.phases] == [row["id"] for row in timings]
    assert all(row["end_s"] is not None and row["status"] != "running" for row in widget.phases)
    assert max(row["depth"] for row in timings) >= 2
    assert widget.elapsed_s > 0 and widget.error == ""
    # the synced text is exactly the final rows (the phase model's words: an early-closed phase "finished-early",
    # which timings() says as "done" with ended_early, as timings_df() does)
    rows = [
        {k: v for k, v in row.items() if k != "ended_early"}
        | {"status": "finished-early" if row.get("ended_early") else row["status"]}
        for row in json.loads(json.dumps(timings))
    ]
    assert widget.phases == rows
    builder = widget.build._thread
    assert builder is not None
    writers = [thread for _, _, thread in writes]
    assert builder.ident not in writers
    # start() writes "running" on the calling thread before the pump thread exists; from then on the pump alone
    pump = widget._pump.thread.ident
    assert pump is not None
    first_pump = writers.index(pump)
    assert set(writers[:first_pump]) == {threading.get_ident()} and set(writers[first_pump:]) == {pump}
    assert next(value for name, value, _ in writes if name == "status") == "running"
    assert [value for name, value, _ in writes if name == "status"][-1] == "succeeded"


@pytest.mark.rtx_long_step
def test_stop_message_cancels_a_real_long_build(wait_until: WaitUntil) -> None:
    # force_after: the builder process is terminated 5 s after the Stop, not 0.1 s: "cancelling" (and its notice)
    # lasts that long, so the pump sends it even when a loaded runner holds its thread back for a moment
    widget = BuildWidget(models.deep_residual(1000), history=False, force_after=5.0)
    writes = record_writes(widget)
    widget.start()
    # Stop while the long single step runs, so the cancelling state lasts long enough to be seen.
    wait_until(lambda: running_phase(widget) == "Determining refit engines", what="the long step")
    widget._handle_custom_msg({"type": "stop"}, [])  # the path a click on Stop takes
    assert widget.wait(timeout=300) == "cancelled"

    assert widget.engine is None and widget.engine_size == 0
    assert widget.status_detail.startswith("stopped by user")
    assert all(row["status"] != "running" for row in widget.phases)
    assert any(row["status"] == "cancelled" for row in widget.phases)
    cancels = [value for name, value, _ in writes if name == "cancel" and value]
    assert cancels and cancels[0]["phase"] in {row["name"] for row in widget.phases}
    assert "cancelling" in [value for name, value, _ in writes if name == "status"]
    assert widget.get_state("cancel") == {"cancel": None}  # the notice goes away once cancelled
    assert widget.stop() is False  # nothing left to stop


@pytest.mark.deadline  # the storm must end before the real build
def test_sync_rate_stays_bounded_during_a_callback_storm() -> None:
    """A synthetic driver pushes 100k steps/s into the phase model while a real build runs."""
    widget = BuildWidget(models.deep_residual(1000), history=False)  # outlasts the storm
    sent = count_messages(widget)
    widget.start()
    model = widget.build.model
    model.phase_start("Synthetic storm", None, 10**9)
    storm_steps = 0
    begin = time.monotonic()
    while storm_steps < 150_000:  # ~1.5 s at the paced 100k steps/s (longer on a busy machine)
        for _ in range(1000):
            model.step_complete("Synthetic storm", storm_steps)
            storm_steps += 1
        # pace to ~100k steps/s
        ahead = storm_steps / 100_000 - (time.monotonic() - begin)
        if ahead > 0:
            time.sleep(ahead)
    storm_end = time.monotonic()
    model.phase_finish("Synthetic storm")
    assert not widget.build.done(), "the build must outlast the storm for this test to mean anything"
    widget.stop()
    assert widget.wait(timeout=300) in ("succeeded", "cancelled")

    in_storm = [t for t in sent if begin <= t <= storm_end]
    assert len(in_storm) <= (storm_end - begin) * 10 + 3, f"{len(in_storm)} messages in {storm_end - begin:.2f} s"
    assert len(in_storm) >= 3, "updates must keep flowing during the storm"
    storm_row = next(row for row in widget.phases if row["name"] == "Synthetic storm")
    assert storm_row["step"] == storm_steps


@pytest.fixture(scope="module")
def finished(resnet50_bytes: bytes) -> BuildWidget:
    """One finished resnet50 widget for the tests that only read what a build left (none changes it)."""
    widget = BuildWidget(resnet50_bytes, history=False).start()
    assert widget.wait(timeout=300) == "succeeded", widget.error
    widget._pump.join(30)  # its last send made: the synced state is final
    return widget


def test_timings_exports(finished: BuildWidget, resnet50_bytes: bytes) -> None:
    widget = finished
    frame = widget.timings_df()
    assert list(frame.index) == [row["id"] for row in widget.timings()]
    assert {"name", "parent", "depth", "duration_s", "status"} <= set(frame.columns)
    data = json.loads(widget.to_json())
    assert data["status"] == "succeeded" and len(data["timings"]) == len(frame)
    assert repr(widget) == repr(BuildWidget(resnet50_bytes, history=False))
    assert "0x" not in repr(widget)


def test_bad_input_shows_in_widget_and_as_exception(tmp_path: Any) -> None:
    widget = BuildWidget(str(tmp_path / "missing.onnx"), history=False).start()
    assert widget.wait(timeout=60) == "failed"
    assert "ONNX file not found" in widget.error and "missing.onnx" in widget.error
    try:
        widget.result()
    except Exception as exc:
        assert "ONNX file not found" in str(exc)
    else:
        raise AssertionError("result() must raise for a failed build")
    assert BuildWidget(models.deep_residual(4), history=False).start().wait(timeout=300) == "succeeded"


def test_widget_state_is_json_serializable_for_saved_notebooks(finished: BuildWidget) -> None:
    state = finished.get_state()
    json.dumps({k: v for k, v in state.items() if k in SYNCED})
    assert state["status"] == "succeeded" and json.loads(state["phases_json"]) == finished.phases != []


def test_unknown_trait_names_are_not_written() -> None:
    widget = BuildWidget(models.deep_residual(4), history=False)
    assert set(widget._pump.last) <= set(SYNCED)


def test_the_front_end_declares_the_traits_python_syncs() -> None:
    """js/src/build/widget.js's `Traits` typedef names exactly the synced traits of BuildWidget (one list, checked)."""
    source = (Path(__file__).parent.parent / "js" / "src" / "build" / "widget.js").read_text(encoding="utf-8")
    typedef = source[source.index("@typedef {object} Traits") :]
    typedef = typedef[: typedef.index("*/")]
    declared = []
    for start in (m.end() for m in re.finditer(r"@property \{", typedef)):
        depth, i = 1, start
        while depth:  # the type may nest braces: {{phase: string} | null}
            depth += {"{": 1, "}": -1}.get(typedef[i], 0)
            i += 1
        name = re.match(r"\s*(\w+)", typedef[i:])
        assert name, f"a @property without a name in the Traits typedef: {typedef[start:i]}"
        declared.append(name.group(1))
    assert sorted(declared) == SYNCED


def test_rows_encoder_reencodes_only_changed_rows() -> None:
    from trt_widget._phases import PhaseModel
    from trt_widget._snapshot import RowsEncoder

    model = PhaseModel()
    for i in range(3):
        model.phase_start(f"p{i}", None, 5)
    encoder = RowsEncoder()
    first = encoder.encode(model.rows())
    assert json.loads(first) == model.rows()
    texts = list(encoder._texts)
    model.step_complete("p1", 2)
    second = json.loads(encoder.encode(model.rows()))
    assert second[1]["step"] == 3 and second == model.rows()
    assert encoder._texts[0] is texts[0] and encoder._texts[2] is texts[2] and encoder._texts[1] is not texts[1]
    assert json.loads(encoder.encode(model.rows()[:1])) == model.rows()[:1]  # shrinking works too


@pytest.mark.rtx_long_step
def test_elapsed_time_alone_is_not_resent_while_running(wait_until: WaitUntil) -> None:
    widget = BuildWidget(models.deep_residual(1000), history=False)
    writes = record_writes(widget)
    widget.start()
    try:
        wait_until(lambda: running_phase(widget) == "Determining refit engines", what="the long step")
        start = len(writes)  # within one long step nothing but the clock (and resource samples) changes
        wait_until(
            lambda: sum(n == "resources" for n, _, _ in writes[start:]) >= 3,
            what="three pump sends (resource samples at 2 Hz) inside the long step",
        )
        names = [name for name, _, _ in writes[start:]]
        names = names[: len(names) - names[::-1].index("resources")]  # whole sends only
        # elapsed_s goes out only together with real news (here: a resource sample), never alone
        assert all(names[i + 1] != "elapsed_s" for i, name in enumerate(names[:-1]) if name == "elapsed_s"), names
    finally:
        widget.stop()
        widget.wait(timeout=300)


def test_rows_travel_as_deltas_that_rebuild_the_tree_exactly(wait_until: WaitUntil) -> None:
    """A paced GPU-shaped replay: each send carries only the rows that changed; applying the deltas in order to
    the first whole list gives the final rows; the whole list is resent only at the end and when a view asks."""
    from trt_widget.runners import gpu_shaped_events

    widget = BuildWidget.from_events(list(gpu_shaped_events(measurements=300, seconds=3.0)), speed=1.0)
    fulls: list[str] = []
    deltas: list[str] = []
    widget.observe(lambda c: deltas.append(c["new"]), names="phases_delta")
    widget.observe(lambda c: fulls.append(c["new"]), names="phases_json")
    widget.start()
    wait_until(lambda: len(deltas) > 5, what="a few deltas")
    widget._on_custom_msg(widget, {"type": "sync"}, [])  # as a view that missed deltas asks
    wait_until(lambda: len(fulls) >= 1, what="the whole list, sent on request")
    assert widget.wait(60) == "succeeded"
    widget._pump.join(10)
    assert len(fulls) == 2  # on request, and the final one
    rows: dict[int, dict[str, Any]] = {}
    seen = 0
    for text in deltas:
        delta = json.loads(text)
        assert delta["seq"] == seen + 1  # numbered without gaps
        seen = delta["seq"]
        rows.update({r["id"]: r for r in delta["rows"]})
    final = json.loads(fulls[-1])
    assert widget.phases_seq == seen and list(rows.values()) == final == widget.build.model.rows()
    full_bytes = len(fulls[-1])
    sizes = sorted(len(t) for t in deltas)
    assert sizes[len(sizes) // 2] < full_bytes / 10  # a typical update is a small part of the list


def test_awaiting_a_widget_waits_for_the_build_and_its_final_state() -> None:
    widget = BuildWidget(models.deep_residual(20), history=False).start()
    result: list[Any] = []

    def run() -> None:  # a loop of its own: the e2e session may keep one running on this thread
        result.append(asyncio.run(widget.wait_async()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(300)
    assert result == ["succeeded"]
    assert widget.build.done() and widget.status == "succeeded" and widget.engine_size == len(widget.engine or b"")


def test_await_widget_raises_what_result_raises_and_wait_async_gives_the_status(
    wait_until: WaitUntil, run_async: RunAsync
) -> None:
    bad = BuildWidget(b"garbage", history=False).start()

    async def await_it(widget: BuildWidget) -> bytes:
        return await widget

    with pytest.raises(BuildError, match="ONNX"):
        run_async(await_it(bad))
    assert bad.status == "failed"  # the widget shows the final state once the await ends
    long = BuildWidget(models.deep_residual(1000), history=False).start()
    wait_until(lambda: long.build.model.innermost_running() is not None, what="a phase")
    long._on_custom_msg(long, {"type": "stop"}, [])  # a Stop click
    with pytest.raises(BuildCancelled):
        run_async(await_it(long))
    assert run_async(long.wait_async()) == "cancelled" and long.status == "cancelled"  # the notebook idiom
    good = BuildWidget(models.deep_residual(2), history=False).start()
    assert run_async(await_it(good)) == good.engine


def test_a_widgets_future_is_its_build_for_as_completed_and_wrap_future(run_async: RunAsync) -> None:
    widgets = [BuildWidget(models.deep_residual(2), history=False).start(), BuildWidget(b"garbage").start()]
    assert [w.future for w in widgets] == [w.build for w in widgets]
    ended = set(concurrent.futures.as_completed([w.future for w in widgets], timeout=300))
    assert ended == {w.build for w in widgets}

    async def wrapped() -> bytes:
        return await asyncio.wrap_future(widgets[0].future)

    assert run_async(wrapped()) == widgets[0].engine


def test_a_stop_the_kernel_reads_after_a_cancelled_build_is_not_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A click held by an awaited cell on ipykernel 6 reaches the widget after the user interrupted the kernel, which
    cancelled the build: the build did what the click asked, so no "nothing was stopped" notice follows."""
    widget = BuildWidget(models.deep_residual(50), history=False, resources=False, isolation="thread")
    sent: list[Any] = []
    monkeypatch.setattr(widget, "send", lambda content, buffers=None: sent.append(content))
    widget.start()
    assert widget.stop()  # what the interrupt did: the build ends cancelled at its next step
    assert widget.wait(120) == "cancelled"
    widget._handle_custom_msg({"type": "stop"}, [])
    assert [m for m in sent if isinstance(m, dict) and m.get("type") == "stop_outcome"] == []
    assert widget.stop_outcome == ""


def test_a_stop_the_kernel_reads_after_the_build_ended_is_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: a Stop clicked while a blocking ``wait()`` held the kernel reaches the widget only once the thread
    build has succeeded; it is answered (a message to the view, and on the widget), never silently dropped."""
    widget = BuildWidget(models.deep_residual(2), history=False, resources=False, isolation="thread")
    sent: list[Any] = []
    monkeypatch.setattr(widget, "send", lambda content, buffers=None: sent.append(content))
    widget.start()
    assert widget.wait(120) == "succeeded"
    assert widget.stop_outcome == ""
    widget._handle_custom_msg({"type": "stop"}, [])  # the click, read by the kernel when the cell ended
    assert widget.status == "succeeded" and widget.engine  # nothing was stopped
    answers = [m for m in sent if isinstance(m, dict) and m.get("type") == "stop_outcome"]
    assert len(answers) == 1, sent
    text = answers[0]["text"]
    assert text.startswith("Stop arrived after the build had finished (succeeded in "), text
    assert "nothing was stopped; the engine is kept" in text and "wait_async()" in text
    assert widget.stop_outcome == text
