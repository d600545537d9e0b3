"""Twenty-fourth adversarial re-run (issue 35, D24-1): D22-5's fix keeps an engine for reuse only when each file
the builder read has the stat key (device, inode, size, mtime, ctime) of the file hashed for the reuse key, and that
key is trusted (last change 2 s before the hash, or only this user may write the file). But a write through a
shared writable map of the file changes its bytes without changing its stat: the kernel stamps mtime/ctime only
on a page's first write fault, not on later stores to a page already dirty (until its writeback, ~30 s). The owner
of a shared model folder dirties ``w.bin``'s pages through a map, waits 2 s, and after the hash stores their own
weights through the map: same key, other bytes, and the engine of their weights is filed under the key of the
real ones; root's later build of a trusted copy of the model reuses it (/srv/adv24/mmap_poison.sh). Here
``nobody`` stores through the map right before the build holds the files, so the result does not depend on
timing; real RTX builds."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import onnx
import pytest
from external_weight import N, model_with_external_weight
from onnx import TensorProto, helper
from other_user import NOBODY

from trt_widget import Build

POISON = (b"POISONED-WEIGHTS-the-trusted-model-never-had\n" * 40)[: N * 4]

# nobody's side: map w.bin shared and writable, store its own bytes (the stamp), then on "go" store the poison
WRITER = """
import mmap, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED)
m[:] = m[:]
print("stamped", flush=True)
sys.stdin.readline()
key = lambda: (lambda s: (s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns))(os.fstat(fd))
before = key()
m[: len(sys.argv[2])] = bytes.fromhex(sys.argv[3])
print("same" if key() == before else "stamped-again", flush=True)
sys.stdin.readline()
"""


def _engine_bytes(build: Build, output: Path) -> bytes:
    return output.read_bytes() if output.exists() else (build.engine or b"")


@pytest.mark.slow
def test_data_stored_through_a_map_after_the_reuse_key_is_never_reused_for_the_real_model(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trt_widget._external_data as external

    folder, trusted, cache = shared / "model", tmp_path / "trusted", tmp_path / "cache"
    folder.mkdir(mode=0o755)
    trusted.mkdir()
    model = model_with_external_weight(folder)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(folder / "w.bin", trusted / "w.bin")  # the real weights
    for path in (folder, model, folder / "w.bin"):
        shutil.chown(path, "nobody", "nogroup")  # the shared model folder's owner
    writer = subprocess.Popen(
        [*NOBODY, sys.executable, "-c", WRITER, str(folder / "w.bin"), "x" * len(POISON), POISON.hex()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "stamped"
        time.sleep(2.5)  # the last change lies 2 s before the hash: its key is trusted
        held = external.HeldData.__init__
        stored: list[str] = []

        def stored_first(self: Any, locations: list[str], directory: str, label: str) -> None:
            if Path(directory) == folder and not stored:  # the key is made: what the folder's owner does now
                writer.stdin.write("go\n")  # type: ignore[union-attr]
                writer.stdin.flush()  # type: ignore[union-attr]
                stored.append(writer.stdout.readline().strip())  # type: ignore[union-attr]
            held(self, locations, directory, label)

        monkeypatch.setattr(external.HeldData, "__init__", stored_first)
        first_out = tmp_path / "first.engine"
        first = Build(str(model), output=str(first_out), reuse=True, reuse_dir=str(cache), isolation="thread",
                      history=False)  # fmt: skip
        first.start()
        first.wait(300)
    finally:
        writer.stdin.close()
        writer.wait(30)
        writer.stdout.close()
    if stored != ["same"]:
        pytest.skip(f"the page was written back meanwhile (the map's store stamped the file again): {stored}")
    assert first.status == "succeeded", (first.status, first.error)
    assert POISON[:40] in _engine_bytes(first, first_out)  # built from what it held: the stored weights
    monkeypatch.setattr(external.HeldData, "__init__", held)
    second_out = tmp_path / "second.engine"
    second = Build(str(trusted / "m.onnx"), output=str(second_out), reuse=True, reuse_dir=str(cache),
                   isolation="thread", history=False)  # fmt: skip
    second.start()
    second.wait(300)
    assert second.status == "succeeded", (second.status, second.error)
    poisoned = POISON[:40] in _engine_bytes(second, second_out)
    assert not poisoned, f"the trusted model's build reused the stored weights' engine ({second.reused_from})"


@pytest.mark.slow
def test_data_stored_through_a_map_after_its_hash_was_remembered_is_never_reused_for_the_real_model(
    shared: Path, tmp_path: Path
) -> None:
    """The lasting form: no race at build time. After root's first build remembered ``w.bin``'s hash by its stat
    key, its owner stores other weights through the map and goes; the file keeps that key for good, so any later
    build that must build (the cache's engine evicted, here removed) takes the old hash from the hash cache and
    files the engine of the new bytes under the key of the old ones."""
    folder, trusted, cache = shared / "model", tmp_path / "trusted", tmp_path / "cache"
    folder.mkdir(mode=0o755)
    trusted.mkdir()
    model = model_with_external_weight(folder)
    shutil.copy(model, trusted / "m.onnx")
    shutil.copy(folder / "w.bin", trusted / "w.bin")  # the real weights
    for path in (folder, model, folder / "w.bin"):
        shutil.chown(path, "nobody", "nogroup")  # the shared model folder's owner
    writer = subprocess.Popen(
        [*NOBODY, sys.executable, "-c", WRITER, str(folder / "w.bin"), "x" * len(POISON), POISON.hex()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline().strip() == "stamped"
        time.sleep(2.5)  # the last change lies 2 s before the hash: its key is trusted
        first = Build(str(model), output=str(tmp_path / "first.engine"), reuse=True, reuse_dir=str(cache),
                      isolation="thread", history=False)  # fmt: skip
        first.start()
        first.wait(300)
        assert first.status == "succeeded", (first.status, first.error)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        stored = writer.stdout.readline().strip()
    finally:
        writer.stdin.close()
        writer.wait(30)
        writer.stdout.close()
    if stored != "same":
        pytest.skip(f"the page was written back meanwhile (the map's store stamped the file again): {stored}")
    assert (folder / "w.bin").read_bytes() == POISON
    for entry in cache.glob("*.engine*"):
        entry.unlink()  # evicted: the next build of the shared model must build
    second_out = tmp_path / "second.engine"
    second = Build(str(model), output=str(second_out), reuse=True, reuse_dir=str(cache), isolation="thread",
                   history=False)  # fmt: skip
    second.start()
    second.wait(300)
    assert second.status == "succeeded", (second.status, second.error)
    assert POISON[:40] in _engine_bytes(second, second_out)  # built from the file's bytes now
    third_out = tmp_path / "third.engine"
    third = Build(str(trusted / "m.onnx"), output=str(third_out), reuse=True, reuse_dir=str(cache),
                  isolation="thread", history=False)  # fmt: skip
    third.start()
    third.wait(300)
    assert third.status == "succeeded", (third.status, third.error)
    poisoned = POISON[:40] in _engine_bytes(third, third_out)
    assert not poisoned, f"the trusted model's build reused the stored weights' engine ({third.reused_from})"


@pytest.mark.slow
def test_data_another_user_may_write_named_twice_keeps_reuse(tmp_path: Path) -> None:
    """Review of D24-1's fix: a model naming one file as ``w.bin`` and ``./w.bin``, that another user may write (a
    team's group-writable folder), is copied once; the second name went without the copy's hash, so every build
    of it lost reuse and its manifest."""
    from trt_widget.provenance import manifest_path

    folder = tmp_path / "team"
    folder.mkdir()
    model = model_with_external_weight(folder)
    proto = onnx.load(str(model), load_external_data=False)
    weight = proto.graph.initializer[0]
    twice = onnx.helper.make_graph(
        [*proto.graph.node, helper.make_node("Add", ["y", "W2"], ["z"])],
        "g",
        list(proto.graph.input),
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, N])],
        [weight, _named_at(weight, "W2", "./w.bin")],
    )
    out = onnx.helper.make_model(twice, opset_imports=[helper.make_opsetid("", 17)])
    out.ir_version = 8
    model.write_bytes(out.SerializeToString())
    (folder / "w.bin").chmod(0o666)  # another user may write it
    output, cache = tmp_path / "m.engine", tmp_path / "cache"
    for n in range(2):
        build = Build(str(model), output=str(output), reuse=True, reuse_dir=str(cache), history=False).start()
        build.wait(300)
        assert build.status == "succeeded", (build.status, build.error)
        assert "changed during the build" not in build.status_detail, build.status_detail
        assert manifest_path(output).exists()
        assert (build.reused_from is not None) == (n == 1), (n, build.reused_from, build.status_detail)


def _named_at(tensor: onnx.TensorProto, name: str, location: str) -> onnx.TensorProto:
    """A copy of the external tensor ``tensor`` named ``name``, its data at ``location``."""
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    copy.name = name
    for entry in copy.external_data:
        if entry.key == "location":
            entry.value = location
    return copy
