"""The widget's state and its pump, without TensorRT: ``snapshot(build)``, ``RowsEncoder`` and ``SnapshotPump``
(what it sends, when, and how the phase rows travel) over a stand-in build with a fake clock. Fast: the
mutation check (scripts/mutate.py) runs these for every mutant of trt_widget/_snapshot.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest
from fixture_types import WaitUntil

from trt_widget import BuildWidget, _snapshot
from trt_widget._phases import PhaseModel
from trt_widget._snapshot import MAX_LOGS, RowsEncoder, SnapshotPump, snapshot
from trt_widget._verbose import TacticWatch

if TYPE_CHECKING:
    from trt_widget import Build


class FakeLogger:
    def __init__(self) -> None:
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self.tactics = TacticWatch()  # as CaptureLogger's: nothing timed

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)


class Extra:
    """A history or resources stand-in: ``method()`` returns ``value`` (or raises it, if an exception)."""

    def __init__(self, **methods: Any) -> None:
        for name, value in methods.items():
            setattr(self, name, self._returning(value))

    @staticmethod
    def _returning(value: Any) -> Callable[[], Any]:
        def method() -> Any:
            if isinstance(value, Exception):
                raise value
            return value

        return method


class FakeBuild:
    """What snapshot() and the pump read of a Build, settable by the test; time is ``self.now``."""

    def __init__(self, status: str = "running") -> None:
        self.now = 0.0
        self.model = PhaseModel(clock=lambda: self.now)
        self.status = status
        self.status_detail = ""
        self.elapsed_s = 0.0
        self.started_building = status != "queued"
        self.engine_size: int | None = None
        self.error: Exception | None = None
        self.problems: list[dict[str, Any]] = []
        self.cancel_info: dict[str, Any] | None = None
        self.options = SimpleNamespace(isolation="process", verbose=False)
        self.history: Any = None
        self.resources: Any = None
        self.logger = FakeLogger()
        self._ended = threading.Event()
        self._on_done: list[Callable[[Any], None]] = []

    def done(self) -> bool:
        return self._ended.is_set()

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        self._on_done.append(fn)

    def on_start(self, fn: Callable[[Any], None]) -> None:
        pass

    def end(self, status: str) -> None:
        self.status = status
        self._ended.set()
        for fn in self._on_done:
            fn(self)


def stand_in(fake: FakeBuild) -> Build:
    """``fake`` as the Build that snapshot() and the pump take: they read only what FakeBuild has."""
    return cast("Build", fake)


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


# -- snapshot() ------------------------------------------------------------------------------------------------
def test_snapshot_of_a_running_build() -> None:
    build = FakeBuild()
    build.model.phase_start("Building engine", None, 3)
    build.elapsed_s = 1.234567
    build.status_detail = "busy"
    build.model.last_event_s = 0.5
    build.error = RuntimeError("not shown while running")
    state = snapshot(stand_in(build))
    assert state["status"] == "running" and state["status_detail"] == "busy"
    assert state["elapsed_s"] == 1.2346  # rounded to 0.1 ms
    assert state["phases"] == build.model.rows()
    assert state["engine_size"] == 0 and state["error"] == "" and state["cancel"] is None
    assert state["can_force"] is True
    assert state["activity"] == {"last_callback_s": 0.5, "timing": None}  # no autotuner line seen
    assert state["eta"] is None and state["history_delta"] is None and state["resources"] is None
    build.status = "cancelling"
    assert snapshot(stand_in(build))["activity"] == {"last_callback_s": 0.5, "timing": None}


def test_snapshot_of_ended_builds() -> None:
    build = FakeBuild("failed")
    build.error = RuntimeError("boom")
    build.engine_size = 1234
    state = snapshot(stand_in(build))
    assert state["error"] == "boom" and state["engine_size"] == 1234 and state["activity"] is None
    build.status = "succeeded"
    assert snapshot(stand_in(build))["error"] == ""  # an error object is shown only for a failed build
    build.error = None
    build.status = "failed"
    assert snapshot(stand_in(build))["error"] == ""
    build.options.isolation = "thread"
    assert snapshot(stand_in(build))["can_force"] is False


def test_cancel_info_is_shown_only_while_cancelling() -> None:
    build = FakeBuild("cancelling")
    build.cancel_info = {"phase": "Building engine", "requested_at_s": 1.0}
    assert snapshot(stand_in(build))["cancel"] == build.cancel_info
    build.status = "cancelled"
    assert snapshot(stand_in(build))["cancel"] is None


def test_logs_are_the_last_problems_annotated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_snapshot, "_backend_kind", lambda: "rtx")
    build = FakeBuild()
    build.problems = [{"severity": "WARNING", "message": f"line {i}", "t": float(i)} for i in range(MAX_LOGS + 5)]
    build.problems.append({"severity": "ERROR", "message": "Error Code 7: BuildCanceled", "t": 9.0})
    logs = snapshot(stand_in(build))["logs"]
    assert (
        MAX_LOGS == 200
        and len(logs) == 200
        and logs[0]["message"] == "line 6"
        and logs[-1]["message"].startswith("Error")
    )
    assert "expected" not in logs[-1]  # not cancelled: an error
    build.cancel_info = {"phase": "x", "requested_at_s": 0.0}
    assert snapshot(stand_in(build))["logs"][-1]["expected"]  # cancelled: the cancellation's own error line is expected
    build.problems = [{"severity": "WARNING", "message": "CUDA driver version is insufficient", "t": 0.0}]
    assert snapshot(stand_in(build))["logs"][0]["expected"]  # on RTX
    monkeypatch.setattr(_snapshot, "_backend_kind", lambda: "tensorrt")
    assert "expected" not in snapshot(stand_in(build))["logs"][0]


def test_optional_extras_are_read_and_never_break_the_snapshot() -> None:
    build = FakeBuild()
    build.history = Extra(eta={"total_s": 3.0}, deltas={"0": 0.5}, basis={"created": 1.0, "said": "build of …"})
    build.resources = Extra(snapshot={"rss": 1})
    state = snapshot(stand_in(build))
    assert state["eta"] == {"total_s": 3.0} and state["history_delta"] == {"0": 0.5}
    assert state["history_basis"] == {"created": 1.0, "said": "build of …"}
    shown: object = state["resources"]  # the stand-in's value, whatever its type
    assert shown == {"rss": 1}
    build.history = Extra(eta=RuntimeError("x"), deltas=KeyError("y"), basis=TypeError("z"))
    build.resources = Extra(snapshot=ValueError("z"))
    state = snapshot(stand_in(build))
    assert state["eta"] is None and state["history_delta"] is None and state["resources"] is None
    assert state["history_basis"] is None


def test_backend_kind_is_empty_without_a_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_backend() -> Any:
        raise RuntimeError("no TensorRT")

    monkeypatch.setattr(_snapshot, "select_backend", no_backend)
    assert _snapshot._backend_kind() == ""
    monkeypatch.setattr(_snapshot, "select_backend", lambda: ("rtx", None))
    assert _snapshot._backend_kind() == "rtx"


# -- RowsEncoder -----------------------------------------------------------------------------------------------
def test_rows_encoder_returns_the_texts_of_new_and_changed_rows_only() -> None:
    model = PhaseModel(clock=lambda: 0.0)
    encoder = RowsEncoder()
    assert encoder.update(model.rows()) == [] and encoder.text() == "[]"
    model.phase_start("a", None, 2)
    model.phase_start("b", None, 2)
    first = encoder.update(model.rows())
    assert [json.loads(t) for t in first] == model.rows()
    assert encoder.update(model.rows()) == []  # nothing changed: the same row objects
    model.step_complete("b", 0)
    assert [json.loads(t)["name"] for t in encoder.update(model.rows())] == ["b"]
    model.phase_start("c", None, 1)
    assert [json.loads(t)["name"] for t in encoder.update(model.rows())] == ["c"]
    assert json.loads(encoder.text()) == model.rows()
    assert json.loads(encoder.encode(model.rows()[:1])) == model.rows()[:1]  # a shorter list drops the rest
    assert encoder.update(model.rows()) != []  # and the rows that come back are new to it again


# -- SnapshotPump.flush ----------------------------------------------------------------------------------------
def pump_of(build: FakeBuild, interval: float = 3600.0) -> tuple[SnapshotPump, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    return SnapshotPump(stand_in(build), sent.append, interval=interval), sent


def test_the_first_flush_sends_everything_then_only_what_changed() -> None:
    build = FakeBuild()
    build.model.phase_start("a", None, 2)
    pump, sent = pump_of(build)
    pump.flush()
    (first,) = sent
    assert set(first) == {*snapshot(stand_in(build)), "phases_delta", "phases_json", "phases_seq"} - {"phases"}
    assert json.loads(first["phases_json"]) == build.model.rows() and first["phases_seq"] == 1
    assert json.loads(first["phases_delta"]) == {"seq": 1, "rows": build.model.rows()}
    pump.flush()
    assert len(sent) == 1  # nothing changed: nothing sent

    build.model.step_complete("a", 0)
    pump.flush()
    assert set(sent[-1]) == {"phases_delta"}  # the whole list is not resent while running
    delta = json.loads(sent[-1]["phases_delta"])
    assert delta["seq"] == 2 and [r["step"] for r in delta["rows"]] == [1]
    build.status_detail = "news"
    pump.flush()
    assert sent[-1] == {"status_detail": "news"}  # no row changed: the last delta stays as it was
    assert pump.last["phases_delta"] == sent[-2]["phases_delta"] and pump.seq == 2


def test_elapsed_time_alone_is_sent_only_once_the_build_ended() -> None:
    build = FakeBuild()
    pump, sent = pump_of(build)
    pump.flush()
    build.elapsed_s = 5.0
    pump.flush()
    assert len(sent) == 1
    build.status = "cancelling"
    pump.flush()
    assert sent[1:] == [{"status": "cancelling", "elapsed_s": 5.0}]  # held back until there was news
    count = len(sent)
    build.elapsed_s = 6.0
    pump.flush()
    assert len(sent) == count  # the browser ticks the clock itself while the build runs
    build.status = "succeeded"
    build.elapsed_s = 7.0
    pump.flush()
    assert sent[-1]["elapsed_s"] == 7.0 and sent[-1]["status"] == "succeeded"


def test_the_whole_list_is_resent_on_request_and_at_the_end() -> None:
    build = FakeBuild()
    build.model.phase_start("a", None, 2)
    pump, sent = pump_of(build)
    pump.flush()
    build.model.phase_start("b", None, 2)
    pump.flush()
    assert "phases_json" not in sent[-1]
    pump.request_full()
    pump.flush()
    assert json.loads(sent[-1]["phases_json"]) == build.model.rows() and sent[-1]["phases_seq"] == 2
    pump.flush()
    assert len(sent) == 3  # the request is served once
    build.model.step_complete("b", 0)
    pump.flush()
    assert set(sent[-1]) == {"phases_delta"}  # and later changes travel as deltas again
    build.model.step_complete("a", 1)
    for status in ("succeeded", "cancelled", "failed"):
        build.status = status
        pump.flush()
        phases_json = pump.last["phases_json"]
        assert isinstance(phases_json, str) and json.loads(phases_json) == build.model.rows()
        assert pump.last["phases_seq"] == pump.seq == 4


# -- SnapshotPump's thread -------------------------------------------------------------------------------------
def test_the_pump_sends_phase_news_at_once_steps_at_the_next_tick_and_a_stop_at_once() -> None:
    build = FakeBuild()
    pump, sent = pump_of(build, interval=3600.0)  # a tick an hour: only a wake-up can send
    pump.start()
    try:
        build.model.phase_start("a", None, 4)
        wait_for(lambda: sent, "the first send, on a phase start")
        build.model.step_complete("a", 0)  # steps do not wake the pump
        build.model.phase_start("b", "a", 4)  # woken, but one send per interval: this waits
        time.sleep(0.2)
        assert len(sent) == 1
        pump.wake(urgent=True)  # a Stop click
        wait_for(lambda: len(sent) == 2, "the urgent send")
        assert [r["name"] for r in json.loads(sent[1]["phases_delta"])["rows"]] == ["a", "b"]
        build.end("cancelled")  # the end is urgent too, and the last send
        pump.join(30)
        assert not pump.thread.is_alive()
        assert sent[-1]["status"] == "cancelled" and "phases_json" in sent[-1]
    finally:
        build.end("cancelled")
        pump.join(30)


def test_the_first_send_waits_for_no_throttle_on_a_clock_that_starts_at_zero() -> None:
    # a freshly booted machine: time.monotonic() is its uptime, smaller than the interval
    build = FakeBuild()
    sent: list[dict[str, Any]] = []
    pump = SnapshotPump(stand_in(build), sent.append, interval=3600.0, clock=lambda: 0.0)
    pump.start()
    try:
        build.model.phase_start("a", None, 4)
        wait_for(lambda: sent, "the first send, on a clock at 0")
        build.model.phase_start("b", "a", 4)  # the second send is throttled: an interval after the first
        time.sleep(0.2)
        assert len(sent) == 1
    finally:
        build.end("cancelled")
        pump.join(30)


def test_a_flush_before_the_pump_starts_counts_for_its_throttle() -> None:
    """BuildWidget.start() flushes "running" itself, then starts the pump: the pump's first send must still wait
    an interval after that flush (it was sent at once: two sends 3 ms apart, 11 in one second in bench P3)."""
    build = FakeBuild()
    sent: list[dict[str, Any]] = []
    pump = SnapshotPump(stand_in(build), sent.append, interval=3600.0, clock=lambda: 0.0)
    pump.flush()
    assert len(sent) == 1
    pump.start()
    try:
        build.model.phase_start("a", None, 4)
        time.sleep(0.2)
        assert len(sent) == 1  # throttled: an interval after the flush
    finally:
        build.end("cancelled")
        pump.join(30)
    assert len(sent) == 2 and sent[-1]["status"] == "cancelled"  # the final state is never held back


def test_a_step_alone_is_sent_at_the_next_tick() -> None:
    build = FakeBuild()
    build.model.phase_start("a", None, 4)
    pump, sent = pump_of(build, interval=0.05)
    pump.start()
    try:
        wait_for(lambda: sent, "the first send")
        build.model.step_complete("a", 2)
        wait_for(lambda: any('"step": 3' in s.get("phases_delta", "") for s in sent), "the step, at a tick")
    finally:
        build.end("succeeded")
        pump.join(30)
    assert not pump.thread.is_alive()


def test_the_pump_of_an_ended_build_sends_once_and_stops() -> None:
    build = FakeBuild()
    build.end("succeeded")
    pump, sent = pump_of(build)
    pump.start()
    pump.join(30)
    assert not pump.thread.is_alive() and len(sent) == 1 and sent[0]["status"] == "succeeded"


def quiet_for(sent: list[dict[str, Any]], count: int, seconds: float = 0.3) -> None:
    """Nothing more than ``count`` sends during ``seconds`` (the pump must be holding back)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert len(sent) == count, sent[count:]
        time.sleep(0.005)


def test_the_pump_defaults_to_ten_sends_a_second_on_a_daemon_thread() -> None:
    build = FakeBuild()
    pump = SnapshotPump(stand_in(build), lambda state: None)
    assert pump.interval == 0.1 and pump.thread.daemon


def test_a_started_pump_waits_for_news_and_a_phase_finish_is_news() -> None:
    build = FakeBuild()
    build.model.phase_start("a", None, 4)
    pump, sent = pump_of(build, interval=0.3)  # the finish may wait an interval after the flush
    pump.flush()  # as the widget does before starting the pump
    pump.start()
    try:
        quiet_for(sent, 1)  # nothing changed: nothing to send
        build.model.phase_finish("a")
        wait_for(lambda: len(sent) == 2, "the send of a phase finish")
        assert json.loads(sent[1]["phases_delta"])["rows"][0]["status"] == "finished-early"
    finally:
        build.end("succeeded")
        pump.join(30)


def test_after_any_send_a_plain_wake_waits_for_the_interval_and_a_request_for_the_whole_list_does_not() -> None:
    build = FakeBuild()
    pump, sent = pump_of(build)  # an interval of an hour
    pump.start()
    try:
        build.model.phase_start("a", None, 4)
        wait_for(lambda: len(sent) == 1, "the first send")
        build.model.phase_start("b", None, 4)
        pump.wake()
        quiet_for(sent, 1)
        pump.wake(urgent=True)
        wait_for(lambda: len(sent) == 2, "the urgent send")
        build.model.phase_start("c", None, 4)  # after an urgent send the throttle holds again
        pump.wake()
        quiet_for(sent, 2)
        pump.request_full()  # a view that missed deltas (or is new) gets the whole list soon
        wait_for(lambda: len(sent) == 3, "the whole list")
        assert [r["name"] for r in json.loads(sent[2]["phases_json"])] == ["a", "b", "c"]
    finally:
        build.end("succeeded")
        pump.join(30)


def test_a_phase_start_just_after_a_send_waits_out_the_interval() -> None:
    build = FakeBuild()
    pump, sent = pump_of(build, interval=0.8)
    pump.start()
    try:
        build.model.phase_start("a", None, 4)
        wait_for(lambda: len(sent) == 1, "the first send")
        build.model.phase_start("b", None, 4)
        quiet_for(sent, 1, seconds=0.4)  # less than the interval after the first send (which it waits out)
        wait_for(lambda: len(sent) == 2, "the send one interval after the first")
    finally:
        build.end("succeeded")
        pump.join(30)


@pytest.mark.slow  # the same through a scripted build: tests/runners/test_scripted.py
@pytest.mark.rtx_long_step
def test_the_cancelling_state_is_sent_at_once_not_at_the_next_tick(
    wait_until: WaitUntil, long_model_bytes: bytes
) -> None:
    # deep_residual(400): its long step lasts seconds, and a thread build runs it to its end after the Stop
    widget = BuildWidget(long_model_bytes, history=False, isolation="thread")
    widget._pump.interval = 3600.0  # one throttled tick an hour: only an urgent wake-up can send in time
    widget.start()
    try:
        wait_until(
            lambda: (p := widget.build.model.innermost_running()) is not None and p.name == "Determining refit engines",
            what="the long step",
        )
        seen = threading.Event()
        widget.observe(lambda change: seen.set() if change["new"] == "cancelling" else None, names="status")
        widget.stop()
        assert seen.wait(10), f"status still {widget.status!r}: the Stop waited for the throttle"
    finally:
        widget.build.wait(300)


# -- engine_json(): the engine report a view shows ------------------------------------------------------------
def _report_build(status: str = "succeeded", layers: int = 2, delta: Any = None) -> FakeBuild:
    from trt_widget.engine import EngineReport

    fake = FakeBuild(status)
    names = [f"conv{i:05d}_" + "x" * 900 for i in range(layers)]
    fake.engine_report = EngineReport.from_json({"Layers": [{"Name": n, "LayerType": "Convolution"} for n in names]})  # type: ignore[attr-defined]
    fake.history = Extra(engine_delta=delta)
    fake.history.based_on = "build of 2026-12-01"
    return fake


def test_engine_json_is_the_report_once_succeeded_with_the_change_from_the_last_build() -> None:
    assert _snapshot.engine_json(stand_in(_report_build("running"))) == ""
    plain = json.loads(_snapshot.engine_json(stand_in(_report_build())))
    assert len(plain["layers"]) == 2 and "delta" not in plain and "delta_basis" not in plain
    change = {"layers": -1, "precision": {}, "memory": {}}
    sent = json.loads(_snapshot.engine_json(stand_in(_report_build(delta=change))))
    assert sent["delta"] == change and sent["delta_basis"] == "build of 2026-12-01" and len(sent["layers"]) == 2
    no_report = _report_build()
    no_report.engine_report = None  # type: ignore[attr-defined]
    assert _snapshot.engine_json(stand_in(no_report)) == ""
    broken = _report_build(delta=RuntimeError("history broke"))  # an optional extra never stops the pump
    assert _snapshot.engine_json(stand_in(broken)) == ""
    assert _snapshot.engine_change(stand_in(_report_build(delta=["not", "a", "dict"]))) is None


def test_a_view_gets_at_most_8_mib_of_engine_report() -> None:
    whole = _report_build(layers=4500)  # about 8.9 MB of report: over 8 MiB, under 9
    sent = _snapshot.engine_json(stand_in(whole))
    assert len(sent) <= 8 << 20
    data = json.loads(sent)
    assert 0 < len(data["layers"]) < 4500 and any("size limit" in note for note in data["notes"])
