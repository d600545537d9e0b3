"""Timeline export: well-formed, escaped SVG with one box per instance (runs grouped), PNG via matplotlib."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, cast

import pytest

from trt_widget import Build
from trt_widget import history as hist
from trt_widget.history import HistoryStore, list_builds
from trt_widget.report import timeline

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the real user cache."""
    monkeypatch.setenv(hist.ENV, str(tmp_path / "history.sqlite"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, resnet50_bytes: bytes) -> tuple[Build, HistoryStore]:
    store = HistoryStore(tmp_path_factory.mktemp("timeline") / "h.sqlite")
    build = Build(resnet50_bytes, history=store).start()
    assert build.wait(300) == "succeeded"
    assert build.history is not None
    assert build.history.recorded.wait(60)
    return build, store


def _phase_rects(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)  # raises on malformed XML
    return [r for r in root.iter(f"{SVG}rect") if "phase" in r.get("class", "").split()]


def _title(rect: ET.Element) -> str:
    """The tooltip text of a phase's rectangle."""
    title = rect.find(f"{SVG}title")
    assert title is not None and title.text is not None, ET.tostring(rect)
    return title.text


def _number(rect: ET.Element, name: str) -> float:
    value = rect.get(name)
    assert value is not None, (name, ET.tostring(rect))
    return float(value)


def _row(
    id: int, name: str, parent: int | None, depth: int, start: float, end: float | None, status: str = "done"
) -> dict[str, Any]:
    return {
        "id": id,
        "name": name,
        "parent": parent,
        "depth": depth,
        "start_s": start,
        "end_s": end,
        "duration_s": None if end is None else end - start,
        "step": 1,
        "num_steps": 1,
        "status": status,
    }


def test_svg_of_a_real_build_has_one_rect_per_instance(built: tuple[Build, HistoryStore]) -> None:
    build, _ = built
    rows = build.timings()
    svg = timeline.to_svg(build)
    rects = _phase_rects(svg)
    assert len(rects) == len(rows)  # resnet50 on RTX has no run of >= 5 same-name siblings
    titles = [_title(r) for r in rects]
    assert sorted(t.splitlines()[0] for t in titles) == sorted(r["name"] for r in rows)
    assert all(_number(r, "x") >= 0 and _number(r, "width") >= 1 for r in rects)
    right = max(_number(r, "x") + _number(r, "width") for r in rects)
    assert right <= 900
    assert timeline.to_svg(rows) != svg  # rows alone do not know the time after the last phase
    assert len(_phase_rects(timeline.to_svg(rows))) == len(rows)


def test_history_record_draws_the_same(built: tuple[Build, HistoryStore]) -> None:
    build, store = built
    record = store.get(list_builds(store)[0]["id"])
    assert record is not None and timeline.to_svg(record) == timeline.to_svg(build)


def test_runs_of_same_name_siblings_are_grouped() -> None:
    """Synthetic rows: a root with 7 identical children (each with a child of its own), then 2 others, then 4."""
    rows = [_row(0, "root", None, 0, 0.0, 10.0)]
    for i in range(7):
        rows.append(_row(len(rows), "Computing costs", 0, 1, i * 0.5, i * 0.5 + 0.4))
        rows.append(_row(len(rows), "inner", len(rows) - 1, 2, i * 0.5, i * 0.5 + 0.1))
    rows.append(_row(len(rows), "Timing", 0, 1, 4.0, 5.0))
    rows.append(_row(len(rows), "Refit", 0, 1, 5.0, 6.0))
    for i in range(4):  # a run of 4 stays 4 boxes
        rows.append(_row(len(rows), "short run", 0, 1, 6 + i * 0.5, 6.4 + i * 0.5))
    rects = _phase_rects(timeline.to_svg(rows))
    assert len(rects) == 1 + 1 + 2 + 4
    groups = [r for r in rects if "group" in r.get("class", "")]
    assert len(groups) == 1
    title = _title(groups[0])
    assert title.startswith("Computing costs ×7") and "7 instances" in title and "7 nested" in title
    boxes, t_end = timeline.layout(rows)
    group = next(b for b in boxes if b.count > 1)
    assert (group.start_s, group.end_s, group.busy_s) == pytest.approx((0.0, 3.4, 7 * 0.4))
    assert t_end == 10.0


def test_a_phase_without_steps_shows_no_step_count() -> None:
    """A phase TensorRT announced with no steps reads "done", not "steps 0/0 · done"; one with steps keeps them."""
    rows = [_row(0, "root", None, 0, 0.0, 2.0), _row(1, "Cloning network graph", 0, 1, 0.1, 0.2)]
    rows[0].update(step=5, num_steps=6)
    rows[1].update(step=0, num_steps=0)
    for i in range(5):  # a run of 5 without steps, drawn as one box
        rows.append({**_row(2 + i, "Same", 0, 1, 0.3 + i * 0.1, 0.35 + i * 0.1), "step": 0, "num_steps": 0})
    titles = {_title(r).splitlines()[0]: _title(r) for r in _phase_rects(timeline.to_svg(rows))}
    assert titles["root"].splitlines()[-1] == "5 steps · done"  # ended early, done: no "5/6"
    assert titles["Cloning network graph"].splitlines()[-1] == "done"
    assert titles["Same ×5"].splitlines()[-1] == "done"


def test_names_are_escaped() -> None:
    evil = "<script>alert('x')</script> & \"quotes\" \x07bell"
    rows = [_row(0, evil, None, 0, 0.0, 1.0), _row(1, "ok", 0, 1, 0.1, None, "running")]
    svg = timeline.to_svg(rows)
    assert "<script" not in svg
    rects = _phase_rects(svg)
    assert len(rects) == 2
    assert _title(rects[0]).splitlines()[0] == evil.replace("\x07", "\ufffd")
    labels = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert any(label and label.startswith("<script>") for label in labels)  # shown as text, not markup


def test_empty_and_bad_input() -> None:
    assert _phase_rects(timeline.to_svg([])) == []
    with pytest.raises(TypeError, match="timings rows"):
        timeline.to_svg(cast(Any, 42))  # the wrong type on purpose: the check is tested
    with pytest.raises(ValueError, match="lacks"):
        timeline.to_svg([{"name": "x"}])


def test_save_svg(built: tuple[Build, HistoryStore], tmp_path: Path) -> None:
    build, _ = built
    path = timeline.save_svg(build, tmp_path / "t.svg", width=600)
    text = Path(path).read_text(encoding="utf-8")
    assert ET.fromstring(text).get("width") == "600" and len(_phase_rects(text)) == len(build.timings())
    assert [p.name for p in tmp_path.iterdir()] == ["t.svg"]  # no temporary left behind


def test_png_via_matplotlib(built: tuple[Build, HistoryStore], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    build, _ = built
    fig = timeline.to_figure(build)
    assert len(fig.axes[0].patches) == len(build.timings())
    path = Path(timeline.save_png(build, tmp_path / "t.png"))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000


def test_figure_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        timeline.to_figure([_row(0, "x", None, 0, 0.0, 1.0)])


def test_a_phase_ended_early_reads_done_and_an_unfinished_one_keeps_its_fraction() -> None:
    """ "steps 5/6 · done" reads as unfinished: an early-ended done phase shows its count; a cancelled one k/n."""
    rows = [_row(0, "root", None, 0, 0.0, 2.0, "finished-early"), _row(1, "Stopped", 0, 1, 0.1, 0.2, "cancelled")]
    rows[0].update(step=5, num_steps=6)
    rows[1].update(step=2, num_steps=3)
    titles = {_title(r).splitlines()[0]: _title(r) for r in _phase_rects(timeline.to_svg(rows))}
    assert titles["root"].splitlines()[-1] == "5 steps · done"
    assert titles["Stopped"].splitlines()[-1] == "steps 2/3 · cancelled"
