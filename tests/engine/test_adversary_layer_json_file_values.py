"""Twentieth adversarial re-run (issue 35, J2): the nineteenth re-run's fix reads a layer JSON one layer at a time,
each layer bounded (``MAX_VALUES``, 100,000 values), but not the file: 10,000 layers of 100,000 values each were
all kept (``MAX_LAYERS`` is 10,000), a billion values. A layer JSON is bounded as a recording is
(``MAX_FILE_VALUES``, 8,000,000 values in all), with an error that names the bound. And a trailing comma in its
layers list (or its object), which no JSON holds, was read as if absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trt_widget import EngineReport
from trt_widget._json import MAX_FILE_VALUES, MAX_VALUES

PER_LAYER = MAX_VALUES - 10  # each layer within its bound: a dict, its name, a list and the list's items
LAYERS = MAX_FILE_VALUES // PER_LAYER + 1  # 81: together past the file's bound, far within MAX_LAYERS


def layer_json(layers: int, per_layer: int) -> str:
    """An engine-information JSON of ``layers`` layers, each with a list of ``per_layer`` numbers."""
    row = json.dumps([0] * per_layer, separators=(",", ":"))
    items = ",".join(f'{{"Name":"l{i}","LayerType":"Convolution","Inputs":{row}}}' for i in range(layers))
    return f'{{"Layers":[{items}],"Bindings":["input","output"]}}'


def test_a_layer_json_within_the_bound_is_read() -> None:
    report = EngineReport.from_json(layer_json(2, PER_LAYER))  # the control: 200,000 values
    assert len(report.layers) == 2 and report.layers[0].name == "l0"


@pytest.mark.slow
def test_a_layer_json_of_too_many_values_in_all_is_refused(tmp_path: Path) -> None:
    text = layer_json(LAYERS, PER_LAYER)
    with pytest.raises(ValueError, match="more than 8,000,000 values in all"):
        EngineReport.from_json(text)  # before the fix: 81 layers of 99,990 values, all kept
    path = tmp_path / "layers.json"
    path.write_text(text)
    done = subprocess.run(  # the file as `inspect` reads it: the bound named, not "no engine layer information"
        [sys.executable, "-m", "trt_widget", "inspect", str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0 and "layers.json: JSON of more than 8,000,000 values in all" in done.stderr, (
        done.stderr[-2000:]
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    "text",
    ['{"Layers": [{"Name": "a"}, {"Name": "b"},]}', '{"Layers": [{"Name": "a"}],}'],
)
def test_a_trailing_comma_is_no_json(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # what it is
    with pytest.raises(ValueError, match="a trailing comma"):
        EngineReport.from_json(text)
