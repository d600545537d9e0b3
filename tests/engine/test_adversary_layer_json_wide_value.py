"""Twenty-second adversarial re-run (issue 35, J22-4): ``load_layer_json`` reads a layer JSON one top-level value
and one layer at a time, but decodes each of them whole (``raw_decode``) before ``check_outside`` counts it. One
value of empty objects (``{"x": [{},{},...], "Layers": []}``, or one layer that is such a list) is built in full:
a 32 MiB file took ``inspect`` to 1.67 GB peak (~50 bytes per byte; ``inspect`` reads files up to 256 MiB:
~13 GB), the nineteenth re-run's J1 (845 MB for 16 MiB) again (/srv/adv22/inspect_wide_value.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

WIDE_MIB = 16
PEAK_LIMIT_KIB = 400 << 10  # a 16 MiB file: ~830 MB peak today; the text and a count (~150 MB) once bounded


@pytest.mark.parametrize("where", ["a top-level value", "one layer"])
def test_one_wide_value_of_a_layer_json_is_not_built_whole(where: str, tmp_path: Path) -> None:
    count = (WIDE_MIB << 20) // 3
    wide = "[" + "{}," * (count - 1) + "{}]"
    text = '{"x":' + wide + ',"Layers":[]}' if where == "a top-level value" else '{"Layers":[' + wide + "]}"
    path = tmp_path / "wide.json"
    path.write_text(text)
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-m', 'trt_widget', 'inspect', sys.argv[1]], capture_output=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stderr.write(done.stderr.decode(errors='replace')[-2000:])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    status, peak = (int(word) for word in done.stdout.split())
    assert status != 0 and "wide.json: no engine layer information in it" in done.stderr, done.stderr  # no layers
    assert peak < PEAK_LIMIT_KIB, f"inspect of {WIDE_MIB} MiB peaked at {peak:,} KiB"
