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
