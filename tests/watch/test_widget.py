"""``BuildWidget.watch(fn)``: a function building two engines (real RTX builds) shown as a list drawn by the
matrix view; Stop from the browser message cancels the running build; the Future gives fn's outcome."""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

import pytest
from fixture_types import RunAsync, WaitUntil
from user_scripts import tensorrt_builds

import trt_widget
from trt_widget import BuildCancelled, BuildWidget
from trt_widget.models import deep_residual, to_bytes

from ._unpatched import unpatched

trt: Any = trt_widget.trt


def build(data: bytes) -> int:
    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse(data)
    engine = builder.build_serialized_network(network, builder.create_builder_config())
    return int(engine.nbytes)


def two_engines(a: bytes, b: bytes) -> tuple[int, int]:
    return build(a), build(b)


def test_a_function_building_two_engines_is_a_list_of_two_builds(wait_until: WaitUntil) -> None:
    widget = BuildWidget.watch(
        two_engines, to_bytes(deep_residual(2)), to_bytes(deep_residual(3)), watch_settings={"keep_engines": True}
    )
    sizes = widget.result(180)
    assert isinstance(sizes, tuple) and all(size > 0 for size in sizes) and unpatched()
    assert [len(b.engine or b"") for b in widget.builds] == list(sizes)  # the watch's option, not two_engines' keyword
    wait_until(lambda: "the function returned" in widget.note, what="the final note")
    rows = json.loads(widget.rows_json)
    assert [r["status"] for r in rows] == ["succeeded", "succeeded"]
    assert [r["engine_size"] for r in rows] == list(sizes)
    assert rows[0]["model"].startswith("Unnamed Network #") and " · 6 layers" in rows[0]["model"]
    assert rows[0]["model"] != rows[1]["model"]  # two unnamed networks, told apart
    assert rows[1]["variant"] == "build_serialized_network"
    assert widget.variant_label == "call"  # issue 39 (fifth trial, I): the column holds the call, not a variant
    assert widget.title == "Watching two_engines() — 2 builds" and widget.stop_buttons is False
    widget.expand(1)
    wait_until(lambda: "1" in json.loads(widget.details_json), what="the expanded build's tree")
    assert json.loads(widget.details_json)["1"]["status"] == "succeeded"
    assert [len(t["phases"]) > 0 for t in widget.timings()] == [True, True]
    widget.close()


def test_stop_all_from_the_browser_cancels_the_running_build_and_says_what_it_waits_for(
    long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    widget = BuildWidget.watch(two_engines, long_model_bytes, long_model_bytes)
    wait_until(lambda: widget.builds and widget.builds[0].model.innermost_running(), what="a running phase")
    assert widget.stop_buttons is True and "graceful" in widget.note
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])  # what a click on "Stop all" sends
    # the notice, shown until the build ends (which may come before the next send: read where it is kept)
    assert widget._notice.startswith("Stopping: waits for the current step of"), widget._notice
    with pytest.raises(BuildCancelled):
        widget.result(180)
    assert [b.status for b in widget.builds] == ["cancelled"]  # the second build never started
    wait_until(lambda: "raised BuildCancelled" in widget.note, what="the final note")
    assert "Stopping" not in widget.note  # the build has ended: the notice of what Stop waits for is gone
    widget.close()


def _in_a_process(long_model_bytes: bytes) -> Any:
    return BuildWidget.watch(tensorrt_builds(), [long_model_bytes, long_model_bytes], isolation="process")


def test_stop_all_of_a_function_in_a_process_says_stop_not_ctrl_c(
    long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    """Issue 39: a click on "Stop all" read "interrupted (Ctrl-C)" in the row and the error, the notice called the
    function "the command", and the "Stopping: ..." notice stayed after the build had ended."""
    widget = _in_a_process(long_model_bytes)
    wait_until(lambda: widget.builds and widget.builds[0].model.innermost_running(), what="a running phase")
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])  # what a click on "Stop all" sends
    notice = widget._notice  # shown until the build ends (which may come before the next send)
    assert notice.startswith("Stopping: waits for") and "the function" in notice and "command" not in notice, notice
    with pytest.raises(BuildCancelled) as raised:
        widget.result(60)
    assert "Stop all" in str(raised.value) and "Ctrl-C" not in str(raised.value), raised.value
    assert [b.status for b in widget.builds] == ["cancelled"]
    wait_until(lambda: "raised BuildCancelled" in widget.note, what="the final note")
    row = json.loads(widget.rows_json)[0]
    assert "stopped by user (Stop all)" in row["detail"] and "Ctrl-C" not in row["detail"], row
    assert "Stopping" not in widget.note and "Ctrl-C" not in widget.note, widget.note
    widget.close()


def test_await_of_a_stopped_watch_raises_build_cancelled_and_its_future_is_a_future(
    long_model_bytes: bytes, wait_until: WaitUntil, run_async: RunAsync
) -> None:
    widget = BuildWidget.watch(two_engines, long_model_bytes, long_model_bytes)
    assert isinstance(widget.future, concurrent.futures.Future)
    wait_until(lambda: widget.builds and widget.builds[0].model.innermost_running(), what="a running phase")
    widget.stop()

    async def await_it() -> Any:
        return await widget

    with pytest.raises(BuildCancelled):
        run_async(await_it())
    done, _ = concurrent.futures.wait([widget.future, *widget.builds], timeout=180)
    assert done == {widget.future, *widget.builds} and widget.builds[0].cancelled()
    widget.close()


def test_await_of_a_watch_gives_the_functions_value_and_each_caught_build_is_a_future(run_async: RunAsync) -> None:
    widget = BuildWidget.watch(two_engines, to_bytes(deep_residual(2)), to_bytes(deep_residual(3)))

    async def await_it() -> Any:
        value = await widget
        return value, [await b.wait_async() for b in widget.builds]

    sizes, statuses = run_async(await_it())
    assert all(size > 0 for size in sizes) and statuses == ["succeeded", "succeeded"]
    assert list(concurrent.futures.as_completed(widget.builds, timeout=10)) and widget.builds[0].result() == b""
    widget.close()


def test_the_calls_api_on_the_widget_is_the_calls(run_async: RunAsync) -> None:
    """WatchWidget is a view of its WatchedCall: result, exception, done, await, future, builds and timings are the
    call's own; a ``with`` block's widget has builds and timings but no function result."""
    from trt_widget.watch import Watch, WatchedCall, WatchWidget

    widget = BuildWidget.watch(two_engines, to_bytes(deep_residual(2)), to_bytes(deep_residual(3)))
    call = widget.call
    assert isinstance(call, WatchedCall)

    async def awaited() -> object:
        return await widget

    sizes = run_async(awaited())
    assert sizes == widget.result(0) == call.result(0) and widget.done() and widget.exception() is None
    assert widget.future is call.future and widget.builds == call.builds and len(widget.builds) == 2
    assert widget.timings() == call.timings() and unpatched()
    widget.close()
    with Watch(display=False) as block:
        shown = WatchWidget(block)
        assert shown.builds == block.builds == [] and shown.timings() == []
        with pytest.raises(RuntimeError, match="no function result"):
            shown.result()
        shown.close()


@pytest.mark.rtx_long_step
def test_while_stopping_the_list_says_what_stop_waits_for_once(long_model_bytes: bytes, wait_until: WaitUntil) -> None:
    """Issue 39 (fourth trial): while stopping, the note said "Stopping: waits for …" and, beside it, what a Stop
    does ("Stop: graceful — … next step boundary …"), and an expanded row's header said it a third time."""
    widget = BuildWidget.watch(two_engines, long_model_bytes, long_model_bytes)
    wait_until(
        lambda: (
            widget.builds
            and (p := widget.builds[0].model.innermost_running()) is not None
            and p.name == "Determining refit engines"
        ),
        timeout=120,
        what="the long step (no step boundary for seconds)",
    )
    widget._on_custom_msg(widget, {"type": "stop_all"}, [])
    note = widget.state()["note"]
    widget.expand(0)
    expanded_note = widget.state()["note"]
    if widget.builds[0].status == "cancelling":  # still inside that step: both notes were read while stopping
        assert note.startswith("Stopping: waits for") and "Stop: graceful" not in note, note
        assert note.count("step boundar") == 1, note
        assert "Stopping" not in expanded_note and "Stop: graceful" not in expanded_note, expanded_note
    with pytest.raises(BuildCancelled):
        widget.result(180)
    widget.close()
