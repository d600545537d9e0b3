"""``watch_call(fn, isolation="process")``: fn and its arguments cross to a fresh process by cloudpickle, its
real RTX builds are relayed live, the return value comes back; Stop cancels and the process is ended; what
cannot cross is refused at once with a clear message."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fixture_types import WaitUntil
from user_scripts import tensorrt_builds

from trt_widget import BuildCancelled
from trt_widget.models import deep_residual, to_bytes
from trt_widget.watch import ProcessCall, watch_call

from ._unpatched import unpatched


def builds_in_a_process(datas: list[bytes]) -> Any:
    return watch_call(tensorrt_builds(), datas, isolation="process")


def test_the_functions_value_comes_back_and_its_builds_were_shown() -> None:
    call = builds_in_a_process([to_bytes(deep_residual(2)), to_bytes(deep_residual(3))])
    assert isinstance(call, ProcessCall)
    sizes = call.result(180)
    assert isinstance(sizes, list) and len(sizes) == 2 and all(isinstance(s, int) and s > 0 for s in sizes)
    assert [b.status for b in call.builds] == ["succeeded", "succeeded"]
    assert [b.engine_size for b in call.builds] == sizes
    assert call.returncode == 0 and unpatched()


def test_stop_cancels_the_build_and_ends_the_process(long_model_bytes: bytes, wait_until: WaitUntil) -> None:
    call = builds_in_a_process([long_model_bytes, long_model_bytes])
    wait_until(lambda: call.builds and call.builds[0].model.innermost_running(), what="a running phase")
    call.stop()
    with pytest.raises(BuildCancelled):
        call.result(60)
    assert call.builds[0].status == "cancelled" and len(call.builds) == 1


def test_what_cannot_cross_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="cannot be sent to a builder process"):
        watch_call(lambda lock: None, threading.Lock(), isolation="process")
    with pytest.raises(ValueError, match="isolation must be"):
        watch_call(print, isolation="ray")


def test_build_widget_watch_in_a_process_shows_what_the_function_prints_in_its_widget(wait_until: WaitUntil) -> None:
    """The seventh newcomer trial: a command's (here: the function's process's) output went to the kernel's
    stdout, under whichever cell ran when it arrived; it is the widget's, as with ``BuildWidget.run``."""
    from trt_widget import BuildWidget

    def chatty(n: int) -> int:  # nested: cloudpickle sends it by value (the process cannot import this module)
        import sys

        print(f"printed in the function's process: {n}", flush=True)
        print("and on its stderr", file=sys.stderr, flush=True)
        return n + 1

    widget = BuildWidget.watch(chatty, 41, isolation="process")
    assert widget.result(120) == 42
    wait_until(lambda: "and on its stderr" in widget.output and "41" in widget.output, what="the output")
    assert "printed in the function's process: 41" in widget.output.split("\n")
    widget.close()
