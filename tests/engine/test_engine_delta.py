""" "Δ last build" for the engine (real TensorRT for RTX builds into a private history store): the second build of
a model says its engine is the same; against a past engine that differed it says by how many layers, which
precisions and how much memory, with units; a stored brief that is not one is ignored, names are escaped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trt_widget import Build, EngineReport, models
from trt_widget._snapshot import engine_json
from trt_widget._terminal import engine_lines
from trt_widget.engine import delta_text, engine_brief, engine_delta
from trt_widget.history import HistoryStore


def _built(model: Any, store: HistoryStore | bool) -> Build:
    build = Build(model, history=store).start()
    assert build.wait(300) == "succeeded", build.error
    if store:
        assert build.history is not None
        assert build.history.recorded.wait(60) and build.history.recorded_id is not None
    return build


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = HistoryStore(tmp_path_factory.mktemp("hist") / "h.sqlite")
    small, large = models.deep_residual(4).SerializeToString(), models.deep_residual(12).SerializeToString()
    first = _built(small, store)
    second = _built(small, store)
    other = _built(large, False)  # another engine (more layers, more weights)
    # the last build of `small` as if its engine had been `other`'s: the same record, another engine brief
    assert second.history is not None and second.history.recorded_id is not None
    assert other.engine_report is not None
    doctored = store.get(second.history.recorded_id)
    assert doctored is not None
    doctored["engine"] = engine_brief(other.engine_report)
    store.add(doctored)
    third = _built(small, store)
    return {"store": store, "first": first, "second": second, "other": other, "third": third}


def test_the_history_record_keeps_a_small_engine_brief(builds: dict[str, Any]) -> None:
    first = builds["first"]
    record = builds["store"].get(first.history.recorded_id)
    report = first.engine_report
    assert record["engine"] == {
        "layers": report.total_layers,
        "precision_mix": report.precision_mix(),
        "memory": {k: v for k, v in report.memory.items() if v is not None and not k.startswith("peak_")},
    }
    assert record["engine"]["memory"]["engine_size"] == first.engine_size
    assert len(json.dumps(record["engine"])) < 1000


def test_a_rebuild_of_the_same_model_says_the_engine_is_the_same(builds: dict[str, Any]) -> None:
    first, second = builds["first"], builds["second"]
    assert first.history.engine_delta() is None  # nothing to compare with the first time
    assert second.history.match["id"] == first.history.recorded_id
    assert second.history.engine_delta() == {"layers": 0, "precision": {}, "memory": {}}
    lines = engine_lines(second)
    assert lines[-1].startswith("  Δ last build: same layer count, precisions and memory (against the build of ")
    assert not any("Δ" in line for line in engine_lines(first))
    sent = json.loads(engine_json(second))
    assert sent["delta"] == {"layers": 0, "precision": {}, "memory": {}}
    assert sent["delta_basis"].startswith("build of ")
    assert "delta" not in json.loads(engine_json(first))


def test_against_another_engine_it_says_what_changed_with_units(builds: dict[str, Any]) -> None:
    third, other = builds["third"], builds["other"]
    now, past = third.engine_report, other.engine_report
    assert now.total_layers < past.total_layers
    delta = third.history.engine_delta()
    assert delta is not None
    assert delta["layers"] == now.total_layers - past.total_layers
    assert delta["precision"] == {"FP32": now.precision_mix()["FP32"] - past.precision_mix()["FP32"]}
    assert delta["memory"]["weights"] == now.memory["weights"] - past.memory["weights"] < 0
    assert delta["memory"]["engine_size"] == third.engine_size - other.engine_size < 0
    line = engine_lines(third)[-1]
    assert line.startswith(f"  Δ last build: −{past.total_layers - now.total_layers:,} layers, FP32 −")
    assert "weights −" in line and "engine −" in line and ("KiB" in line or "MiB" in line)
    assert json.loads(engine_json(third))["delta"] == delta


def test_a_stored_brief_that_is_not_one_is_ignored_and_names_are_escaped(builds: dict[str, Any]) -> None:
    report: EngineReport = builds["first"].engine_report
    bad: object
    for bad in (None, "x", {"layers": "9"}, {"layers": 1, "precision_mix": {"FP32": True}, "memory": {}}, []):
        assert engine_delta(bad, report) is None
    evil = {"layers": 1, "precision_mix": {"\x1b[2J\x07FP8": 1}, "memory": {"weights": 1}}
    delta = engine_delta(evil, report)
    assert delta is not None and isinstance(delta["precision"], dict) and "\x1b[2J\x07FP8" in delta["precision"]
    text = delta_text(delta)
    assert "\x1b" not in text and "\x07" not in text and "FP8 −1" in text
