"""Twenty-first re-run, second half (issue 35): ``bundle --include-model`` of a model whose folder another user can
change (a shared model folder). The bundle checks each external-data file with its links resolved (inside the
model's folder: ``allowed_file``) when it lists what to pack, and opens the file by name again, following links,
when it copies it (``_add_file``): a ``w.bin`` swapped for a link to ``/etc/shadow`` in between is packed, and the
report meant for sharing carries the secret (/srv/adv21b/bundle_swap.sh wins that race against the real command as
root, the folder's owner ``nobody`` flipping the file). Here the swap is made at that very point, after the
listing, so the result does not depend on timing; a real build and the real bundle writer."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import onnx
import pytest

from trt_widget import Build
from trt_widget.models import deep_residual
from trt_widget.provenance import _bundle

SECRET = b"root:$6$not-for-a-bug-report$\n"


@pytest.mark.slow
def test_a_data_file_swapped_for_a_link_after_the_check_is_not_packed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "shared-model"
    folder.mkdir()
    model = folder / "m.onnx"
    onnx.save_model(
        deep_residual(2), model, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
        size_threshold=0,
    )  # fmt: skip
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    build = Build(str(model))
    build.start()
    build.wait(300)
    assert build.status == "succeeded", build.status_detail

    listed = _bundle._packable_inputs
    swapped: list[str] = []

    def then_swapped(of: Build) -> tuple[dict[str, tuple[str, str, int | None]], list[str]]:
        inputs, left_out = listed(of)
        assert "w.bin" in inputs, inputs  # checked: a regular file in the folder
        os.rename(folder / "w.bin", folder / "w.bin.moved")  # what the folder's owner does now
        os.symlink(secret, folder / "w.bin")
        swapped.append("w.bin")
        return inputs, left_out

    monkeypatch.setattr(_bundle, "_packable_inputs", then_swapped)
    written = _bundle.write_bundle(build, tmp_path / "report.zip", include_model=True)
    with zipfile.ZipFile(written) as archive:
        packed = {name: archive.read(name) for name in archive.namelist() if name.startswith("model/")}
    assert swapped, "the bundle never listed the model's files"
    assert not any(SECRET in data for data in packed.values()), sorted(packed)
    assert sorted(packed) == ["model/m.onnx"], sorted(packed)  # w.bin, a link leading out by then: left out
