"""Bad ``watch(events=..., budget=...)`` values are refused when the watch is made, with the message a Build gives
(each caught build failed to apply them unseen and ran without them); good ones are taken."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

import trt_widget
from trt_widget.watch import watch_call


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"budget": -1}, ValueError, "budget must be a positive number"),
        ({"budget": float("nan")}, ValueError, "budget must be a positive number"),
        ({"budget": True}, ValueError, "budget must be a positive number"),
        ({"budget": "10"}, ValueError, "budget must be a positive number"),
        ({"events": 42}, TypeError, "events= must be a file path"),
        ({"events": "/nonexistent-dir/events.jsonl"}, FileNotFoundError, "directory does not exist"),
    ],
)
def test_bad_watch_settings_are_refused_at_once(settings: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        trt_widget.watch(**settings)
    with pytest.raises(error, match=match):
        watch_call(print, watch_settings=settings)


def test_a_directory_as_events_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        trt_widget.watch(events=tmp_path)


def test_good_settings_are_taken(tmp_path: Path) -> None:
    good: list[dict[str, Any]] = [{"budget": 30}, {"events": tmp_path / "e.jsonl"}, {"events": io.StringIO()}]
    for settings in [*good, {"events": print}]:
        ((name, value),) = settings.items()
        assert trt_widget.watch(**settings).settings.get(name) is value
