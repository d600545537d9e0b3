"""The types where modules meet agree with each other and with the JavaScript that reads them: the build and phase
statuses (``Literal``), the phase row (``PhaseRow``) and what ``js/src/build`` says it reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

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
    # plus the view's own "interrupted": a row still running when the kernel went away (no phase model says it)
    assert set(re.findall(r'"([\w-]+)"', typedef.group(1))) == {*get_args(PhaseStatus), "interrupted"}


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


def test_the_snapshot_type_is_the_widgets_synced_state_and_a_real_snapshot() -> None:
    from trt_widget import BuildWidget
    from trt_widget._snapshot import Snapshot, snapshot

    fields = list(Snapshot.__annotations__)
    # the rows travel encoded
    wire = {*fields} - {"phases"} | {"phases_json", "phases_seq", "phases_delta"}
    assert wire == set(BuildWidget.class_own_traits(sync=True))
    build = Build(models.deep_residual(2), history=False, resources=False, isolation="thread")
    assert list(snapshot(build)) == fields
    build.start().wait(120)
    final = snapshot(build)
    assert list(final) == fields and final["status"] == "succeeded" and final["phases"] == build.model.rows()


@pytest.mark.slow  # a whole mypy run: ~20 s
def test_a_user_of_the_package_gets_the_types(tmp_path: Path) -> None:
    """``from trt_widget import Build, BuildWidget`` names the real classes for a type checker (the names load
    lazily at run time): ``await build`` is bytes, ``widget.result`` Build's own signature, statuses Literals."""
    from mypy import api

    user = tmp_path / "user.py"
    user.write_text(
        "from trt_widget import Build, BuildWidget\n"
        "def use(b: Build, w: BuildWidget) -> None:\n"
        "    reveal_type(w.result)\n"
        "    reveal_type(b.wait())\n"
        "    reveal_type(w.start())\n"
        "async def wait(b: Build) -> None:\n"
        "    reveal_type(await b)\n",
        encoding="utf-8",
    )
    out, _err, _code = api.run(["--strict", "--no-incremental", str(user)])
    revealed = re.findall(r'Revealed type is "(.*)"', out)
    assert revealed[0] == "def (timeout: float | None =) -> bytes", out
    assert revealed[1].startswith("Literal['idle'] | Literal['queued']"), out
    assert revealed[2] == "trt_widget._widget.BuildWidget" and revealed[3] == "bytes", out
