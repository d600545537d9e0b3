"""Nineteenth adversarial re-run (issue 35): U2's family. A recording is outside text and may hold a lone surrogate
in any string (the JSON escape ``"\\udcff"``, which ``json.dumps`` writes for a path that is not UTF-8); the eighteenth
re-run's fix writes every file with such text escaped (HTML report, trace, SVG timeline, ...). The matplotlib
timeline (``report.timeline.to_figure`` / ``save_png``) hands the phase names to matplotlib as they are, whose
FreeType binding refuses the surrogate: ``save_png`` of such a replay raises "TypeError: set_text(): incompatible
function arguments" (pybind's signature list), where ``save_svg`` of the same build writes its file. A real RTX
build's recording, its phase names changed."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from cli_recordings import recorded_events

from trt_widget import Build, BuildWidget
from trt_widget.report import timeline


def _replay(tmp_path: Path, prefix: str) -> Build:
    recorded = [json.loads(line) for line in recorded_events(tmp_path)]
    for e in recorded:  # every phase's name (the wide ones are drawn with their label)
        if e["event"] in ("phase_start", "step", "phase_finish"):
            e["name"] = prefix + e["name"]
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in recorded))  # "\udcff" as its JSON escape
    replay = Build.from_events(str(hostile))
    replay.start().result(timeout=60)
    assert replay.status == "succeeded", replay.error
    return replay


@pytest.mark.slow
def test_a_png_timeline_of_a_replay_with_plain_names_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    replay = _replay(tmp_path, "sec")  # the control
    assert Path(timeline.save_png(replay, tmp_path / "t.png")).stat().st_size > 0


@pytest.mark.slow
def test_a_png_timeline_of_a_replay_with_a_lone_surrogate_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    replay = _replay(tmp_path, "sec\udcff")
    assert Path(timeline.save_svg(replay, tmp_path / "t.svg")).stat().st_size > 0  # the SVG: written (U2's fix)
    assert Path(timeline.save_png(replay, tmp_path / "t.png")).stat().st_size > 0


@pytest.mark.slow
def test_the_display_bundle_of_a_replay_with_a_lone_surrogate_packs(tmp_path: Path) -> None:
    packer = pytest.importorskip("jupyter_client.session").json_packer
    replay = _replay(tmp_path, "sec\ud800")
    widget = BuildWidget(replay)
    data, _ = widget._repr_mimebundle_()
    widget.close()
    for kind in ("text/plain", "text/markdown", "text/html"):
        assert packer({kind: data[kind]}), kind  # the kernel's display_data message
    assert packer({"text/html": replay.timings()._repr_html_(), "text/plain": repr(replay.timings())})  # its timings


@pytest.mark.slow
def test_the_text_of_a_replay_with_bidi_and_c1_names_is_escaped(tmp_path: Path) -> None:
    from trt_widget._format import UNSAFE_CHARACTERS
    from trt_widget.report import to_text

    replay = _replay(tmp_path, "E\x9b31m\u202eX")
    widget = BuildWidget(replay)
    data, _ = widget._repr_mimebundle_()
    widget.close()
    unsafe = re.compile(f"[{UNSAFE_CHARACTERS}]")
    texts = [to_text(replay), *(str(data[k]) for k in ("text/plain", "text/markdown", "text/html"))]
    texts += [replay.timings()._repr_html_(), repr(replay.timings())]  # the timings' own display
    if importlib.util.find_spec("matplotlib"):  # the PNG timeline's labels: the same escape
        texts += [t.get_text() for t in timeline.to_figure(replay).axes[0].texts]
    for text in texts:
        assert "E" in text and not unsafe.search(text.replace("\n", "")), ascii(text[:300])
