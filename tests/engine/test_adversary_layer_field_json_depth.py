"""Eighteenth adversarial re-run (issue 35), after the seventeenth's E1 fix: a model's node name reaches the ONELINE
layer record TensorRT for RTX logs (``Metadata: [ONNX Layer: NAME]``), and ``parse_oneline`` cuts the fields at the
*last* ``, Metadata:``, so a node named ``x], Evil: {"a":[[[...]]]}, Metadata: y`` (under TensorRT's 4,096-character
name limit) adds a field ``Evil`` whose value ``_value`` hands to ``json.loads``, catching ValueError only: nested
1,900 deep it raises RecursionError. ``EngineReport.to_json`` (the inspector's / ``--exportLayerInfo`` JSON, public)
then raises for the report of a build that succeeded, and ``trt-widget inspect LOG --export-layer-info`` of such
layer lines ends in a Python traceback. A name is outside text: shown, never an exception. A real RTX build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import Build, EngineReport
from trt_widget.engine._layer import _ONELINE_HEAD, parse_oneline
from trt_widget.models import deep_residual, to_bytes

DEPTH = 1_900  # the name: 3,829 characters, under TensorRT's 4,096


def _built(tmp_path: Path, name: str) -> Build:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2, node_name=name)))
    build = Build(str(model), output=str(tmp_path / "m.engine"))
    build.start().result(timeout=300)
    assert build.status == "succeeded", build.error
    return build


def _nested(depth: int) -> str:
    return '{"a":' + "[" * depth + "]" * depth + "}"


def _hostile(depth: int) -> str:
    return f"x], Evil: {_nested(depth)}, Metadata: y"


def _evil(exported: str) -> list[object]:
    """The ``Evil`` fields of an exported layer JSON's layers: the node name's field reached the report."""
    return [layer["Evil"] for layer in json.loads(exported)["Layers"] if "Evil" in layer]


def test_to_json_of_a_report_whose_node_name_nests_deeply(tmp_path: Path) -> None:
    report = _built(tmp_path, _hostile(DEPTH)).engine_report
    assert report is not None
    assert len(json.loads(report.to_json())["Layers"]) == len(report.layers)
    assert _evil(report.to_json()) == [_nested(DEPTH)]  # kept as its text


def test_inspect_export_layer_info_of_such_layer_lines(tmp_path: Path) -> None:
    report = _built(tmp_path, _hostile(DEPTH)).engine_report
    assert report is not None
    lines = tmp_path / "layers.txt"  # the ONELINE lines TensorRT for RTX printed for this engine, as a log holds them
    lines.write_text("".join(str(layer.source) + "\n" for layer in report.layers), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "inspect", str(lines), "--export-layer-info"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr[-1500:]
    assert done.returncode == 0 and json.loads(done.stdout)["Layers"], done.stderr[-1500:]
    assert _evil(done.stdout) == [_nested(DEPTH)]  # kept as its text


def test_control_a_shallow_field_in_a_node_name_exports(tmp_path: Path) -> None:
    report = _built(tmp_path, _hostile(3)).engine_report
    assert report is not None
    assert len(json.loads(report.to_json())["Layers"]) == len(report.layers)
    assert _evil(report.to_json()) == [{"a": [[[]]]}]


def test_a_field_nested_past_the_bound_is_kept_as_its_text() -> None:
    """The one JSON rule (``_json.loads_outside``): a field nested more than MAX_NESTING deep stays the text it was."""
    deep = _nested(DEPTH)
    line = f'{_ONELINE_HEAD}conv, LayerType: CaskConvolution, Evil: {deep}, Shallow: {{"a": [[1]]}}, Metadata: y'
    fields = parse_oneline(line)
    assert fields is not None and fields["Evil"] == deep and fields["Shallow"] == {"a": [[1]]}


def test_engine_report_from_json_of_text_nested_past_json_loads_is_a_value_error() -> None:
    text = '{"Layers": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    with pytest.raises(ValueError, match="nested more than"):
        EngineReport.from_json(text)
