"""Seventeenth adversarial re-run (issue 35): a model's node name reaches the ONELINE layer record TensorRT for RTX
logs, inside the layer's ``Metadata: [ONNX Layer: NAME]``. The parser finds the trailing fields by searching
backwards (``, Metadata:``, then ``, StreamId: ``), so a node named ``c, StreamId: ², Metadata: x`` hands it the
stream text ``²``: ``str.isdigit`` says yes, ``int`` raises ValueError. The layer's fields are read on first use,
so the build succeeds and the error comes later, in whatever serialises the report: the ``engine_report`` event of
``events=`` / ``build --json`` (that sink then drops every later event, ``build_end`` included), the terminal
view's sink, ``EngineReport.to_dict``, the HTML report's layer table. A name is outside text: it must be shown,
never end a recording. A real RTX build."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from rtx_log import real_rtx_log

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes

HOSTILE = "c, StreamId: \u00b2, Metadata: x"  # U+00B2 SUPERSCRIPT TWO: isdigit() True, int() ValueError


@pytest.fixture
def hostile_model(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    path.write_bytes(to_bytes(deep_residual(2, node_name=HOSTILE)))
    return path


def _hostile_streams(layers: object) -> list[object]:
    """The streams of the report's layers named after the hostile node: the name reached the layer lines."""
    assert isinstance(layers, list)
    return [layer["stream"] for layer in layers if HOSTILE in str(layer["name"])]


def _reported_layers(lines: list[str]) -> object:
    """The layers of a JSON event stream's ``engine_report`` event."""
    reports = [event["report"] for event in map(json.loads, lines) if event["event"] == "engine_report"]
    assert len(reports) == 1 and reports[0] is not None, reports
    return reports[0]["layers"]


def test_a_node_name_holding_a_stream_field_neither_ends_the_recording_nor_breaks_the_report(
    hostile_model: Path, tmp_path: Path
) -> None:
    events = tmp_path / "b.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build = Build(str(hostile_model), output=str(tmp_path / "m.engine"), events=str(events))
        build.start().result(timeout=300)
    assert build.status == "succeeded"
    assert build.events is not None and build.events.join(60)  # the writer thread has written build_end
    sink_failures = [str(w.message) for w in caught if "failed writing an event" in str(w.message)]
    lines = events.read_text().splitlines()
    kinds = [json.loads(line)["event"] for line in lines]
    assert not sink_failures, sink_failures
    assert kinds[-1] == "build_end" and "engine_report" in kinds, kinds[-3:]
    # the name reached one layer's line, and the parser read its stream text (the "²"): no number
    assert _hostile_streams(_reported_layers(lines)) == [None]
    report = build.engine_report
    assert report is not None
    assert report.to_dict()["layers"]  # the report of a succeeded build serialises
    assert _hostile_streams(report.to_dict()["layers"]) == [None]


def test_build_json_of_such_a_model_ends_with_build_end(hostile_model: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "m.onnx", "-o", "m.engine", "--json"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    said = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, said[-1500:]
    lines = [line for line in done.stdout.decode().splitlines() if line.strip()]
    kinds = [json.loads(line)["event"] for line in lines]
    assert "failed writing an event" not in said, said[-1500:]
    assert kinds[-1] == "build_end", kinds[-3:]
    assert _hostile_streams(_reported_layers(lines)) == [None]  # the name reached the report that was written


@pytest.fixture(scope="module")
def real_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The log of a real TensorRT for RTX build (trtexec's line format, detailed profiling)."""
    log = real_rtx_log(tmp_path_factory.mktemp("log"))
    assert ", StreamId: 0" in log and ", Constants: [" in log
    return log


def _stream_superscript(log: str) -> str:
    return log.replace(", StreamId: 0", ", StreamId: \u00b2", 1)


def _stream_digits(log: str) -> str:
    return log.replace(", StreamId: 0", ", StreamId: " + "7" * 5000, 1)


def _count_digits(log: str) -> str:
    """A layer line without its Constants list (weights are then read from its "Count" fields), 5,000 digits."""
    return re.sub(r", Constants: \[.*?\], Outputs: ", ', "Count": ' + "9" * 5000 + ", Outputs: ", log, count=1)


@pytest.mark.parametrize(
    "change",
    [_stream_superscript, _stream_digits, _count_digits],
    ids=["stream-superscript", "stream-5000", "count-5000"],
)
def test_inspect_of_a_log_whose_layer_fields_are_no_numbers_ends_without_a_traceback(
    change: object, real_log: str, tmp_path: Path
) -> None:
    assert callable(change)
    changed = change(real_log)
    assert changed != real_log
    sent = tmp_path / "sent.log"
    sent.write_text(changed, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(sent)], capture_output=True, text=True, timeout=300
    )
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said[-1500:]
    assert done.returncode == 0 and "precision:" in done.stdout, said[-1500:]


def test_inspect_of_the_real_log_shows_its_layers(real_log: str, tmp_path: Path) -> None:
    """The control: the unchanged log is inspected."""
    sent = tmp_path / "real.log"
    sent.write_text(real_log, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(sent)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "precision:" in done.stdout, (done.stdout + done.stderr)[-1500:]
