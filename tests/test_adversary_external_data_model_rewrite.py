"""Twenty-third adversarial re-run (issue 35, W23-1): the builder process maps the model file (shared) and reads its
external-data locations from that map, checks and holds those files, then gives the parser the same map. Where the
model file belongs to another user in the user's own folder (no one else may rename anything there: parsed in
place, D22-2's rule), its owner rewrites it in place between the check and the parse: ``w.bin`` becomes ``k.bin``,
a root-only file of that folder never checked nor held, and root's engine holds it as the weights
(/srv/adv23/model_rewrite.sh: try 1, ``nobody`` flipping). Here the rewrite is made by ``nobody`` right before the
parse, with ``MAP_FILES`` on as in the builder process, so the result does not depend on timing; a real RTX build."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from external_weight import N, model_with_external_weight
from other_user import as_nobody

from trt_widget import Build

SECRET = (b"ROOT-ONLY-KEY-the-model-never-named-at-its-check:" * 40)[: N * 4]


@pytest.mark.slow
@pytest.mark.parametrize("gil_unsafe", [False, True], ids=["parse", "parse-from-file"])
def test_a_model_rewritten_by_its_owner_after_the_check_reads_no_unchecked_file(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gil_unsafe: bool
) -> None:
    """``parse-from-file``: NVIDIA TensorRT 10.0-10.12's bindings read a buffer given to ``parse`` without the GIL,
    so the model is parsed from a file there (``capabilities()["gil_unsafe_parse"]``, the one difference faked):
    that file must not be the one another user may rewrite."""
    import trt_widget._engine as engine_module
    from trt_widget import _external_data

    own = shared / "own"  # root's own folder: 0755, no one else may rename or add anything there
    own.mkdir(mode=0o755)
    model = model_with_external_weight(own)
    (own / "w.bin").chmod(0o644)
    (own / "k.bin").write_bytes(SECRET)
    (own / "k.bin").chmod(0o600)
    shutil.chown(model, "nobody", "nogroup")  # an upload handed to its author, say: theirs to write
    model.chmod(0o644)
    at = model.read_bytes().index(b"w.bin")
    parse = engine_module._parse_at
    rewritten: list[str] = []

    def rewritten_meanwhile(parser: Any, given: str | bytes, data: Any) -> bool:
        # what the model's owner does between the check and the parse (same length, in place)
        as_nobody("sh", "-c", f"printf k.bin | dd of={model} bs=1 seek={at} conv=notrunc status=none")
        rewritten.append(str(given))
        return bool(parse(parser, given, data))

    monkeypatch.setattr(_external_data, "MAP_FILES", True)  # as in the builder process (runners/_worker.py)
    monkeypatch.setattr(engine_module, "_parse_at", rewritten_meanwhile)
    if gil_unsafe:
        from trt_widget._backend import capabilities

        monkeypatch.setattr(engine_module, "capabilities", lambda: {**capabilities(), "gil_unsafe_parse": True})
    output = tmp_path / "m.engine"
    build = Build(str(model), output=str(output), isolation="thread", history=False)
    build.start()
    build.wait(300)
    kept = output.read_bytes() if output.exists() else b""
    leaked = SECRET[:40] in kept or SECRET[:40] in (build.engine or b"")
    assert rewritten and model.read_bytes().count(b"k.bin") == 1, rewritten  # the rewrite came before the parse
    assert build.status == "succeeded", build.error  # the bytes checked were parsed: the build stands
    assert not leaked, f"the engine holds k.bin, named only after the check ({build.status}, {rewritten})"
