"""The types where modules meet agree with each other and with the JavaScript that reads them: the build and phase
statuses (``Literal``), the phase row (``PhaseRow``) and what ``js/src/build`` says it reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from trt_widget import models
from trt_widget._build import TIMING_COLUMNS, Build
from trt_widget._phases import PHASE_STATUSES, PhaseRow, PhaseStatus
from trt_widget._status import BUILD_STATUSES, BuildStatus

JS = Path(__file__).resolve().parents[1] / "js" / "src" / "build"


def test_the_status_literals_are_the_status_lists() -> None:
    assert get_args(BuildStatus) == BUILD_STATUSES
    assert get_args(PhaseStatus) == PHASE_STATUSES


def test_the_js_row_status_is_the_phase_status() -> None:
    typedef = re.search(r"@typedef \{([^}]*)\} RowStatus", (JS / "structure.js").read_text(encoding="utf-8"))
    assert typedef is not None
    assert set(re.findall(r'"([\w-]+)"', typedef.group(1))) == set(get_args(PhaseStatus))


def test_the_js_traits_say_every_build_status_and_the_row_keys() -> None:
    source = (JS / "widget.js").read_text(encoding="utf-8")
    status = re.search(r"@property \{string\} status ([\w |]+)\n", source)
    assert status is not None and [s.strip() for s in status.group(1).split("|")] == list(BUILD_STATUSES)
    keys = re.search(r"phases_json the phase rows as one JSON text: \[\{([^}]*)\}", source)
    assert keys is not None
    assert [k.strip() for k in keys.group(1).replace("*", "").split(",")] == list(PhaseRow.__annotations__)


def test_a_real_builds_rows_have_the_phase_row_keys_and_types() -> None:
    build = Build(models.deep_residual(2), history=False, resources=False, isolation="thread").start()
    assert build.wait(120) == "succeeded"
    rows = build.timings()
    assert rows and all(list(row) == list(PhaseRow.__annotations__) == TIMING_COLUMNS for row in rows)
    assert all(row["status"] in get_args(PhaseStatus) for row in rows)
