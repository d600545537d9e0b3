"""Twenty-second adversarial re-run (issue 35, D22-5): ``build(reuse=True)`` keys its engine by the model's content
hash, reading each external-data file by name (``model_identity``) before the build; the build then opens the files
again (``HeldData``) and builds from what it holds, and the engine is stored in the reuse cache under the key of
the bytes hashed first. The key does not depend on the folder: whoever can change ``w.bin`` between the two reads
(the owner of a shared model folder) has an engine of their weights filed under the key of the real ones, and a
later build of a trusted copy of that model (another folder, the real ``w.bin``) reuses it. Here the swap is made
right before the files are held, so the result does not depend on timing; real RTX builds."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from external_weight import N, model_with_external_weight

from trt_widget import Build
from trt_widget.provenance import manifest_path

POISON = (b"POISONED-WEIGHTS-the-trusted-model-never-had\n" * 40)[: N * 4]


def _engine_bytes(build: Build, output: Path) -> bytes:
    return output.read_bytes() if output.exists() else (build.engine or b"")


@pytest.mark.slow
def test_data_swapped_after_the_reuse_key_is_never_reused_for_the_real_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trt_widget._external_data as external

    shared, trusted, cache = tmp_path / "shared", tmp_path / "trusted", tmp_path / "cache"
    shared.mkdir()
    trusted.mkdir()
    model = model_with_external_weight(shared)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(shared / "w.bin", trusted / "w.bin")  # the real weights
    held = external.HeldData.__init__
    swapped: list[str] = []

    def swapped_first(self: Any, locations: list[str], directory: str, label: str) -> None:
        if Path(directory) == shared and not swapped:  # the key is made: what the folder's owner does now
            (shared / "w.bin.new").write_bytes(POISON)
            (shared / "w.bin.new").replace(shared / "w.bin")
            swapped.append("w.bin")
        held(self, locations, directory, label)

    monkeypatch.setattr(external.HeldData, "__init__", swapped_first)
    first_out = tmp_path / "first.engine"
    first = Build(str(model), output=str(first_out), reuse=True, reuse_dir=str(cache), isolation="thread",
                  history=False)  # fmt: skip
    first.start()
    first.wait(300)
    assert swapped and first.status == "succeeded", (first.status, first.error)
    assert POISON[:40] in _engine_bytes(first, first_out)  # built from what it held: the swapped weights
    assert "the engine is not kept for reuse" in first.status_detail, first.status_detail
    assert not list(cache.glob("*.engine")) and not manifest_path(first_out).exists()
    monkeypatch.setattr(external.HeldData, "__init__", held)
    second_out = tmp_path / "second.engine"
    second = Build(str(trusted / "m.onnx"), output=str(second_out), reuse=True, reuse_dir=str(cache),
                   isolation="thread", history=False)  # fmt: skip
    second.start()
    second.wait(300)
    assert second.status == "succeeded", (second.status, second.error)
    poisoned = POISON[:40] in _engine_bytes(second, second_out)
    assert not poisoned, f"the trusted model's build reused the swapped data's engine ({second.reused_from})"


@pytest.mark.slow
@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_data_edited_during_the_build_keeps_no_engine_for_reuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The owner's own edit of ``w.bin`` while the model is parsed: rewritten in place, the engine is built from
    one or the other, so it is neither kept for reuse nor given a manifest; a new file renamed onto it fails the
    build (the name no longer leads to the file checked), keeping nothing either."""
    import trt_widget._engine as engine_module
    import trt_widget._external_data as external

    # files written long ago (their stat stands for their bytes), so parsed in place: else from a private copy
    monkeypatch.setattr(external, "RACY_NS", 0)
    folder, cache, output = tmp_path / "m", tmp_path / "cache", tmp_path / "m.engine"
    folder.mkdir()
    model = model_with_external_weight(folder)
    parse_at = engine_module._parse_at
    edited: list[bool] = []

    def edit_while_parsing(*args: Any) -> bool:
        ok = parse_at(*args)
        if how == "in place":
            with open(folder / "w.bin", "r+b") as handle:
                handle.write(POISON[:8])
        else:
            (folder / "w.bin.new").write_bytes(POISON)
            (folder / "w.bin.new").replace(folder / "w.bin")
        edited.append(True)
        return ok

    monkeypatch.setattr(engine_module, "_parse_at", edit_while_parsing)
    build = Build(str(model), output=str(output), reuse=True, reuse_dir=str(cache), isolation="thread",
                  history=False)  # fmt: skip
    build.start()
    build.wait(300)
    assert edited
    assert not list(cache.glob("*.engine")), "an engine of files that changed during its build was kept for reuse"
    if how == "replaced":
        assert build.status == "failed" and "was replaced while the model was parsed" in str(build.error)
        return
    assert build.status == "succeeded", (build.status, build.error)
    assert output.exists()  # the engine is the user's all the same
    assert "the model's files changed during the build; the engine is not kept for reuse" in build.status_detail
    assert not manifest_path(output).exists(), "a manifest claims bytes the engine may not be built from"
    monkeypatch.setattr(engine_module, "_parse_at", parse_at)
    again = Build(str(model), output=str(output), reuse=True, reuse_dir=str(cache), isolation="thread",
                  history=False)  # fmt: skip
    again.start()
    again.wait(300)
    assert again.status == "succeeded" and again.reused_from is None, again.status_detail


@pytest.mark.slow
def test_a_save_after_a_swap_writes_no_manifest_and_nothing_reuses_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of D22-5's fix: only the build's own provenance step compared the files hashed with those read;
    ``save()`` (and ``manifest()``, a bundle's manifest) hashed the model after the build, with ``w.bin`` swapped
    back, and wrote a manifest of the real weights beside the engine of the swapped ones, which a later
    ``reuse=True`` build of a trusted copy then reused."""
    import warnings

    import trt_widget._external_data as external

    shared, trusted = tmp_path / "shared", tmp_path / "trusted"
    shared.mkdir()
    trusted.mkdir()
    model = model_with_external_weight(shared)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(shared / "w.bin", trusted / "w.bin")
    real = (shared / "w.bin").read_bytes()
    held = external.HeldData.__init__

    def swapped_first(self: Any, locations: list[str], directory: str, label: str) -> None:
        if Path(directory) == shared:
            (shared / "w.bin.new").write_bytes(POISON)
            (shared / "w.bin.new").replace(shared / "w.bin")
        held(self, locations, directory, label)

    monkeypatch.setattr(external.HeldData, "__init__", swapped_first)
    first = Build(str(model), isolation="thread", history=False).start()
    first.wait(300)
    monkeypatch.setattr(external.HeldData, "__init__", held)
    (shared / "w.bin.new").write_bytes(real)
    (shared / "w.bin.new").replace(shared / "w.bin")  # swapped back once the build is done
    assert first.status == "succeeded", (first.status, first.error)
    out = tmp_path / "out.engine"
    manifest_path(out).write_text("{}")  # an older engine's manifest beside the path saved to
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        first.save(out)
    assert POISON[:40] in out.read_bytes()
    assert not manifest_path(out).exists(), "a manifest beside the engine claims bytes it was not built from"
    assert any("the model's files changed during the build" in str(w.message) for w in said), said
    second = Build(str(trusted / "m.onnx"), output=str(out), reuse=True, reuse_dir=str(tmp_path / "cache"),
                   isolation="thread", history=False)  # fmt: skip
    second.start()
    second.wait(300)
    assert second.status == "succeeded" and second.reused_from is None, second.status_detail
    assert POISON[:40] not in out.read_bytes()
