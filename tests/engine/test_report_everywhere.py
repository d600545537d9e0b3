"""The engine report beyond the Build: the events stream (one event, in the schema), replays of recordings,
``trt-widget inspect``, the terminal summary after a build."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from trt_widget import Build, EngineReport, models
from trt_widget._events import schema

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_report"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trt_widget", *args], capture_output=True, text=True, timeout=300)


def test_one_engine_report_event_before_build_end_in_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "build.jsonl"
    build = Build(models.deep_residual(6), events=str(path)).start()
    build.wait()
    assert build.events is not None and build.events.join(60)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    validator = jsonschema.Draft202012Validator(schema())
    for event in events:
        validator.validate(event)
    kinds = [e["event"] for e in events]
    assert kinds.count("engine_report") == 1 and kinds[-2:] == ["engine_report", "build_end"]
    event = events[-2]
    report = build.engine_report
    assert report is not None and event["reason"] == ""
    assert [layer["name"] for layer in event["report"]["layers"]] == [layer.name for layer in report.layers]
    assert event["report"]["memory"]["weights"] == report.memory["weights"]

    replay = Build.from_events(path).start()  # a replay gives the recorded report back
    replay.wait()
    assert replay.status == "succeeded"
    assert replay.engine_report is not None
    assert not report.diff(replay.engine_report)
    assert EngineReport.from_file(path).total_layers == report.total_layers


def test_a_build_without_a_report_says_why_in_its_event() -> None:
    out = io.StringIO()
    build = Build(models.deep_residual(3), events=out, engine_report=False).start()
    assert build.wait() == "succeeded", build.error  # no report by the option, not by a failure
    assert build.events is not None and build.events.join(60)
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    (event,) = [e for e in events if e["event"] == "engine_report"]
    assert event["report"] is None and "engine_report=False" in event["reason"]


def test_a_huge_report_event_stays_one_readable_recording_line() -> None:
    text = "Layers:\n" + "\n".join(
        f"Name: {'n' * 5000}_{i}, LayerType: kgen, Inputs: [], Outputs: [ {{ Name: y, Dimensions: [1], Datatype: Half, "
        f"Format: (Linear) Row major linear format }}], TacticName: k, StreamId: 0, Metadata: "
        for i in range(2000)
    )
    report = EngineReport.from_text(text)
    line = json.dumps(report.to_dict(900_000))
    assert len(line) < 1 << 20
    again = EngineReport.from_json(line)
    assert 0 < len(again.layers) < 2000 and any("size limit" in n for n in again.notes)


def test_inspect_prints_the_summary_and_a_table_escaped(tmp_path: Path) -> None:
    result = _cli("inspect", str(DATA / "trt10_inspector_oneline.log"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Engine: 26 layers")
    assert "node_softmax, node_argmax" in result.stdout  # fused ONNX nodes of a Myelin layer
    evil = tmp_path / "evil.log"
    evil.write_text(
        "Layers:\nName: \x1b[31mred\x07, LayerType: kgen, Inputs: [], Outputs: [], TacticName: k, StreamId: 0, "
        "Metadata: "
    )
    result = _cli("inspect", str(evil))
    assert result.returncode == 0 and "\x1b" not in result.stdout and "\\x1b[31mred" in result.stdout


def test_inspect_json_and_export_layer_info() -> None:
    result = _cli("inspect", str(DATA / "trt10_16_trtexec_dumpLayerInfo.log"), "--json")
    data = json.loads(result.stdout)
    assert data["memory"]["weights"] == 13100672 and len(data["layers"]) == 9
    result = _cli("inspect", str(DATA / "trt10_16_exportLayerInfo.json"), "--export-layer-info")
    assert json.loads(result.stdout) == json.loads((DATA / "trt10_16_exportLayerInfo.json").read_text())


def test_inspect_of_a_file_without_a_report_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("nothing\n")
    result = _cli("inspect", str(path))
    assert result.returncode == 1 and "no engine layer information" in result.stderr
    result = _cli("inspect", str(tmp_path / "missing.log"))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "error: no such file: " in result.stderr and "missing.log" in result.stderr, result.stderr


def test_the_terminal_prints_the_engine_summary_after_a_build(tmp_path: Path) -> None:
    result = _cli("demo", "--blocks", "4", "--plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("Succeeded in")
    engine = [line for line in lines if line.startswith("Engine: ")]
    assert len(engine) == 1 and "layers" in engine[0]
    assert any(line.startswith("  precision: FP32") for line in lines)
    quiet = _cli("demo", "--blocks", "4", "--plain", "--no-engine-report")
    quiet_lines = quiet.stdout.splitlines()
    assert quiet.returncode == 0 and quiet_lines[-1].startswith("Succeeded in"), quiet.stdout[-2000:] + quiet.stderr
    assert not any(line.startswith("Engine: ") for line in quiet_lines)


def test_the_html_report_has_the_engine_section_escaped(tmp_path: Path) -> None:
    build = Build(models.deep_residual(4)).start()
    build.wait()
    page = build.to_html()
    assert "<h2>Engine <small>" in page and "trt-engine-layers" in page
    report = build.engine_report
    assert report is not None and report.layers[1].name in page

    from trt_widget.engine import engine_html

    evil = EngineReport.from_text(
        "Layers:\nName: <script>alert(1)</script>\x1b, LayerType: kgen, Inputs: [], Outputs: [], TacticName: k, "
        "StreamId: 0, Metadata: "
    )
    html = engine_html(evil)
    assert "<script>" not in html and "&lt;script&gt;" in html and "\x1b" not in html
    assert "No engine report: engine_report=False" in engine_html(None, "engine_report=False")


def test_the_matrix_compares_the_engines_of_its_variants() -> None:
    from trt_widget import BuildMatrix

    matrix = BuildMatrix([models.deep_residual(4), models.deep_residual(12)], variants=[{}])
    matrix.start()
    assert matrix.wait(300) == "done"
    rows = matrix.engines()
    table: list[dict[str, Any]] = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert [r["build"] for r in table] == [0, 1]
    assert all(r["layers"] and r["precision_mix"].startswith("FP32") for r in table)
    assert table[0]["weights"] < table[1]["weights"]  # three times the blocks
    compared = matrix.comparison()["builds"][1]["engine"]
    assert compared is not None and compared["layers"] == table[1]["layers"]


def test_mcp_describes_the_engine(tmp_path: Path) -> None:
    from trt_widget.mcp import BuildRegistry

    path = tmp_path / "m.onnx"
    path.write_bytes(models.to_bytes(models.deep_residual(4)))
    builds = BuildRegistry()
    build_id, build = builds.create(str(path))
    build.start()
    build.wait()
    described = builds.describe(build_id)
    assert described["status"] == "succeeded"
    engine = described["engine"]
    assert isinstance(engine, dict)
    layers, memory = engine["layers"], engine["memory"]
    assert isinstance(layers, int) and layers > 0 and engine["precision_mix"] == {"FP32": layers}
    assert isinstance(memory, dict) and isinstance(weights := memory["weights"], int) and weights > 0
    json.dumps(described)  # JSON-ready for the tool result


def test_the_widget_gets_the_report_and_saved_notebooks_show_it() -> None:
    from trt_widget import BuildWidget

    widget = BuildWidget(models.deep_residual(4))
    assert widget.engine_json == ""
    widget.start()
    assert widget.wait(120) == "succeeded"
    data = json.loads(widget.engine_json)
    report = widget.build.engine_report
    assert report is not None and [layer["name"] for layer in data["layers"]] == [x.name for x in report.layers]
    bundle, _ = widget._repr_mimebundle_()
    html = bundle["text/html"]
    assert isinstance(html, str) and "Engine: " in html and "trt-engine-layers" in html


def test_inspect_of_an_engine_file_says_it_is_one_and_what_to_give_instead(tmp_path: Path) -> None:
    """Issue 39's trial: ``inspect model.engine`` answered as if a log held nothing; a serialized engine is named
    as one, with what can be read instead (its build's log or recording, its manifest). With its manifest beside it,
    the sixth trial's item 2: what the manifest records (tests/test_first_hour_sixth_cli.py)."""
    engine = tmp_path / "m.engine"
    build = Build(models.deep_residual(2), history=False, resources=False, output=str(engine)).start()
    assert build.wait(300) == "succeeded", build.error
    Path(f"{engine}.manifest.json").unlink()
    result = _cli("inspect", str(engine))
    assert result.returncode == 1
    assert "engine with no manifest" in result.stderr and "trt-widget check" in result.stderr, result.stderr
    assert "no engine layer information" not in result.stderr


def test_inspect_of_json_nested_too_deep_fails_clearly(tmp_path: Path) -> None:
    """A file (or a recording's line) of 100,000 brackets raised RecursionError out of json.loads: a traceback."""
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.json").write_text('{"Layers": ' + deep + "}")
    start = json.dumps({"event": "build_start", "model": "m", "backend": "rtx", "version": "1", "options": {}, "t": 0})
    (tmp_path / "deep.jsonl").write_text(start + "\n" + deep + "\n")
    for name in ("deep.json", "deep.jsonl"):
        result = _cli("inspect", str(tmp_path / name))
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert "no engine layer information" in result.stderr


def test_inspect_of_a_device_or_a_fifo_fails_at_once(tmp_path: Path) -> None:
    """``trt-widget inspect /dev/zero`` read until memory ran out (GBs in seconds); a FIFO with no writer waited
    forever. Both are refused at once as not a regular file."""
    import os

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        result = subprocess.run(  # under a memory cap: the unbounded read must not take the machine's memory
            ["sh", "-c", 'ulimit -v 4000000 && exec "$@"', "sh", sys.executable, "-m", "trt_widget", "inspect", path],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1 and "is not a regular file" in result.stderr, result.stderr[-1000:]
