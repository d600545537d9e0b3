"""The XDG base directories as the spec reads them: a relative ``XDG_CACHE_HOME`` or ``XDG_DATA_HOME`` is invalid
and ignored (it was taken relative to the working folder: a cache or a service's data in whatever folder the
command ran from)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trt_widget.provenance import default_reuse_dir
from trt_widget.serve._server import default_data_dir


@pytest.mark.parametrize("value", ["cache", "./cache", "cache/../x", ""])
def test_a_relative_xdg_cache_home_is_ignored(value: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert default_reuse_dir() == tmp_path / "home" / ".cache" / "trt_widget" / "engines"
    monkeypatch.setenv("XDG_DATA_HOME", value)
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "trt_widget" / "serve"


def test_an_absolute_xdg_home_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert default_reuse_dir() == tmp_path / "c" / "trt_widget" / "engines"
    assert default_data_dir() == tmp_path / "d" / "trt_widget" / "serve"
