"""Twentieth adversarial re-run (issue 35, M2): the matplotlib timeline (``report.timeline.to_figure`` /
``save_png``) gave phase names to matplotlib's text, which reads a name between two ``$`` as mathtext: a name
``a$\\frac{$b`` made ``save_png`` raise matplotlib's ValueError (a mathtext parse error) and ``$x^2$`` drew as a
formula, not as written. The labels are plain text. A real RTX build's recording, its phase names changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_recordings import recorded_events

from trt_widget import Build
from trt_widget.report import timeline


def _replay(tmp_path: Path, prefix: str) -> Build:
    recorded = [json.loads(line) for line in recorded_events(tmp_path)]
    for e in recorded:  # every phase's name (the wide ones are drawn with their label)
        if e["event"] in ("phase_start", "step", "phase_finish"):
            e["name"] = prefix + e["name"]
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in recorded))
    replay = Build.from_events(str(hostile))
    replay.start().result(timeout=60)
    assert replay.status == "succeeded", replay.error
    return replay


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a$\\frac{$b ", "$x^2$ "])  # mathtext that fails; mathtext that draws a formula
def test_a_png_timeline_of_names_with_dollars_shows_them_as_written(tmp_path: Path, name: str) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    replay = _replay(tmp_path, name)
    assert Path(timeline.save_png(replay, tmp_path / "t.png")).stat().st_size > 0  # before: ValueError (mathtext)
    figure = timeline.to_figure(replay)
    texts = [t.get_text() for t in figure.axes[0].texts]
    labels = [t for t in figure.axes[0].texts if t.get_text().startswith(name)]  # the whole name and more
    assert labels, texts
    # a name cut to its bar (how far depends on the recorded durations) is the name as written up to the cut
    cut = [text for text in texts if "$" in text and not text.startswith(name)]
    assert all(text.endswith("…") and name.startswith(text[:-1]) for text in cut), texts
    renderer = FigureCanvasAgg(figure).get_renderer()  # type: ignore[no-untyped-call]
    for label in labels:  # drawn as its characters: as wide as the same text drawn plain (before: x² is narrower)
        plain = figure.text(0, 0, label.get_text(), fontproperties=label.get_fontproperties(), parse_math=False)
        assert label.get_window_extent(renderer).width == pytest.approx(plain.get_window_extent(renderer).width)
