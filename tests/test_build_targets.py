"""Issue 35's known limit: every file a running build writes (``output=``, the manifest beside it, ``events=``,
``timing_cache=``, ``log_file=``) is refused as any file of another build of this process (its own
``output=``/``events=``/... or a ``save()``/``to_html()`` path) until it ends; only a timing cache may be shared.
Nothing of the running build is lost."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build, trt
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import manifest_path

SMALL = to_bytes(deep_residual(2))


def taken(own: str, role: str) -> str:
    """The refusal's message: this build's role, then the running build's."""
    running = "is being written by another build that is still running"
    return f"^{re.escape(own)} '.*' {running} \\(.*\\), as its {re.escape(role)}: "


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Build, dict[str, Path], threading.Event]]:
    """A real RTX build that is running (its network function waits for the gate) with every kind of file, and
    the gate; the build is let go and waited for at the end."""
    gate = threading.Event()

    def define(network: Any) -> None:
        assert gate.wait(300)
        x = network.add_input("x", trt.float32, (1, 16))
        y = network.add_activation(x, trt.ActivationType.RELU).get_output(0)
        y.name = "y"
        network.mark_output(y)

    files = {name: tmp_path / f"first.{name}" for name in ("engine", "events", "cache", "log")}
    first = Build(
        define,
        isolation="thread",
        history=False,
        output=str(files["engine"]),
        events=str(files["events"]),
        timing_cache=str(files["cache"]),
        log_file=str(files["log"]),
    ).start()
    try:
        yield first, files, gate
    finally:
        gate.set()
        first.wait(300)


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_new_builds_files_may_not_be_a_running_builds_files(
    held: tuple[Build, dict[str, Path], threading.Event], tmp_path: Path
) -> None:
    first, files, gate = held
    engine, events, cache, log = (str(files[name]) for name in ("engine", "events", "cache", "log"))
    refused_at_start: list[tuple[dict[str, Any], str]] = [
        ({"timing_cache": engine}, "output="),
        ({"log_file": engine}, "output="),
        ({"output": events}, "events="),
        ({"output": cache}, "timing_cache="),
        ({"output": log}, "log_file="),
        ({"log_file": cache}, "timing_cache="),
        ({"output": str(manifest_path(engine))}, "manifest (beside output=)"),
        ({"output": engine}, "output="),
    ]
    for options, role in refused_at_start:
        (own,) = options
        second = Build(SMALL, history=False, isolation="thread", **options)
        with pytest.raises(ValueError, match=taken(f"{own}=", role)):
            second.start()
        assert second.status == "idle"
    for path, role in ((engine, "output="), (events, "events="), (log, "log_file=")):
        with pytest.raises(ValueError, match=taken("events=", role)):
            Build(SMALL, history=False, events=path)  # the events file is opened here: refused here
    assert first.status == "running"
    assert not files["engine"].exists() and not files["cache"].exists()  # the refused wrote nothing
    gate.set()
    assert first.wait(300) == "succeeded", first.status_detail
    assert first.events is not None and first.events.join(60)  # the writer thread has written build_end
    assert files["engine"].read_bytes() == first.engine
    assert json.loads(files["engine"].with_name("first.engine.manifest.json").read_text())
    lines = [json.loads(line) for line in files["events"].read_text().splitlines()]
    assert [e["event"] for e in lines if e["event"] in ("build_start", "build_end")] == ["build_start", "build_end"]
    assert files["cache"].stat().st_size > 0 and files["log"].stat().st_size > 0
    # ended: each of its files may be written again
    again = Build(SMALL, history=False, isolation="thread", output=events, timing_cache=engine).start()
    assert again.wait(300) == "succeeded", again.status_detail


def test_save_and_reports_may_not_write_a_running_builds_files(
    held: tuple[Build, dict[str, Path], threading.Event], tmp_path: Path
) -> None:
    first, files, gate = held
    done = Build(SMALL, history=False, isolation="thread").start()
    assert done.wait(300) == "succeeded", done.status_detail
    for name, role in (("engine", "output="), ("events", "events="), ("cache", "timing_cache="), ("log", "log_file=")):
        with pytest.raises(ValueError, match=taken("path=", role)):
            done.save(files[name])
        with pytest.raises(ValueError, match=taken("path=", role)):
            done.to_html(files[name])
    assert first.status == "running"
    gate.set()
    assert first.wait(300) == "succeeded"
    assert files["engine"].read_bytes() == first.engine
    assert done.save(files["engine"]) == str(files["engine"])  # once it ended
    assert files["engine"].read_bytes() == done.engine


def test_two_running_builds_may_share_a_timing_cache(
    held: tuple[Build, dict[str, Path], threading.Event], tmp_path: Path
) -> None:
    first, files, gate = held
    second = Build(SMALL, history=False, isolation="thread", timing_cache=str(files["cache"])).start()
    assert second.wait(300) == "succeeded", second.status_detail
    assert first.status == "running"
    gate.set()
    assert first.wait(300) == "succeeded"


def test_save_may_not_write_its_manifest_onto_a_running_builds_file(tmp_path: Path) -> None:
    """``save(p)`` writes ``p`` and ``p.manifest.json``: the second is checked too (here the running build's log)."""
    gate = threading.Event()

    def define(network: Any) -> None:
        assert gate.wait(300)
        x = network.add_input("x", trt.float32, (1, 16))
        network.mark_output(network.add_activation(x, trt.ActivationType.RELU).get_output(0))

    log = tmp_path / "kept.engine.manifest.json"
    first = Build(define, isolation="thread", history=False, log_file=str(log)).start()
    try:
        done = Build(SMALL, history=False, isolation="thread").start()
        assert done.wait(300) == "succeeded", done.status_detail
        with pytest.raises(ValueError, match=taken("manifest (beside path=)", "log_file=")):
            done.save(tmp_path / "kept.engine")
        assert not (tmp_path / "kept.engine").exists()  # refused before the engine was written
        assert first.status == "running"
    finally:
        gate.set()
        assert first.wait(300) == "succeeded"
    assert log.stat().st_size > 0


def test_a_hard_link_to_a_running_builds_events_file_is_that_file(
    held: tuple[Build, dict[str, Path], threading.Event], tmp_path: Path
) -> None:
    """The second re-run: ``events=`` through a hard link (another name of the same file) was let in, and both
    builds' events interleaved in one recording."""
    first, files, gate = held
    alias = tmp_path / "alias.jsonl"
    alias.hardlink_to(files["events"])
    with pytest.raises(ValueError, match=taken("events=", "events=")):
        Build(SMALL, history=False, events=str(alias))
    gate.set()
    assert first.wait(300) == "succeeded", first.status_detail
    assert Build(SMALL, history=False, events=str(alias)).start().wait(300) == "succeeded"  # free once it ended


def test_a_running_builds_new_engine_through_a_bind_mount_of_its_folder_is_that_file(
    held: tuple[Build, dict[str, Path], threading.Event], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 35's third re-run: a folder mounted at a second path (a container's bind mount) names the running
    build's engine, not written yet, by another real path: a second build was let write it, the last one won."""
    _first, files, _gate = held
    view = tmp_path_factory.mktemp("view")
    if subprocess.run(["mount", "--bind", str(files["engine"].parent), str(view)], capture_output=True).returncode:
        pytest.skip("bind mounts need root here")
    try:
        assert not files["engine"].exists()  # not written yet: only its folder and name name it
        with pytest.raises(ValueError, match=taken("output=", "output=")):
            Build(SMALL, history=False, output=str(view / files["engine"].name)).start()
    finally:
        subprocess.run(["umount", str(view)], check=True)
