"""Safe file writes (``_files.py``): atomic, durable, never a partial file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from trt_widget import _files


def test_atomic_write_fsyncs_the_data_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, Any]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.fstat(fd).st_size))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr("trt_widget._files.os.fsync", fsync)
    monkeypatch.setattr("trt_widget._files.os.replace", replace)
    _files.atomic_write(tmp_path / "engine.plan", b"x" * 1000)
    assert calls == [("fsync", 1000), ("replace", "engine.plan")]


def test_a_failed_write_names_the_file_asked_for_not_the_temporary_one(tmp_path: Path) -> None:
    missing = tmp_path / "no such folder" / "m.engine"
    with pytest.raises(FileNotFoundError) as caught:
        _files.atomic_write(missing, b"engine")
    assert caught.value.filename == str(missing) and ".part" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_long_names_part_file_fits_the_folder_and_is_swept_when_stale(tmp_path: Path) -> None:
    """A valid 255-byte name (multi-byte characters at the cut): its ``.part`` is cut to NAME_MAX, named by a prefix
    of the name and a hash of all of it, and a dead writer's one is removed by the next write (issue 35, N1)."""
    name = "é" * 120 + "x" * 15  # 255 bytes in UTF-8
    target = tmp_path / name
    part = _files.part_path(target)
    assert len(os.fsencode(part.name)) <= 255 and part.name.startswith("." + "é" * 50)
    assert _files.part_path(tmp_path / (name[:-1] + "y")).name.split(".")[1] != part.name.split(".")[1]
    stale = part.with_name(".".join([*part.name.split(".")[:2], "9999999", "deadbeef", "part"]))
    stale.write_bytes(b"left by a killed writer")
    _files.atomic_write(target, b"engine")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert target.read_bytes() == b"engine"
