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
