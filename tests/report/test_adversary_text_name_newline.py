"""Twentieth adversarial re-run (issue 35, I2): docs/security.md promises that a newline inside a name prints as
``\\x0a`` in a notebook display's ``text/plain`` (what IPython in a terminal prints), as in every terminal front end.
The inline report's text (``report.to_text``, a displayed ``BuildWidget``'s ``text/plain``) escaped each line of a
row but kept a name's newline as a line break: a phase named "a\\nb" printed as two lines, the second a row of its
own (a forged phase). A real RTX build's recording, its phase names changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_recordings import recorded_events

from trt_widget import Build, BuildWidget
from trt_widget._format import UNSAFE_CHARACTERS
from trt_widget.report import to_text


def _replay(tmp_path: Path, prefix: str) -> Build:
    recorded = [json.loads(line) for line in recorded_events(tmp_path)]
    for e in recorded:
        if e["event"] in ("phase_start", "step", "phase_finish"):
            e["name"] = prefix + e["name"]
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("".join(json.dumps(e) + "\n" for e in recorded))
    replay = Build.from_events(str(hostile))
    replay.start().result(timeout=60)
    assert replay.status == "succeeded", replay.error
    return replay


@pytest.mark.slow
def test_the_text_of_a_replay_shows_a_newline_in_a_name_as_its_escape(tmp_path: Path) -> None:
    replay = _replay(tmp_path, "a\nb\x1b[31m\u202eX")
    widget = BuildWidget(replay)
    data, _ = widget._repr_mimebundle_()
    widget.close()
    unsafe = re.compile(f"[{UNSAFE_CHARACTERS}]")
    for text in (to_text(replay), str(data["text/plain"])):
        rows = text.splitlines()
        assert any("a\\x0ab\\x1b[31m\\u202eX" in row for row in rows), ascii(text[:600])  # each name as written
        # before the fix: every name's "b\x1b[31m\u202eX..." on a line of its own
        assert not any(row.lstrip().startswith("b") for row in rows), ascii(text[:600])
        assert not any(unsafe.search(row) for row in rows), ascii(text[:600])
