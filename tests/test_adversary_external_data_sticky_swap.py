"""Twenty-second adversarial re-run (issue 35): the twenty-first's D4 fix parses a model in place where no other
user can rename the names in its folder, and counts a sticky folder (``chmod +t``) as such. But the sticky bit lets
a user rename their *own* entries: in a shared drop folder (mode 1770, or 1777 as /tmp where fs.protected_symlinks
is 0), the user who put ``m.onnx`` and ``w.bin`` there swaps ``w.bin`` for a link to ``/etc/shadow`` while the
parser reads it and back to the very file held (a hard link keeps its inode), so ``check_unchanged`` passes and the
secret's bytes are the engine's weights (/srv/adv22/sticky_swap.sh: try 6 as root, ``nobody`` flipping). Here the
swap is made by ``nobody`` around the parse itself, so the result does not depend on timing; a real RTX build."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from external_weight import N, model_with_external_weight
from other_user import as_nobody

from trt_widget import Build

SECRET = (b"root:$6$a-secret-the-model-never-named$:19000:0:99999:7:::\n" * 40)[: N * 4]


@pytest.mark.slow
def test_another_users_data_in_a_sticky_folder_is_not_swapped_during_the_parse(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trt_widget._engine as engine_module

    made = shared / "made"  # where nobody can read them (tmp_path is 0700)
    made.mkdir(mode=0o755)
    model_with_external_weight(made)
    for name in ("m.onnx", "w.bin"):
        (made / name).chmod(0o644)
    drop = shared / "drop"  # a team's drop folder: the group may add files, the sticky bit guards each one's own
    drop.mkdir()
    shutil.chown(drop, "root", "nogroup")
    drop.chmod(0o1770)
    as_nobody("cp", str(made / "m.onnx"), str(made / "w.bin"), str(drop))
    as_nobody("ln", str(drop / "w.bin"), str(drop / "keep"))  # their own hard link: the inode held, kept
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    parse = engine_module._parse_at
    swapped: list[str] = []
    parsed: list[str] = []

    def swapped_meanwhile(parser: Any, given: str | bytes, data: Any) -> bool:
        parsed.append(str(given))
        if given == str(drop / "m.onnx"):  # parsed in place: what the files' owner does meanwhile
            as_nobody("ln", "-s", str(secret), str(drop / "l.tmp"))
            as_nobody("mv", "-T", str(drop / "l.tmp"), str(drop / "w.bin"))
            swapped.append("w.bin")
        try:
            return bool(parse(parser, given, data))
        finally:
            if swapped:
                as_nobody("ln", str(drop / "keep"), str(drop / "r.tmp"))
                as_nobody("mv", "-T", str(drop / "r.tmp"), str(drop / "w.bin"))

    monkeypatch.setattr(engine_module, "_parse_at", swapped_meanwhile)
    output = tmp_path / "m.engine"
    build = Build(str(drop / "m.onnx"), output=str(output), isolation="thread", history=False)
    build.start()
    build.wait(300)
    assert parsed, build.error  # the parser was asked (the check ran through this very wrapper)
    assert build.status == "succeeded", build.error  # the files held were parsed: the build stands
    assert os.path.samefile(drop / "w.bin", drop / "keep")
    kept = output.read_bytes() if output.exists() else b""
    leaked = SECRET[:40] in kept or SECRET[:40] in (build.engine or b"")
    assert not leaked, f"the engine holds the bytes of the file w.bin was linked to ({build.status}, {swapped})"
