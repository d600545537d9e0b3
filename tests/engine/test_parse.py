"""EngineReport's parsers on real published TensorRT 8.x and 10.x output (tests/data/engine_report/SOURCES.md),
and on hostile input: bounded, escaped, never split on the control bytes TensorRT joins fused names with."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from trt_widget import EngineReport
from trt_widget.engine import MAX_LAYERS

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_report"


def test_sources_name_every_file() -> None:
    sources = (DATA / "SOURCES.md").read_text()
    for path in DATA.iterdir():
        if path.name != "SOURCES.md":
            assert f"`{path.name}`" in sources, f"{path.name} has no recorded source"


def test_trtexec_10_whole_log_with_dump_layer_info() -> None:
    """A whole trtexec log: the ONELINE record, the bindings, the memory block and trtexec's engine size."""
    report = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    assert report.form == "oneline"
    assert [layer.name for layer in report.layers][:3] == [
        "node_conv2d + node_relu",
        "node_max_pool2d",
        "node_conv2d_1 + node_relu_1",
    ]
    assert len(report.layers) == report.total_layers == 9
    assert report.bindings == ("x", "y", "z")
    conv = report.layers[0]
    assert conv.type == "CaskConvolution"
    assert conv.precision == "FP32"
    assert conv.tactic.startswith("sm80_xmma_fprop_implicit_gemm")
    assert conv.tactic_value == "0x5b8bf1b8028629d9"
    assert conv.onnx_nodes == ("node_conv2d", "node_relu")  # joined by a raw 0x1E byte in the log
    assert conv.stream == 0
    assert conv.weights == 800 + 32
    assert report.layers[-1].precision == "INT32→INT64"  # a cast: the input's type where it differs
    assert report.memory["weights"] == 13100672
    assert report.memory["activations"] == 125440
    assert report.memory["host_persistent"] == 18896
    assert report.memory["scratch"] == 4608
    assert report.memory["peak_gpu"] == 13 << 20
    assert report.memory["engine_size"] == round(12.5765 * (1 << 20))


def test_export_layer_info_json_reads_as_the_oneline_dump_of_the_same_command() -> None:
    """The Cookbook's --exportLayerInfo JSON (\\u001e in Metadata) and its ONELINE dump of the same command (another
    run: the autotuner chose two other kernels) read as the same layers, field for field but the tactics."""
    from_json = EngineReport.from_file(DATA / "trt10_16_exportLayerInfo.json")
    from_log = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    assert from_json.form == "json"
    assert [layer.name for layer in from_json.layers] == [layer.name for layer in from_log.layers]
    for a, b in zip(from_json.layers, from_log.layers, strict=True):
        assert (a.type, a.precision, a.formats, a.onnx_nodes, a.stream, a.weights) == (
            b.type,
            b.precision,
            b.formats,
            b.onnx_nodes,
            b.stream,
            b.weights,
        )
        tactics = ("TacticName", "TacticValue")
        # the ONELINE text parses to the JSON's very fields
        assert {k: v for k, v in a.raw.items() if k not in tactics} == {
            k: v for k, v in b.raw.items() if k not in tactics
        }
    diff = from_json.diff(from_log)
    assert not diff.added and not diff.removed
    assert {c.what for c in diff.changed} == {"tactic"}


def test_inspector_oneline_both_separators_and_two_profiles() -> None:
    report = EngineReport.from_file(DATA / "trt10_inspector_oneline.log")
    names = [layer.name for layer in report.layers]
    assert len(names) == 26 and "node_conv2d + node_relu [profile 1]" in names
    softmax = next(layer for layer in report.layers if layer.name == "__myl_DivMulTopk_myl5_5")
    assert softmax.onnx_nodes == ("node_softmax", "node_argmax")  # 0x1F inside a Myelin layer
    reformat = next(layer for layer in report.layers if layer.type == "Reformat")
    assert reformat.origin == "REFORMAT"
    assert reformat.precision == "FP32→FP16"
    assert reformat.formats == ("Channel major FP16 format where channel % 8 == 0",)
    assert reformat.onnx_nodes == ()
    gemm = next(layer for layer in report.layers if layer.type == "gemm")
    assert gemm.outputs[0].dims == (-1, 1024)
    assert report.bindings == ("x", "y", "z")
    assert all(v is None for v in report.memory.values())  # the inspector prints no memory


def test_trt10_verbose_layer_information_new_tensor_syntax() -> None:
    """TensorRT 10's verbose form: ``x (Half[-1,32:8,14,14])``, hex tactics, Myelin ForeignNodes; the last
    memory block of the log is the engine's."""
    report = EngineReport.from_file(DATA / "trt10_16_trtexec_verbose_dynamic.log")
    assert report.form == "layer_info"
    assert len(report.layers) == 6
    reformat = report.layers[2]
    assert reformat.type == "Reformat"
    assert reformat.precision == "FP32→FP16"
    assert reformat.outputs[0].dims == (-1, 32, 14, 14)
    assert reformat.formats == ("Half vectorized by 8",)
    assert report.layers[1].tactic == "0xdd39499496c9cc38"
    myelin = report.layers[-1]
    assert myelin.type == "Myelin" and myelin.name.startswith("{ForeignNode[")
    assert [t.datatype for t in myelin.outputs] == ["FP32", "INT64"]
    assert report.memory["weights"] == 6553216  # the third (final) block, not the earlier two
    assert report.memory["engine_size"] == round(6.42511 * (1 << 20))


def test_trt8_2_signed_decimal_tactics_and_old_tensor_syntax() -> None:
    report = EngineReport.from_file(DATA / "trt8_2_issue2011.log")
    assert len(report.layers) == 4
    conv = report.layers[1]
    assert conv.type == "CaskConvolution"
    assert conv.tactic_value == f"0x{1832046141070096030:016x}"
    assert conv.tactic == conv.tactic_value  # no kernel name before 10.x's verbose form
    assert conv.inputs[0].dims == (1, 256, 128, 150)
    assert conv.outputs[0].name == "(Unnamed Layer* 2) [Activation]_output"
    assert conv.precision == "FP16"
    assert conv.onnx_nodes == (
        "(Unnamed Layer* 0) [Convolution]",
        "(Unnamed Layer* 1) [Scale]",
        "(Unnamed Layer* 2) [Activation]",
    )
    assert report.layers[0].tactic_value == "0x00000000000003ea"  # 1002


def test_negative_decimal_tactic_is_the_unsigned_hex_of_8_4() -> None:
    from trt_widget.engine import tactic_hex

    assert tactic_hex("-1838109259315759592") == f"0x{(-1838109259315759592) & (2**64 - 1):016x}"
    assert tactic_hex("0x3e9") == "0x00000000000003e9"  # 8.2's unpadded hex


def test_trt8_0_prefixed_record_with_dynamic_dims() -> None:
    report = EngineReport.from_file(DATA / "trt8_0_issue1437.log")
    assert [layer.type for layer in report.layers] == ["Reformat", "Reformat", "ElementWise"]
    assert report.layers[0].precision == "FP16→FP32"
    assert report.layers[0].inputs[0].dims == (-5, 40, 1, 512)
    assert len(report.layers[2].inputs) == 2


def test_trex_json_of_trt8() -> None:
    report = EngineReport.from_file(DATA / "trt8_trex_resnet_fp16.graph.json")
    assert len(report.layers) == 36
    assert report.precision_mix() == {"FP16": 35, "FP32": 1}
    assert report.layers[0].precision == "FP32→FP16" and report.layers[0].origin == "REFORMAT"
    assert report.layers[1].onnx_nodes == ("Conv_0", "Relu_1")  # no Metadata before 10.x: the name's parts
    assert report.largest(1)[0][1] == 2359808
    assert "CaskConvolution" in report.summary()


def test_to_json_is_the_export_layer_info_shape() -> None:
    """to_json writes what --exportLayerInfo wrote: read back, the same JSON; from a ONELINE log, the same keys."""
    original = json.loads((DATA / "trt10_16_exportLayerInfo.json").read_text())
    assert json.loads(EngineReport.from_json(json.dumps(original)).to_json()) == original
    from_log = json.loads(EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log").to_json())
    assert from_log["Bindings"] == original["Bindings"]
    assert [list(layer) for layer in from_log["Layers"]] == [list(layer) for layer in original["Layers"]]


def test_to_dict_round_trips_through_from_json() -> None:
    report = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    again = EngineReport.from_json(json.dumps(report.to_dict()))
    assert [layer.to_dict() for layer in again.layers] == [layer.to_dict() for layer in report.layers]
    assert dict(again.memory) == dict(report.memory)
    assert not report.diff(again)


def test_diff_names_precision_tactic_fusion_and_memory_changes() -> None:
    a = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    b = EngineReport.from_file(DATA / "trt10_inspector_oneline.log")  # the same model, another build (FP16)
    diff = a.diff(b)
    assert "node_conv2d + node_relu [profile 1]" in diff.added
    assert "node_linear_myl4_0" in diff.removed
    whats = {(c.name, c.what) for c in diff.changed}
    assert ("node_conv2d_1 + node_relu_1", "precision") in whats
    assert ("node_max_pool2d", "tactic") in whats
    assert diff.memory == {}  # the inspector printed none: no delta is invented
    assert not a.diff(a)
    assert str(a.diff(a)) == "no difference"


def test_layers_df() -> None:
    pytest.importorskip("pandas")
    df = EngineReport.from_file(DATA / "trt10_16_exportLayerInfo.json").layers_df()
    assert list(df["type"])[:2] == ["CaskConvolution", "CaskPooling"]
    assert df.loc[0, "onnx_nodes"] == ["node_conv2d", "node_relu"]


def test_a_file_without_layer_information_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_text("[I] nothing about layers here\n")
    with pytest.raises(ValueError, match="no engine layer information"):
        EngineReport.from_file(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"Layers": 3}')
    with pytest.raises(ValueError, match=r"no engine layer information|Layers"):
        EngineReport.from_file(bad)


def test_recording_with_an_engine_report_event(tmp_path: Path) -> None:
    report = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    path = tmp_path / "build.jsonl"
    events = [
        {"event": "build_start", "model": "m", "t": 0.0},
        {"event": "engine_report", "report": report.to_dict(), "t": 1.0},
        {"event": "build_end", "status": "succeeded", "t": 1.0},
    ]
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    again = EngineReport.from_file(path)
    assert [layer.name for layer in again.layers] == [layer.name for layer in report.layers]
    assert again.memory["weights"] == report.memory["weights"]


# --- hostile input -----------------------------------------------------------------------------------------------


def _oneline(name: str, metadata: str = "[ONNX Layer: a]") -> str:
    return (
        f"Name: {name}, LayerType: kgen, Inputs: [ {{ Name: x, Dimensions: [1], Datatype: Float, Format: (Linear) "
        f"Row major linear format }}], Constants: [], Outputs: [ {{ Name: y, Dimensions: [1], Datatype: Half, Format: "
        f"(Linear) Row major linear format }}], TacticName: k, StreamId: 0, Metadata: {metadata}"
    )


def test_names_with_line_separators_of_splitlines_stay_whole() -> None:
    """0x1C-0x1E, 0x85 and U+2028 split str.splitlines(); a record is split on "\\n" only."""
    name = "a\x1cb\x1dc\x85d\u2028e"
    text = "Layers:\n" + _oneline(name, "[ONNX Layer: p\x1cq]\x1e[ONNX Layer: r\u2029s]")
    report = EngineReport.from_text(text)
    assert [layer.name for layer in report.layers] == [name]
    assert report.layers[0].onnx_nodes == ("p\x1cq", "r\u2029s")


def test_escapes_in_names_never_reach_the_summary_raw() -> None:
    evil = "\x1b[2J\x1b]0;pwned\x07\r\u202eevil"
    report = EngineReport.from_text("Layers:\n" + _oneline(evil, f"[ONNX Layer: {evil}]"))
    text = report.summary() + repr(report) + str(report.diff(EngineReport.from_text("Layers:\n" + _oneline("x"))))
    for char in ("\x1b", "\x07", "\r", "\u202e"):
        assert char not in text
    assert report.layers[0].name == evil  # kept whole where it is data
    assert json.loads(report.to_json())["Layers"][0]["Name"] == evil


def test_a_one_megabyte_name_is_cut_for_display_and_whole_in_json() -> None:
    name = "n" * (1 << 20)
    report = EngineReport.from_text("Layers:\n" + _oneline(name))
    assert report.layers[0].name == name
    assert json.loads(report.to_json())["Layers"][0]["Name"] == name
    diff = str(report.diff(EngineReport.from_text("Layers:\n" + _oneline("other"))))
    assert len(report.summary()) < 4000 and len(diff) < 4000
    assert "1,048,576 chars" in diff


def test_a_hundred_thousand_layers_are_capped_with_a_note() -> None:
    text = "Layers:\n" + "\n".join(_oneline(f"layer_{i}") for i in range(100_000))
    report = EngineReport.from_text(text)
    assert len(report.layers) == MAX_LAYERS
    assert report.total_layers == 100_000
    assert any("100,000 layers printed" in note for note in report.notes)
    assert "of 100,000" in report.summary()
    big = {"Layers": [{"Name": f"l{i}", "LayerType": "kgen"} for i in range(20_000)]}
    from_json = EngineReport.from_json(json.dumps(big))
    assert len(from_json.layers) == MAX_LAYERS and from_json.total_layers == 20_000


@pytest.mark.slow  # 8,000,000 values decoded: seconds
def test_layers_past_the_kept_ones_are_counted_within_the_same_bounds() -> None:
    """Layers past :data:`MAX_LAYERS` are decoded a run at a time (C speed), not one by one: every layer is counted
    whatever its text holds (commas, brackets and quotes in strings, nesting), and each still within the bounds of
    one layer (32 deep, 100,000 values) and of the file (8,000,000 values)."""
    odd = ['{"Name": "a,b]", "x": [1, {"y": "},{"}]}', '"q\\"[{,"', "[[[], {}], 0]", '{"k": 1, "k": 2}', "null"]
    tail = [*odd * 2000, "[" * 32 + "]" * 32, *["{}"] * 40_000, *odd * 2000]
    body = ", ".join(["{}"] * MAX_LAYERS + tail)
    report = EngineReport.from_json(f'{{"Layers": [{body}], "Bindings": ["in,put"]}}')
    assert report.total_layers == MAX_LAYERS + len(tail) and report.bindings == ("in,put",)
    deep = body.replace("[" * 32, "[" * 33, 1).replace("]" * 32, "]" * 33, 1)
    with pytest.raises(ValueError, match="nested more than 32 deep"):
        EngineReport.from_json(f'{{"Layers": [{deep}]}}')
    wide = body + ", [" + ",".join(["0"] * 100_000) + "], {}"  # 100,001 values in one layer
    with pytest.raises(ValueError, match="more than 100,000 values"):
        EngineReport.from_json(f'{{"Layers": [{wide}]}}')
    many = ", ".join(["{}"] * MAX_LAYERS + [json.dumps([0] * 99)] * 80_000)  # 8,010,000 values
    with pytest.raises(ValueError, match="more than 8,000,000 values in all"):
        EngineReport.from_json(f'{{"Layers": [{many}]}}')
    assert EngineReport.from_json(f'{{"Layers": [{many.rsplit(", [", 101)[0]}]}}').total_layers == 89_899


def test_garbage_lines_do_not_raise() -> None:
    lines = [
        "Name: , LayerType: ",
        "Name: x, LayerType: t, Inputs: [ { Name: , Dimensions: [",
        "Name: y, LayerType: t, Outputs: [ { }], TacticValue: zz, StreamId: -x, Metadata:",
        "Layer(): , Tactic: , ->",
        "Layer(Conv): a, Tactic: 12, x[Float(1,a)] -> y (Half[1,2",
    ]
    report = EngineReport.from_text("Layers:\n" + "\n".join(lines))
    for layer in report.layers:
        layer.raw, layer.inputs, layer.outputs, layer.weights  # noqa: B018  (parsed on demand: must not raise)
    report.summary()
    report.to_json()


@pytest.mark.deadline  # a wall-clock bound on the parse
def test_parsing_ten_thousand_layers_is_quick() -> None:
    """Generous bound for a loaded two-core machine; bench/ measures the real figure."""
    text = "Layers:\n" + "\n".join(_oneline(f"layer_{i}") for i in range(MAX_LAYERS))
    started = time.perf_counter()
    report = EngineReport.from_text(text)
    report.summary()
    assert len(report.layers) == MAX_LAYERS
    assert time.perf_counter() - started < 20


def test_memory_words_inside_a_layer_line_are_not_memory() -> None:
    """Memory is read from the log's own lines: a layer named like a memory line (untrusted) changes none of it."""
    forged = "Total Weights Memory: 999 bytes, [MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: "
    text = f"Total Weights Memory: 4096 bytes\nLayers:\n{_oneline(forged + 'CPU 7 MiB, GPU 7 MiB')}"
    report = EngineReport.from_text(text)
    assert report.layers[0].name.startswith(forged)
    assert report.memory["weights"] == 4096
    assert report.memory["peak_cpu"] is None and report.memory["peak_gpu"] is None


def test_layers_read_on_first_use_are_whole_after_a_pickle_and_equal_to_their_json() -> None:
    """A ONELINE layer reads its fields on first use; a pickled report (a process boundary) keeps them, and the
    layer equals the one read back from its inspector JSON."""
    import pickle

    report = EngineReport.from_file(DATA / "trt10_16_trtexec_dumpLayerInfo.log")
    again = pickle.loads(pickle.dumps(report))
    assert [layer.to_dict() for layer in again.layers] == [layer.to_dict() for layer in report.layers]
    from_json = EngineReport.from_json(report.to_json())
    assert list(from_json.layers) == list(report.layers)
