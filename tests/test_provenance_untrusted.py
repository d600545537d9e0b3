"""Files that ``check_engine`` and ``reuse=True`` read without being named by the user — the manifest beside an
engine, ``file-hashes.json`` in the reuse folder — are untrusted: another user can plant them in a shared folder.
A FIFO there never blocks the reader (it waited forever for a writer), and a JSON text Python cannot turn into
numbers (an integer over 4,300 digits raises ValueError, not JSONDecodeError) is not a manifest or a hash cache:
it is ignored with a reason, never a traceback. Real RTX builds and processes; ``nobody`` for the planted files."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from other_user import as_nobody

from trt_widget import Build
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import HashCache, check_engine, manifest_path
from trt_widget.provenance._hashes import HASHES_FILE

HUGE_NUMBER = b'{"format": "trt_widget.manifest", "version": 1, "n": ' + b"9" * 5000 + b"}"
CLI = [sys.executable, "-m", "trt_widget"]


@pytest.fixture(scope="module")
def engine_bytes() -> bytes:
    build = Build(to_bytes(deep_residual(2)), history=False, resources=False).start()
    assert build.wait() == "succeeded", build.status_detail
    assert build.engine
    return bytes(build.engine)


def test_check_does_not_wait_on_a_fifo_another_user_planted_as_the_manifest(shared: Path, engine_bytes: bytes) -> None:
    engine = shared / "e.engine"
    engine.write_bytes(engine_bytes)
    as_nobody("mkfifo", str(manifest_path(engine)))
    done = subprocess.run([*CLI, "check", str(engine)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert "not a regular file" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert check_engine(engine).loads is None


def test_check_says_a_manifest_with_a_number_python_cannot_read_is_not_one(tmp_path: Path, engine_bytes: bytes) -> None:
    engine = tmp_path / "e.engine"
    engine.write_bytes(engine_bytes)
    manifest_path(engine).write_bytes(HUGE_NUMBER)
    found = check_engine(engine)  # raised ValueError
    assert found.loads is None and "not a trt_widget manifest" in found.reason, found.reason
    done = subprocess.run([*CLI, "check", str(engine)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "not a trt_widget manifest" in done.stdout + done.stderr, done


@pytest.mark.parametrize("name", ["e.engine\x00", "a\x00b"])
def test_check_says_a_manifest_naming_its_engine_with_a_nul_is_not_one(tmp_path: Path, name: str) -> None:
    """Seventh re-run: a manifest whose ``engine.file`` holds a NUL (``\\u0000`` in its JSON) passed the plain-name
    check, and ``trt-widget check`` ended in a ValueError traceback ("embedded null byte")."""
    import json

    engine = tmp_path / "e.engine"
    build = Build(to_bytes(deep_residual(2)), history=False, resources=False, output=str(engine)).start()
    assert build.wait() == "succeeded", build.status_detail
    manifest = json.loads(manifest_path(engine).read_text())
    manifest["engine"]["file"] = name
    manifest_path(engine).write_text(json.dumps(manifest))
    found = check_engine(engine)  # raised ValueError
    assert found.loads is None and "not a plain file name" in found.reason, found.reason
    for target in (engine, manifest_path(engine)):
        done = subprocess.run([*CLI, "check", str(target)], capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr and "not a plain file name" in done.stdout + done.stderr, done


def test_a_reuse_is_not_held_by_a_fifo_another_user_planted_as_the_hash_cache(shared: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    as_nobody("mkfifo", str(shared / HASHES_FILE))
    command = [*CLI, "build", str(model), "-o", str(tmp_path / "m.engine"), "--reuse", "--reuse-dir", str(shared)]
    done = subprocess.run([*command, "--plain"], capture_output=True, text=True, timeout=300)  # it waited forever
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "m.engine").stat().st_size > 0


def test_a_hash_cache_with_a_number_python_cannot_read_is_ignored(tmp_path: Path) -> None:
    (tmp_path / HASHES_FILE).write_bytes(b'{"files": {}, "n": ' + b"9" * 5000 + b"}")
    cache = HashCache(tmp_path)  # raised ValueError: the build was refused
    assert "not JSON" in cache.ignored, cache.ignored


def test_a_reuse_builds_anew_beside_a_manifest_with_a_number_python_cannot_read(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    engine = tmp_path / "m.engine"
    engine.write_bytes(b"not an engine")
    manifest_path(engine).write_bytes(HUGE_NUMBER)
    build = Build(str(model), output=str(engine), reuse=True, reuse_dir=str(tmp_path / "cache"), history=False)
    assert build.start().wait() == "succeeded", build.status_detail  # raised ValueError in the build
    assert engine.read_bytes()[:4] == b"vtrt"


# -- the manifest beside an engine: the engine's permissions, and a word where it cannot be written ------------
def _private_engine(folder: Path, mode: int) -> Path:
    """An engine file of ours already at ``folder/m.engine`` with ``mode`` and group ``nogroup``: the build
    replaces it and keeps both (``place_file``)."""
    import grp

    engine = folder / "m.engine"
    engine.write_bytes(b"old")
    os.chown(engine, -1, grp.getgrnam("nogroup").gr_gid)
    engine.chmod(mode)
    return engine


@pytest.mark.parametrize("how", ["output=", "save"])
def test_the_manifest_gets_the_engines_mode_and_group(tmp_path: Path, how: str) -> None:
    """Issue 35 (second re-run): beside an engine kept at 0600 the manifest came out 0644 (what ``open()`` gives),
    readable by all; one that existed kept its own mode. It takes the engine's mode and group now."""
    engine = _private_engine(tmp_path, 0o640)
    manifest_path(engine).write_text("{}")
    manifest_path(engine).chmod(0o644)
    model = to_bytes(deep_residual(2))
    if how == "output=":
        build = Build(model, output=str(engine), history=False, resources=False)
        assert build.start().wait() == "succeeded", build.status_detail
    else:
        build = Build(model, history=False, resources=False)
        assert build.start().wait() == "succeeded", build.status_detail
        build.save(str(engine))
    assert engine.read_bytes()[:4] == b"vtrt"
    engine_info, manifest_info = engine.stat(), manifest_path(engine).stat()
    assert stat.S_IMODE(engine_info.st_mode) == 0o640
    assert stat.S_IMODE(manifest_info.st_mode) == 0o640 and manifest_info.st_gid == engine_info.st_gid


def test_a_new_manifest_beside_a_0600_engine_is_0600(tmp_path: Path) -> None:
    engine = _private_engine(tmp_path, 0o600)
    build = Build(to_bytes(deep_residual(2)), output=str(engine), history=False, resources=False)
    assert build.start().wait() == "succeeded", build.status_detail
    assert stat.S_IMODE(manifest_path(engine).stat().st_mode) == 0o600, "the manifest was readable by all"


def test_a_link_another_user_planted_as_the_manifest_is_said(shared: Path, tmp_path: Path) -> None:
    """The manifest is not written through another user's link (``UntrustedLink``), and the build says so in its
    log, as the terminal shows it: a plain CLI build kept silent. The engine is kept."""
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    engine = shared / "m.engine"
    aimed = shared / "elsewhere"
    as_nobody("ln", "-s", str(aimed), str(manifest_path(engine)))
    done = subprocess.run(
        [*CLI, "build", str(model), "-o", str(engine), "--plain"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout + done.stderr
    assert "manifest" in said and "another user" in said, said[-3000:]
    assert engine.read_bytes()[:4] == b"vtrt" and not aimed.exists()
    build = Build(str(model), output=str(engine), history=False, resources=False)
    assert build.start().wait() == "succeeded", build.status_detail
    warnings = [r["message"] for r in build.logger.records if r["severity"] == "WARNING"]
    assert any("manifest" in line and "another user" in line for line in warnings), warnings
    assert not aimed.exists() and manifest_path(engine).is_symlink()


def test_a_cache_entry_swapped_after_its_owner_was_checked_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a cache folder another user can write, the engine and manifest were checked (``stat`` by path) to be the
    user's, then opened by path: swapped in between for another user's consistent pair, theirs was reused. The
    swap is made here at the last moment it can matter (just before the manifest is opened); the owner is that
    of the file opened."""
    import hashlib
    import json
    from typing import Any

    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(4)))
    cache = tmp_path / "cache"
    first = Build(str(model), reuse=True, reuse_dir=str(cache)).start()
    assert first.wait(300) and first.status == "succeeded", first.status_detail
    entry = next(cache.glob("*.engine"))
    evil = b"planted engine bytes " * 100
    manifest = json.loads(manifest_path(entry).read_text())
    manifest["engine"].update(sha256=hashlib.sha256(evil).hexdigest(), size=len(evil))
    planted = {entry: evil, manifest_path(entry): json.dumps(manifest).encode()}
    staged: dict[Path, Path] = {}
    for target, data in planted.items():
        staged[target] = tmp_path / f"nobody-{target.name}"
        staged[target].write_bytes(data)
        os.chown(staged[target], 65534, 65534)  # "nobody", who can write the shared folder
    real_open = os.open

    def racing_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if staged and os.fspath(path) == os.fspath(manifest_path(entry)):
            for target, source in list(staged.items()):
                os.replace(source, target)
            staged.clear()
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", racing_open)
    again = Build(str(model), reuse=True, reuse_dir=str(cache), output=str(tmp_path / "out.engine")).start()
    assert again.wait(300) and again.status == "succeeded", again.status_detail
    monkeypatch.undo()
    assert not staged, "the manifest was never opened"
    assert again.reused_from is None, again.status_detail
    assert (tmp_path / "out.engine").read_bytes() != evil
    assert "owned by another user" in again.status_detail, again.status_detail[:3000]


def _naming(location: str) -> bytes:
    """The small model with its first weight moved to external data at ``location`` (16 bytes)."""
    import onnx

    model = deep_residual(2)
    weight = model.graph.initializer[0]
    weight.ClearField("raw_data")
    del weight.float_data[:]
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return to_bytes(model)


def _bundled(model: Path, target: Path) -> dict[str, bytes]:
    """``trt-widget bundle MODEL --include-model -o TARGET`` (it must succeed): each member's bytes by name."""
    import zipfile

    done = subprocess.run(
        [*CLI, "bundle", str(model), "--include-model", "-o", str(target)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    with zipfile.ZipFile(target) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.parametrize("how", ["absolute", "dot-dot", "link out"])
def test_a_bundle_never_packs_a_file_the_model_names_outside_its_folder(tmp_path: Path, how: str) -> None:
    """Eighth re-run: ``bundle --include-model`` copied every file the model named as external data, wherever it
    was (``/home/me/.ssh/id_rsa``, ``../secret``, a link leading out), into the zip made to be shared: the build
    refused that model, its bug report carried the file. Only what the model-file rule lets a build read goes in."""
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP SECRET, 0600 " * 4)
    secret.chmod(0o600)
    folder = tmp_path / "model"
    folder.mkdir()
    location = {"absolute": str(secret), "dot-dot": "../secret.txt", "link out": "w.bin"}[how]
    if how == "link out":
        (folder / "w.bin").symlink_to(secret)
    model = folder / "m.onnx"
    model.write_bytes(_naming(location))
    members = _bundled(model, tmp_path / "b.zip")
    assert not any(b"TOP SECRET" in data for data in members.values()), list(members)
    assert "model/m.onnx" in members  # the model itself is packed
    readme = members["README.txt"].decode()
    assert "left out" in readme and "outside the model's folder" in readme, readme


def test_a_bundle_packs_the_external_data_inside_the_model_folder(tmp_path: Path) -> None:
    """What the model-file rule allows (a file beside the model, a link inside the folder) is still packed."""
    folder = tmp_path / "model"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "real.bin").write_bytes(b"\x00" * 16)
    (folder / "w.bin").symlink_to("data/real.bin")
    model = folder / "m.onnx"
    model.write_bytes(_naming("w.bin"))
    members = _bundled(model, tmp_path / "b.zip")
    assert members.get("model/w.bin") == b"\x00" * 16, list(members)


def test_a_bundle_packs_external_data_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """A model naming a data file whose name is not UTF-8 (``w\\xff.bin``, a valid Linux name): the bundle was not
    written at all ("cannot write the bundle: ... surrogates not allowed", from the README and the member's name).
    It is written, the file packed under its name escaped."""
    model = tmp_path / "m.onnx"
    model.write_bytes(_naming("wQ.bin").replace(b"wQ.bin", b"w\xff.bin"))  # same length: the protobuf holds
    with open(os.path.join(os.fsencode(tmp_path), b"w\xff.bin"), "wb") as handle:
        handle.write(b"\x07" * 16)
    members = _bundled(model, tmp_path / "b.zip")
    assert members.get("model/w\\xff.bin") == b"\x07" * 16, list(members)
    assert "model/w\\xff.bin" in members["README.txt"].decode()


@pytest.mark.parametrize("name", [".", "/", "sub/.."])
def test_check_of_a_folder_whose_name_is_empty_is_said_not_a_traceback(tmp_path: Path, name: str) -> None:
    """Eighth re-run: ``trt-widget check .`` (or ``/``) ended in a ValueError traceback ("has an empty name", from
    the manifest's path beside it); ``check ..`` said it cannot read a folder. Every folder is said so."""
    (tmp_path / "sub").mkdir()
    found = check_engine(name if name == "/" else tmp_path / name)  # raised ValueError
    assert found.loads is None and "not a regular file" in found.reason, found.reason
    done = subprocess.run([*CLI, "check", name], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "not a regular file" in done.stdout, done.stdout


def test_reuse_hashes_no_file_a_model_may_not_name(tmp_path: Path) -> None:
    """Eighth re-run: to make a reuse key, every file a model named as external data was read and hashed before
    the build's own check refused it: an upload to ``serve`` with ``reuse: true`` naming ``/etc/shadow`` or a 4 GB
    file of the server had the server read it whole (16 s for 4 GB, per request; the docs say the server reads no
    file an upload names), and a local model named files outside its folder. Only what the model-file rule lets a
    build read is hashed; otherwise the model has no identity (the build refuses it and says why)."""
    from trt_widget._engine import ModelSource
    from trt_widget.provenance._manifest import model_identity

    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"\x00" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"\x00" * 16)
    for location in (str(outside), "../outside.bin"):
        model = folder / "m.onnx"
        model.write_bytes(_naming(location))
        hashes = HashCache(None)
        assert model_identity(ModelSource.of(str(model)), hashes) is None, location
        assert hashes.recall(outside) is None, location  # never read
    model.write_bytes(_naming("w.bin"))
    upload = ModelSource("path", str(model), "upload", None)  # as serve builds an upload: no directory
    hashes = HashCache(None)
    assert model_identity(upload, hashes) is None
    assert hashes.recall(folder / "w.bin") is None
    found = model_identity(ModelSource.of(str(model)))  # beside the model, given as a path: allowed
    assert found is not None and found["external_data"] == [
        {"location": "w.bin", "sha256": hashlib.sha256(b"\x00" * 16).hexdigest(), "size": 16}
    ]
