"""Adversary 19 (J1): every reader of outside JSON bounds how many values it holds (``check_outside``'s rule):
a recording's or a relayed event (``check_event``), a build server's body (``_server_json``), ``loads_outside``,
and a layer JSON file, of which :data:`MAX_LAYERS` layers are built and the rest counted."""

from __future__ import annotations

import json

import pytest

from trt_widget import BuildError
from trt_widget._json import MAX_VALUES, check_outside, check_text, check_value, loads_outside
from trt_widget.engine import MAX_LAYERS, EngineReport
from trt_widget.engine._parse import _decode_at, report_from_bytes
from trt_widget.runners import RecordingError, _replay, check_event
from trt_widget.serve._client import _server_json

WIDE: list[dict[str, int]] = [{}] * (MAX_VALUES + 1)


def test_loads_outside_refuses_more_values_than_the_bound() -> None:
    assert check_outside([{}] * (MAX_VALUES - 1)) == MAX_VALUES  # the list itself and its items
    with pytest.raises(ValueError, match="more than 100,000 values"):
        loads_outside(json.dumps(WIDE))


def test_loads_outside_reads_utf8_bytes_only_and_counts_before_decoding() -> None:
    """Adversary 22 (L22-1, J22-4): bytes in UTF-16 were decoded by ``json.loads`` (and miscounted by check_text)."""
    assert loads_outside(b'{"a": [1]}') == {"a": [1]}
    with pytest.raises(ValueError):
        loads_outside('{"a": [1]}'.encode("utf-16-le"))
    text = '["\u4e22",' + json.dumps(WIDE) + "]"
    with pytest.raises(ValueError):  # read as UTF-8 its NULs are no JSON: refused at once, nothing built
        loads_outside(text.encode("utf-16-le"))
    with pytest.raises(ValueError, match="more than 100,000 values"):
        loads_outside(text)


@pytest.mark.parametrize("text", ["7 ,", '"a,[" ,', "[1, [2, {}]] ,", '{"a": "}"} ,', "[] ,", "-1.5e3]"])
def test_check_value_finds_where_one_value_ends(text: str) -> None:
    at = text.index(text.strip()[0])
    assert check_value("xx" + text, 2 + at) - 2 == json.JSONDecoder().raw_decode(text, at)[1]


def test_check_value_refuses_one_wide_or_deep_value_and_not_those_after_it() -> None:
    small = json.dumps([{}] * (MAX_VALUES - 1))
    assert check_value(small + "," + small, 0) == len(small)
    with pytest.raises(ValueError, match="more than 100,000 values"):
        check_value(json.dumps(WIDE) + ", 1", 0)
    with pytest.raises(ValueError, match="nested more than"):
        check_value("[" * 40 + "]" * 40, 0)


@pytest.mark.parametrize("width", [10, 4094, 4095, 4096, 4097, 70_000, 300_000])
def test_a_layer_json_value_is_read_whole_at_any_width(width: int) -> None:
    """J22-4: a value is decoded from windows of the text; one ending at a window's edge ("12" of "123") goes on."""
    number = "9" * 10
    for value in ['"' + "a" * width + '"', "[" + ",".join([number] * (width // 11)) + "]", "1" * min(width, 4000)]:
        text = "  " + value + ' , "next"'
        assert _decode_at(text, 2) == (json.loads(value), 2 + len(value))
    with pytest.raises(ValueError):
        _decode_at('"' + "a" * width, 0)  # unended


SHAPES = [
    "[1,2]",
    '{"a":[1,2]}',
    "[[]]",
    "[]",
    "{}",
    '"x,[{:"',
    "[{},{}]",
    '{"a":{"b":[true,null,"s\\"]:"]}}',
    " 7 ",
    '[[[["a",{"k":"v","j":[]}]]]]',
    '{"a":1,"b":[],"c":{}}',
    '["\u00e9,[", "\\\\", 1.5e3, -2]',
]


@pytest.mark.parametrize("text", SHAPES)
def test_check_text_reads_a_texts_shape_as_check_outside_its_value(text: str) -> None:
    """Adversary 21 (L1, W1): the agent servers count a message's values before decoding it, by the same rule."""
    value = json.loads(text)
    for limit in range(5):
        for values in range(13):
            try:
                check_outside(value, limit, values)
                expected = ""
            except ValueError as exc:
                expected = str(exc)
            for sent in (text, text.encode()):
                try:
                    check_text(sent, limit, values)
                    found = ""
                except ValueError as exc:
                    found = str(exc)
                assert bool(found) == bool(expected), (sent, limit, values, found, expected)


def test_check_text_refuses_wide_and_deep_text_early() -> None:
    with pytest.raises(ValueError, match="more than 100,000 values"):
        check_text(b"[" + b"{}," * (4 * MAX_VALUES) + b"{}]")
    with pytest.raises(ValueError, match="nested more than 32 deep"):
        check_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ValueError, match="more than 100,000 values"):  # no JSON, and more tokens than the bound's
        check_text('"a"' * (6 * MAX_VALUES) + "[" * 40)  # read no further than ~5 tokens a value
    check_text(json.dumps({"text": "[{,:" * (4 * MAX_VALUES)}))  # marks in a string are no values


def test_an_events_wide_field_no_reader_needs_is_dropped() -> None:
    event = {"event": "log", "t": 1.0, "severity": "INFO", "message": "m", "junk": WIDE, "note": "kept"}
    check_event(event, "rec", 3, {})  # type: ignore[arg-type]
    assert "junk" not in event and event["note"] == "kept" and event["message"] == "m"


def test_an_events_wide_field_a_reader_needs_is_refused() -> None:
    event = {"event": "engine_report", "t": 1.0, "report": {"layers": WIDE}}
    with pytest.raises(RecordingError, match="field 'report' of a engine_report event holds more than 100,000"):
        check_event(event, "rec", 3, {})  # type: ignore[arg-type]


def test_a_recording_of_more_values_than_the_file_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_replay, "MAX_FILE_VALUES", 50)
    line = json.dumps({"event": "log", "t": 1.0, "message": "m", "x": list(range(10))})
    with pytest.raises(RecordingError, match="more than 50 JSON values"):
        _replay._parse([line] * 5, "rec")


def test_a_servers_wide_body_is_refused() -> None:
    with pytest.raises(BuildError, match="of more than 100,000 JSON values"):
        _server_json(json.dumps({"event": "log", "t": 1, "junk": WIDE}), "an event", "http://h")
    assert _server_json(json.dumps({"event": "log", "t": 1, "x": [{}] * 1000}), "an event", "http://h")["t"] == 1


def test_a_layer_json_keeps_max_layers_and_counts_the_rest() -> None:
    layers = [{"Name": f"L{i}", "LayerType": "Conv"} for i in range(MAX_LAYERS + 5)]
    text = json.dumps({"Layers": layers, "Bindings": ["in", "out"]}, indent=1)
    report = report_from_bytes(text.encode(), "f.json")
    assert len(report.layers) == MAX_LAYERS and report.total_layers == MAX_LAYERS + 5
    assert report.layers[-1].name == f"L{MAX_LAYERS - 1}" and report.bindings == ("in", "out")
    assert any(f"{MAX_LAYERS + 5:,} layers printed" in note for note in report.notes)


def test_a_layer_json_with_a_wide_layer_is_not_read_as_layers() -> None:
    text = json.dumps({"Layers": [{"Name": "a", "x": WIDE}], "Bindings": []})
    with pytest.raises(ValueError):
        report_from_bytes(text.encode(), "f.json")


def test_from_json_of_a_real_sized_report_reads_past_the_event_bound() -> None:
    layers = [{"Name": f"L{i}", "Inputs": [{"Name": "a", "Dimensions": [1, 3, 8, 8]}]} for i in range(MAX_LAYERS)]
    text = json.dumps({"Layers": [*layers, {}], "Bindings": []})  # ~120,000 values: a file, not an event
    report = EngineReport.from_json(text)
    assert len(report.layers) == MAX_LAYERS and report.total_layers == MAX_LAYERS + 1
