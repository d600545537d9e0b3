"""The hash cache of reuse (docs/reuse.md, "The hash cache"): files remembered by their stat so an unchanged model and
engine are not read again, and every change (a write, even one that sets the modification time back) still seen.
Real RTX builds; ``RACY_NS`` is set to 0 where a test needs a hash trusted at once (the 2 s window is tested on
its own, by stat values)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, _external_data
from trt_widget._files import WrittenFile
from trt_widget.provenance import HashCache, Hashed, copy_into_place, read_manifest
from trt_widget.provenance._hashes import HASHES_FILE


def _build(model: Path, **options: Any) -> Build:
    build = Build(str(model), history=False, resources=False, **options).start()
    build.wait()
    assert build.status == "succeeded", build.status_detail
    return build


@pytest.fixture
def trusted_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashes trusted as soon as they are taken (the files here were written a moment ago)."""
    monkeypatch.setattr(_external_data, "RACY_NS", 0)


def _entries(cache: Path) -> dict[str, Any]:
    files = json.loads((cache / HASHES_FILE).read_text())["files"]
    assert isinstance(files, dict)
    return files


def _key(path: Path) -> str:
    return _external_data.stat_key(os.stat(path))


def _flip_keeping_times(path: Path, at: int) -> None:
    """Change the byte at ``at`` in place and set the modification time back, as a tool restoring timestamps does:
    size, inode and mtime stay; only the change time (which no user can set back) moves."""
    before = os.stat(path)
    with open(path, "r+b") as handle:
        handle.seek(at)
        byte = handle.read(1)
        handle.seek(at)
        handle.write(bytes([byte[0] ^ 1]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    while os.stat(path).st_ctime_ns == before.st_ctime_ns:  # within one tick of the file system's clock
        time.sleep(0.01)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # sets the change time to now
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


@pytest.mark.usefixtures("trusted_at_once")
def test_a_remembered_hash_is_used_instead_of_reading_the_model(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    files = _entries(cache)
    assert set(files) == {_key(onnx_path), _key(engine)}  # the model and the engine it checked, by stat
    assert files[_key(onnx_path)]["locations"] == []  # the model's external-data names are remembered too
    assert _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache)).reused_from == str(engine)
    files[_key(onnx_path)]["sha256"] = "0" * 64  # what a read would never give: only the remembered hash says it
    (cache / HASHES_FILE).write_text(json.dumps({"format": "trt_widget.file-hashes", "files": files}))
    again = _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.reused_from is None
    assert "the model's content" in again.status_detail


def _rebuilt_after(model: Path, engine: Path, cache: Path, change: Callable[[], object]) -> Build:
    """The build of ``model`` after a first build to ``engine``, a second that reused it, then ``change()``."""
    _build(model, output=str(engine), reuse=True, reuse_dir=str(cache))
    assert _build(model, output=str(engine), reuse=True, reuse_dir=str(cache)).reused_from == str(engine)
    change()
    again = Build(str(model), history=False, resources=False, output=str(engine), reuse=True, reuse_dir=str(cache))
    again.start().wait()
    return again


@pytest.mark.usefixtures("trusted_at_once")
def test_a_model_changed_with_its_modification_time_set_back_builds_anew(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    again = _rebuilt_after(
        onnx_path, engine, cache, lambda: _flip_keeping_times(onnx_path, onnx_path.stat().st_size - 1)
    )
    assert again.reused_from is None
    assert "the model's content" in again.status_detail


@pytest.mark.usefixtures("trusted_at_once")
def test_an_engine_changed_in_place_is_not_trusted_by_its_remembered_hash(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"

    def change() -> None:
        _flip_keeping_times(engine, engine.stat().st_size // 2)
        for entry in cache.glob("*.engine"):
            entry.unlink()  # only the engine at output= is a candidate

    again = _rebuilt_after(onnx_path, engine, cache, change)
    assert again.status == "succeeded", again.status_detail
    assert again.reused_from is None
    assert "does not match its manifest's sha256" in again.status_detail
    assert read_manifest(engine).verify() == ""  # replaced by the new build's engine


def test_a_hash_taken_within_two_seconds_of_a_change_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    info = os.stat(path)
    changed = max(info.st_ctime_ns, info.st_mtime_ns)
    hashes = HashCache(None)
    hashes.remember(info, changed + _external_data.RACY_NS - 1, Hashed("a" * 64, 100))
    assert hashes.lookup(info) is None  # a write in the same clock tick could have left the stat as it was
    hashes.remember(info, changed + _external_data.RACY_NS, Hashed("a" * 64, 100))
    assert hashes.lookup(info) == Hashed("a" * 64, 100)


@pytest.mark.parametrize(
    "stored",
    [
        b"{not json",
        b'{"format": "trt_widget.file-hashes", "files": []}',
        json.dumps({"files": {"1:2:3:4:5": {"sha256": "zz", "hashed_at": 0}}}).encode(),
    ],
    ids=["not-json", "wrong-shape", "malformed-entry"],
)
@pytest.mark.usefixtures("trusted_at_once")
def test_a_corrupt_hash_cache_is_ignored(onnx_path: Path, tmp_path: Path, stored: bytes) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    (cache / HASHES_FILE).write_bytes(stored)
    again = _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.reused_from == str(engine)  # read and hashed again: the same engine
    if stored.startswith(b"{not"):
        assert "ignored the hash cache" in again.status_detail and "not JSON" in again.status_detail
    assert _key(onnx_path) in _entries(cache)  # rewritten whole


@pytest.mark.usefixtures("trusted_at_once")
def test_a_hash_cache_another_user_owns_is_never_trusted(onnx_path: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    files = _entries(cache)
    files[_key(onnx_path)]["sha256"] = "0" * 64  # planted: would say the model changed
    (cache / HASHES_FILE).write_text(json.dumps({"files": files}))
    os.chown(cache / HASHES_FILE, 65534, 65534)
    again = _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.reused_from == str(engine)
    assert "ignored the hash cache" in again.status_detail and "another user" in again.status_detail


@pytest.mark.usefixtures("trusted_at_once")
def test_external_data_is_remembered_and_a_change_to_it_still_seen(tmp_path: Path) -> None:
    import onnx

    from trt_widget.models import deep_residual

    folder, engine, cache = tmp_path / "m", tmp_path / "m.engine", tmp_path / "cache"
    folder.mkdir()
    model = folder / "model.onnx"
    onnx.save_model(deep_residual(2), model, save_as_external_data=True, location="w.bin", size_threshold=0)
    _build(model, output=str(engine), reuse=True, reuse_dir=str(cache))
    files = _entries(cache)
    assert files[_key(model)]["locations"] == ["w.bin"] and _key(folder / "w.bin") in files
    assert _build(model, output=str(engine), reuse=True, reuse_dir=str(cache)).reused_from == str(engine)
    weights = folder / "w.bin"
    _flip_keeping_times(weights, weights.stat().st_size - 1)
    again = Build(str(model), history=False, resources=False, output=str(engine), reuse=True, reuse_dir=str(cache))
    again.start().wait()
    assert again.reused_from is None and "external data" in again.status_detail


def test_copy_into_place_refuses_a_source_replaced_after_it_was_checked(tmp_path: Path) -> None:
    source, target = tmp_path / "a.engine", tmp_path / "b.engine"
    source.write_bytes(b"checked bytes")
    info = os.stat(source)
    checked = WrittenFile(source, info.st_size, (info.st_dev, info.st_ino, info.st_mtime_ns))
    assert copy_into_place(checked, target).size == info.st_size and target.read_bytes() == b"checked bytes"
    replacement = tmp_path / "c"
    replacement.write_bytes(b"planted bytes")
    os.replace(replacement, source)
    with pytest.raises(OSError, match="replaced or changed"):
        copy_into_place(checked, tmp_path / "d.engine")
    assert not (tmp_path / "d.engine").exists()
    assert not list(tmp_path.glob(".d.engine.*"))  # no temporary file left


@pytest.mark.usefixtures("trusted_at_once")
def test_an_unchanged_model_is_read_once_for_its_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trt_widget.models import deep_residual, to_bytes

    model = tmp_path / "m.onnx"
    model.write_bytes(to_bytes(deep_residual(2)))
    assert _external_data.file_locations(str(model)) == []
    calls: list[int] = []
    real = _external_data.external_locations

    def counted(data: bytes | memoryview) -> list[str]:
        calls.append(1)
        return real(data)

    monkeypatch.setattr(_external_data, "external_locations", counted)
    assert _external_data.file_locations(str(model)) == []
    assert calls == []  # remembered by its stat
    _flip_keeping_times(model, model.stat().st_size - 1)
    assert _external_data.file_locations(str(model)) == [] and calls == [1]  # changed: read again


def test_build_reuse_starts_no_builder_process_early(monkeypatch: pytest.MonkeyPatch) -> None:
    from trt_widget import __main__ as cli
    from trt_widget._pool import pool

    started: list[bool] = []
    monkeypatch.setattr(pool, "start_here", lambda: started.append(True))
    monkeypatch.setattr(pool, "one_build", pool.one_build)
    cli._start_builder_early(["build", "m.onnx", "--reuse"], False)
    assert started == []
    cli._start_builder_early(["build", "m.onnx"], False)
    assert started == [True]


def test_a_deeply_nested_manifest_or_hash_cache_is_refused_not_raised(onnx_path: Path, tmp_path: Path) -> None:
    from trt_widget.provenance import ManifestError

    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    nested = b"[" * 200_000 + b"]" * 200_000  # beyond the JSON parser's recursion limit
    (cache / HASHES_FILE).write_bytes(nested)
    manifest = Path(str(engine) + ".manifest.json")
    manifest.write_bytes(nested)
    with pytest.raises(ManifestError, match="nested too deep"):
        read_manifest(engine)
    again = _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    # no crash: the engine at output= (its manifest unreadable) is passed over for the cache's entry
    assert again.reused_from is not None and Path(again.reused_from).parent == cache
    assert "nested too deep" in again.status_detail and "ignored the hash cache" in again.status_detail
    assert read_manifest(engine).verify() == ""


@pytest.mark.usefixtures("trusted_at_once")
def test_a_reuse_of_a_remembered_model_starts_no_builder_process(
    onnx_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trt_widget._pool import pool

    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    warmed: list[object] = []
    monkeypatch.setattr(pool, "prewarm", lambda *args: warmed.append(args))
    again = _build(onnx_path, output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.reused_from == str(engine) and again.child_pid is None
    assert warmed == []  # its model is known unchanged: no builder process started ahead
    Build(str(onnx_path), history=False, resources=False, output=str(tmp_path / "f.engine"))
    assert len(warmed) == 1  # without reuse a builder is started ahead, as before


def test_copy_into_place_falls_back_when_the_kernel_cannot_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import fcntl

    source = tmp_path / "a.engine"
    data = os.urandom(3 << 20)
    source.write_bytes(data)
    calls: list[int] = []

    def refuse(src: int, dst: int, count: int) -> int:  # as between two file systems on an older kernel
        calls.append(count)
        if len(calls) > 1:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return os.copy_file_range(src, dst, 1 << 20)  # a partial copy first: the fallback starts over

    def no_clone(*args: object) -> None:  # a file system that shares no blocks (ext4, tmpfs)
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    monkeypatch.setattr(fcntl, "ioctl", no_clone)
    assert copy_into_place(source, tmp_path / "b.engine").size == len(data)
    assert (tmp_path / "b.engine").read_bytes() == data and len(calls) == 2
