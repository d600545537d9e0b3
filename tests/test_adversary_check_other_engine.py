"""Thirteenth adversarial re-run (issue 35, C1): ``trt-widget check ENGINE`` verifies the file its manifest names,
not ENGINE. An engine copied with its manifest under a new name (``cp a.engine b.engine``, the same for the
manifest), and then replaced, is still "compatible", exit 0: the sha256 checked is the original's. ``inspect``
refuses the same pair ("its manifest describes another engine")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from attacks import built_engine

ENV = {**os.environ, "TRT_WIDGET_HISTORY": "off"}


def test_check_judges_the_engine_it_is_given_not_the_one_its_manifest_names(tmp_path: Path) -> None:
    engine = built_engine(tmp_path)  # model.engine and model.engine.manifest.json, from a real RTX build
    copy = tmp_path / "deploy.engine"
    shutil.copyfile(tmp_path / "model.engine.manifest.json", tmp_path / "deploy.engine.manifest.json")
    copy.write_bytes(os.urandom(engine.stat().st_size))  # the copy replaced since: not the engine built
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "check", str(copy), "--json"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=ENV,
    )  # fmt: skip
    said = json.loads(done.stdout)
    assert said["loads"] is not True, said
    assert done.returncode != 0, said


def test_check_takes_a_renamed_copy_whose_bytes_its_manifest_records(tmp_path: Path) -> None:
    """``cp model.engine deploy.engine`` with its manifest (or a ``mv`` of both): the manifest names the old file,
    but the sha256 ``check`` computes of deploy.engine is the one it records, so it says what it says of the
    original, not "cannot tell"."""
    engine = built_engine(tmp_path)
    shutil.copyfile(tmp_path / "model.engine.manifest.json", tmp_path / "deploy.engine.manifest.json")
    shutil.copyfile(engine, tmp_path / "deploy.engine")

    def check(path: Path) -> tuple[int, dict[str, object]]:
        done = subprocess.run(
            [sys.executable, "-m", "trt_widget", "check", str(path), "--json"],
            capture_output=True, text=True, timeout=300, cwd=tmp_path, env=ENV,
        )  # fmt: skip
        said = json.loads(done.stdout)
        said.pop("engine")  # the path given
        return done.returncode, said

    original = check(engine)
    assert original[1]["verdict"] == "compatible", original
    engine.unlink()  # a move, not a copy: the file the manifest names is gone
    (tmp_path / "model.engine.manifest.json").unlink()
    assert check(tmp_path / "deploy.engine") == original
