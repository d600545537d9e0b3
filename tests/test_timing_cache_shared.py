"""A timing cache file shared by concurrent builds keeps every writer's entries, and a cache that cannot be saved
never costs the engine. TensorRT for RTX keeps no timing-cache entries (its timing-cache operations are no-ops), so
the merging is shown with a fake of exactly NVIDIA's ITimingCache semantics (python/src/infer/pyCore.cpp:
``serialize()`` -> IHostMemory or None, ``combine(input_cache, ignore_mismatch)`` -> bool); the real RTX path runs too.
"""

from __future__ import annotations

import json
import stat
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from attacks import held_by_another_process

from trt_widget import Build, _engine, models, trt
from trt_widget._engine import CaptureLogger

# RTX builds skip timing_cache=: the real builds here use the file as NVIDIA TensorRT's do (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("nvidia_timing_cache")


class NvidiaLikeCache:
    """ITimingCache as NVIDIA TensorRT has it: entries (tactic timings by layer key) that combine() merges."""

    def __init__(self, entries: dict[str, float], tag: str = "h200/10.13") -> None:
        self.entries, self.tag = dict(entries), tag

    def combine(self, other: NvidiaLikeCache, ignore_mismatch: bool) -> bool:
        if other.tag != self.tag and not ignore_mismatch:
            return False
        self.entries.update({k: v for k, v in other.entries.items() if k not in self.entries})
        return True

    def serialize(self) -> bytes:
        return json.dumps({"tag": self.tag, "entries": self.entries}).encode()


def config_like(entries: dict[str, float], slow_read: float = 0.0) -> Any:
    """A NvidiaLikeConfig as the builder config ``_save_timing_cache`` takes: it reads only the timing cache."""
    return NvidiaLikeConfig(entries, slow_read)


class NvidiaLikeConfig:
    """The builder config after a build: its timing cache holds what this build measured."""

    def __init__(self, entries: dict[str, float], slow_read: float = 0.0) -> None:
        self.cache = NvidiaLikeCache(entries)
        self.slow_read = slow_read

    def get_timing_cache(self) -> NvidiaLikeCache:
        return self.cache

    def create_timing_cache(self, data: bytes) -> NvidiaLikeCache:
        parsed = json.loads(data)
        time.sleep(self.slow_read)  # widens the read-merge-write window so unlocked writers would interleave
        return NvidiaLikeCache(parsed["entries"], parsed["tag"])


def _entries(path: Path) -> dict[str, float]:
    return dict(json.loads(path.read_bytes())["entries"])


def test_two_concurrent_writers_keep_both_builds_entries(tmp_path: Path) -> None:
    path = tmp_path / "shared.cache"
    path.write_bytes(NvidiaLikeCache({"conv0": 1.0}).serialize())  # an earlier build's entries
    builds = [{"conv1": 2.0, "gemm": 3.0}, {"conv2": 4.0}, {"pool": 5.0}]  # three: one waits on a removed lock
    loggers = [CaptureLogger() for _ in builds]
    start = threading.Barrier(len(builds))

    def save(i: int) -> None:
        start.wait()
        _engine._save_timing_cache(config_like(builds[i], slow_read=0.2), str(path), loggers[i])

    threads = [threading.Thread(target=save, args=(i,)) for i in range(len(builds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert _entries(path) == {"conv0": 1.0, "conv1": 2.0, "gemm": 3.0, "conv2": 4.0, "pool": 5.0}
    assert all(not log.problems for log in loggers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.cache"]  # no partial file, no lock file left


def test_a_cache_file_from_another_device_is_replaced_and_a_copy_kept(tmp_path: Path) -> None:
    """Issue 35: another GPU's or TensorRT version's cache (combine() refuses it) was overwritten, its entries lost."""
    path = tmp_path / "other.cache"
    theirs = NvidiaLikeCache({"old": 9.0}, tag="a100/10.8").serialize()
    path.write_bytes(theirs)
    path.chmod(0o600)
    logger = CaptureLogger()
    _engine._save_timing_cache(config_like({"new": 1.0}), str(path), logger)
    assert _entries(path) == {"new": 1.0}
    assert (tmp_path / "other.cache.previous").read_bytes() == theirs
    assert (tmp_path / "other.cache.previous").stat().st_mode & 0o777 == 0o600  # as private as the file was
    assert [r["message"] for r in logger.problems] == [
        f"timing_cache: {path} does not fit this TensorRT version or device; replaced by this build's cache, the "
        f"previous one kept as {path}.previous"
    ]
    path.write_bytes(NvidiaLikeCache({"older": 7.0}, tag="v100/8.6").serialize())  # the next foreign one
    _engine._save_timing_cache(config_like({"new": 1.0}), str(path), CaptureLogger())
    assert _entries(tmp_path / "other.cache.previous-2") == {"older": 7.0}
    assert (tmp_path / "other.cache.previous").read_bytes() == theirs  # the first copy is not overwritten


def test_the_copy_of_a_private_cache_stays_private(tmp_path: Path) -> None:
    """The kept copy is the file itself (a hard link), so a 0600 cache is not copied out readable by others."""
    path = tmp_path / "other.cache"
    theirs = NvidiaLikeCache({"old": 9.0}, tag="a100/10.8").serialize()
    path.write_bytes(theirs)
    path.chmod(0o600)
    _engine._save_timing_cache(config_like({"new": 1.0}), str(path), CaptureLogger())
    kept = tmp_path / "other.cache.previous"
    assert kept.read_bytes() == theirs and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_foreign_cache_with_no_free_name_for_its_copy_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "other.cache"
    theirs = NvidiaLikeCache({"old": 9.0}, tag="a100/10.8").serialize()
    path.write_bytes(theirs)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / "other.cache.previous").symlink_to(victim)  # a link there is never written through
    for number in range(2, _engine.MAX_CACHE_COPIES + 1):
        (tmp_path / f"other.cache.previous-{number}").write_text("taken")
    logger = CaptureLogger()
    _engine._save_timing_cache(config_like({"new": 1.0}), str(path), logger)
    assert path.read_bytes() == theirs and victim.read_text() == "mine"
    assert "left as it was, this build's cache not saved" in logger.problems[0]["message"]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return models.to_bytes(models.deep_residual(1))


def test_serialize_returning_none_keeps_the_engine(
    tmp_path: Path, model_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA's binding returns None where ITimingCache::serialize() gives a null IHostMemory."""
    monkeypatch.setattr(trt.ITimingCache, "serialize", lambda self: None)
    path = tmp_path / "t.cache"
    build = Build(model_bytes, timing_cache=path, isolation="thread", history=False).start()
    assert build.wait(180) == "succeeded", build.error
    assert build.engine
    assert f"timing_cache: TensorRT returned no timing cache to save; {path} is left as it was" in [
        r["message"] for r in build.problems
    ]
    assert not path.exists()


def test_concurrent_real_builds_share_one_cache_file(tmp_path: Path, model_bytes: bytes) -> None:
    path = tmp_path / "shared.cache"
    builds = [Build(model_bytes, timing_cache=path, isolation="thread", history=False) for _ in range(2)]
    for b in builds:
        b.start()
    assert [b.wait(180) for b in builds] == ["succeeded", "succeeded"], [b.error for b in builds]
    data = path.read_bytes()
    again = Build(model_bytes, timing_cache=path, isolation="thread", history=False).start()
    assert again.wait(180) == "succeeded"
    notes: list[Any] = [r["message"] for r in again.problems if "does not fit" in r["message"]]
    assert data and notes == []  # the merged file is one TensorRT reads back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.cache"]  # the lock file went with the last build


def test_a_file_that_only_begins_as_a_cache_is_kept_before_it_is_replaced(tmp_path: Path, model_bytes: bytes) -> None:
    """Issue 35: a cache was recognised by its 4 magic bytes alone, so a foreign file beginning with them was
    overwritten. TensorRT reads it back as an empty cache: the file is kept (a hard link: same bytes and mode), as
    one from another TensorRT version or device is."""
    path = tmp_path / "t.cache"
    with warnings.catch_warnings(), _engine.routed_logs(CaptureLogger()) as router:
        warnings.simplefilter("ignore", DeprecationWarning)
        config = trt.Builder(router).create_builder_config()
        magic = bytes(memoryview(config.create_timing_cache(b"").serialize()))[:4]
    foreign = magic + b" my own notes, which happen to begin with these four bytes\n" * 50
    path.write_bytes(foreign)
    path.chmod(0o600)
    build = Build(model_bytes, timing_cache=path, isolation="thread", history=False).start()
    assert build.wait(180) == "succeeded", build.error
    kept = tmp_path / "t.cache.previous"
    assert kept.read_bytes() == foreign and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert path.read_bytes() != foreign and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert any(f"kept as {kept}, replaced" in r["message"] for r in build.problems)


def test_a_cache_lock_held_for_ever_costs_the_cache_not_the_build(
    tmp_path: Path, model_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (another user's, in a shared folder) holding ``<cache>.lock`` made the build wait for ever."""
    path = tmp_path / "t.cache"
    script = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\ntime.sleep(600)"
    )
    with held_by_another_process(script, f"{path}.lock", ready="held"):
        monkeypatch.setattr(_engine, "CACHE_LOCK_WAIT_S", 0.5)
        build = Build(model_bytes, timing_cache=path, isolation="thread", history=False).start()
        assert build.wait(180) == "succeeded", build.error
        assert any("held by another process for 0.5 s; not saved" in r["message"] for r in build.problems)
        assert not path.exists()
