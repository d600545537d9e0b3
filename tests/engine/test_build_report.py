"""Every build has an engine report, read from its own log (real TensorRT for RTX builds): the layers match the
engine and the model, memory matches the engine's size, and a diff tells two builds apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from trt_widget import Build, EngineReport, models
from trt_widget.engine import EngineLog, engine_line


def _built(model: Any, **options: Any) -> Build:
    build = Build(model, **options).start()
    build.wait()
    assert build.status == "succeeded", build.error
    return build


def _node_names(model: onnx.ModelProto) -> set[str]:
    return {node.name for node in model.graph.node}


def _check_layers(report: EngineReport, model: onnx.ModelProto) -> None:
    """Every layer has a type and a tactic (TensorRT prints an empty TacticName for Myelin's shape calls and runtime
    fusions, on NVIDIA TensorRT too); every fused ONNX node it names is one of the model's nodes."""
    assert report.layers
    assert len(report.layers) == report.total_layers
    nodes = _node_names(model)
    fused: set[str] = set()
    for layer in report.layers:
        assert layer.type, layer.name
        assert layer.tactic or layer.type in ("runtime_fusion", "shape_call"), layer.name
        assert layer.precision or not layer.formats, layer.name
        assert set(layer.onnx_nodes) <= nodes, (layer.name, set(layer.onnx_nodes) - nodes)
        fused.update(layer.onnx_nodes)
    # the engine's layers account for most of the model's nodes (constants and reshapes fold away)
    assert len(fused) >= 0.5 * len(nodes), (len(fused), len(nodes))


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_resnet50(resnet50_bytes: bytes, isolation: str) -> None:
    build = _built(resnet50_bytes, isolation=isolation)
    report = build.engine_report
    assert report is not None, build.engine_report_reason
    assert build.engine_report_reason == ""
    _check_layers(report, onnx.load_from_string(resnet50_bytes))
    assert 20 <= len(report.layers) <= 500
    assert {layer.type for layer in report.layers} >= {"correlation"}  # RTX's convolutions
    assert report.precision_mix() == {"FP32": len(report.layers)}
    weights = report.memory["weights"]
    size = build.engine_size
    assert weights is not None and size is not None
    assert abs(weights - size) <= 0.10 * size, (weights, size)
    assert report.memory["engine_size"] == size
    assert report.memory["activations"] and report.memory["activations"] > 0
    assert report.bindings == ("input", "gemm_230") or set(report.bindings) == {
        i.name for i in onnx.load_from_string(resnet50_bytes).graph.input
    } | {o.name for o in onnx.load_from_string(resnet50_bytes).graph.output}
    assert not report.diff(report)
    assert report is build.engine_report  # read once


def test_deep_residual_chain_and_a_diff_of_two_builds() -> None:
    deep = models.deep_residual(60)
    report = _built(deep).engine_report
    assert report is not None
    _check_layers(report, deep)
    shallow = models.deep_residual(10)
    other = _built(shallow).engine_report
    assert other is not None
    again = _built(deep).engine_report
    assert again is not None
    assert not report.diff(again), str(report.diff(again))  # the same model built twice: no difference
    diff = report.diff(other)
    assert diff and (diff.removed or diff.changed)
    assert diff.memory.get("weights", 0) < 0  # fewer blocks, fewer weights


def test_model_with_external_data(tmp_path: Path) -> None:
    model = models.deep_residual(8)
    path = tmp_path / "ext.onnx"
    onnx.save_model(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin", size_threshold=0
    )
    build = _built(str(path))
    report = build.engine_report
    assert report is not None, build.engine_report_reason
    _check_layers(report, onnx.load(str(path), load_external_data=False))
    weights, size = report.memory["weights"], build.engine_size
    assert weights is not None and size is not None and weights <= size


def test_dynamic_shapes_with_two_profiles() -> None:
    model = models.deep_residual(6, batch="N")
    profiles = [
        {"input": ((1, 8, 8, 8), (2, 8, 8, 8), (4, 8, 8, 8))},
        {"input": ((4, 8, 8, 8), (8, 8, 8, 8), (16, 8, 8, 8))},
    ]
    report = _built(model, profiles=profiles).engine_report
    assert report is not None
    _check_layers(report, model)
    dims = [t.dims for layer in report.layers for t in layer.inputs if t.name == "input"]
    assert dims and all(d is not None and d[0] == -1 for d in dims)  # the batch dimension is dynamic


def test_engine_report_false_keeps_nothing() -> None:
    build = _built(models.deep_residual(4), engine_report=False)
    assert build.engine_report is None
    assert "engine_report=False" in build.engine_report_reason
    assert build.logger.engine_log is None


def test_no_report_before_the_end_and_for_a_failed_build(tmp_path: Path) -> None:
    build = Build(models.deep_residual(4))
    assert build.engine_report is None and "not ended" in build.engine_report_reason
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx")
    failed = Build(str(bad)).start()
    failed.wait()
    assert failed.status == "failed"
    assert failed.engine_report is None and "failed" in failed.engine_report_reason


def test_profiling_verbosity_none_gives_the_coarse_record_with_a_note() -> None:
    build = _built(models.deep_residual(4), profiling_verbosity="none")
    report = build.engine_report
    if report is None:  # TensorRT printed nothing: the reason says which setting
        assert "profiling_verbosity='none'" in build.engine_report_reason
    else:
        assert any("profiling_verbosity='none'" in note for note in report.notes)


def test_the_log_filter_keeps_only_the_record_and_memory_lines() -> None:
    assert engine_line("Layers:\nName: a, LayerType: kgen")
    assert engine_line("Total Weights Memory: 10 bytes")
    assert engine_line("[MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: CPU 1 MiB, GPU 0 MiB")
    assert not engine_line("Tactic: 0x01 Time: 0.1")
    assert not engine_line("Layer(CaskConvolution): a, Tactic: 1, x[Float(1)] -> y[Float(1)]")  # not a record head
    log = EngineLog()
    log.feed("Total Weights Memory: 10 bytes")
    assert log.report("x") is None  # memory alone is no report
    log.feed("Layers:\nName: a, LayerType: kgen, Inputs: [], Outputs: [], TacticName: k, StreamId: 0, Metadata: ")
    report = log.report("x")
    assert report is not None and report.memory["weights"] == 10
    assert log.report("x") is report  # parsed once


def test_cli_build_prints_nothing_new_without_a_terminal_and_flag_exists() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", "--help"], capture_output=True, text=True, timeout=120
    )
    assert "--no-engine-report" in out.stdout


def test_a_verbose_or_logged_process_build_reads_its_long_layer_record_whole(tmp_path: Path) -> None:
    """The eighth newcomer trial: with ``log_file=`` (so ``trt-widget bundle``) or ``verbose=True`` a builder
    process sent the parent its log records, each cut at MAX_MESSAGE characters; the layer record of a 53-layer
    engine is one longer line, so its report said 21 layers ("unknown" precision), kept in the history as an
    engine change. Each line now crosses whole; the records the build keeps are still cut."""
    from trt_widget._tensorrt_log import MAX_MESSAGE

    model = models.deep_residual(50)
    plain = Build(model, history=False).start()
    verbose = Build(model, history=False, verbose=True).start()
    logged = Build(model, history=False, log_file=str(tmp_path / "build.log")).start()
    reports = []
    for build in (plain, verbose, logged):
        assert build.wait(300) == "succeeded", build.error
        assert build.child_pid is not None  # a builder process: the lines crossed a pipe
        assert build.engine_report is not None, build.engine_report_reason
        reports.append((build.engine_report.total_layers, build.engine_report.precision_mix()))
    assert reports[0][0] == 53 and reports[1] == reports[0] and reports[2] == reports[0], reports
    cut = [r["message"] for r in verbose.logs if len(r["message"]) == MAX_MESSAGE + 1 and r["message"][-1] == "…"]
    assert cut, "no kept line was long enough to be cut: this model no longer tests the whole-line path"
