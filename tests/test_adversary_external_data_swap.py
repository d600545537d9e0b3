"""Twenty-first re-run, second half (issue 35): the model-file rule ("no symbolic link that leads out of the
directory", docs/security.md) is checked on names, then TensorRT's parser opens the names again, following links.
A model folder another user can change (a shared model folder) has its ``w.bin`` swapped for a link to
``/etc/shadow`` between trt_widget's check (``check_external_data``: the resolved path is inside) and the parse: the
secret's bytes become the model's weights and are kept in the engine (/srv/adv21b/build_swap.sh wins that race
against ``trt-widget build`` as root, the folder's owner ``nobody`` flipping the file; 1 try in ~15). Here the swap
is made right after the check, so the result does not depend on timing; a real RTX build, in this process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from external_weight import N, model_with_external_weight

from trt_widget import Build

SECRET = (b"root:$6$a-secret-the-model-never-named$:19000:0:99999:7:::\n" * 40)[: N * 4]


@pytest.mark.slow
def test_external_data_swapped_for_a_link_after_the_check_never_reaches_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trt_widget._engine as engine_module

    folder = tmp_path / "shared-model"
    folder.mkdir()
    model = model_with_external_weight(folder)
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    checked = engine_module.check_external_data  # type: ignore[attr-defined]  # imported there: patched there
    swapped: list[str] = []

    def then_swapped(locations: list[str], directory: str | None, label: str, hint: str = "") -> None:
        checked(locations, directory, label, hint)  # passed: w.bin is a regular file inside the folder
        if not swapped:  # what the folder's owner does now
            os.rename(folder / "w.bin", folder / "w.bin.moved")
            os.symlink(secret, folder / "w.bin")
            swapped.append("w.bin")

    monkeypatch.setattr(engine_module, "check_external_data", then_swapped)
    output = tmp_path / "m.engine"
    build = Build(str(model), output=str(output), isolation="thread", history=False)
    build.start()
    build.wait(300)
    assert swapped, "the build never checked the model's external data"
    kept = output.read_bytes() if output.exists() else b""
    leaked = SECRET[:40] in kept or SECRET[:40] in (build.engine or b"")
    assert not leaked, f"the engine holds the bytes of the file w.bin was linked to ({build.status})"
    # refused, for the swap (the files are held once, checked on their descriptors), not for anything else
    assert build.status == "failed", build.status
    assert "'w.bin', which is no longer a file inside the model's directory" in str(build.error), build.error
