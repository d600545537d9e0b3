"""Files written for a build (issue 35): never through a symlink another user planted in a shared sticky folder
(defect 2), an existing file keeps its permissions (defect 3), one output-path policy for every writer that
refuses the model, its external data and the recording (defect 25), and no two builds writing one engine file
(defect 16). The other user is real: ``setpriv --reuid=nobody`` plants the links."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest
from fixture_types import WaitUntil
from other_user import as_nobody

from trt_widget import Build, BuildMatrix, BuildWidget
from trt_widget._files import UntrustedLink, atomic_write, check_output
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import manifest_path
from trt_widget.report import timeline

SMALL = to_bytes(deep_residual(2))
PRECIOUS = b"the victim's own file\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """A finished build of a model file that has external data beside it (``m.onnx`` + ``m.data``)."""
    folder = tmp_path_factory.mktemp("model")
    model = deep_residual(2)
    onnx.save_model(model, str(folder / "m.onnx"), save_as_external_data=True, location="m.data", size_threshold=0)
    build = Build(str(folder / "m.onnx"), history=False, isolation="thread").start()
    assert build.wait(120) == "succeeded"
    return build


# -- defect 2: links another user planted -------------------------------------------------------------------
@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(PRECIOUS)
    path.chmod(0o600)
    return path


def plant(link: Path, target: Path) -> None:
    """``nobody`` makes ``link`` a symlink to ``target``."""
    as_nobody("ln", "-s", str(target), str(link), timeout=30)
    assert link.is_symlink() and link.lstat().st_uid != os.geteuid()


WRITERS: dict[str, Callable[[Build, str], Any]] = {
    "save": lambda b, p: b.save(p),
    "to_html": lambda b, p: b.to_html(p),
    "to_trace": lambda b, p: b.to_trace(p),
    "widget.to_json": lambda b, p: BuildWidget(None, build=b).to_json(p),
    "timeline.save_svg": lambda b, p: timeline.save_svg(b, p),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_no_writer_follows_a_link_another_user_planted(built: Build, shared: Path, victim: Path, writer: str) -> None:
    plant(shared / "out", victim)
    with pytest.raises(UntrustedLink, match=r"a symbolic link that another user \(uid \d+\) owns"):
        WRITERS[writer](built, str(shared / "out"))
    assert victim.read_bytes() == PRECIOUS and (shared / "out").is_symlink()


def test_output_events_and_a_folder_link_are_refused_before_the_build(shared: Path, victim: Path) -> None:
    plant(shared / "m.engine", victim)
    plant(shared / "events.jsonl", victim)
    plant(shared / "dir", victim.parent)
    model = shared.parent / f"{shared.name}-m.onnx"
    model.write_bytes(SMALL)
    try:
        with pytest.raises(UntrustedLink):
            Build(str(model), history=False, isolation="thread", output=str(shared / "m.engine"))
        with pytest.raises(UntrustedLink):
            Build(str(model), history=False, isolation="thread", events=str(shared / "events.jsonl")).start()
        with pytest.raises(UntrustedLink):  # a planted link to a folder, on the way to the file
            Build(str(model), history=False, isolation="thread", output=str(shared / "dir" / victim.name))
    finally:
        model.unlink()
    assert victim.read_bytes() == PRECIOUS


def test_a_timing_cache_or_history_store_link_is_not_followed(shared: Path, victim: Path) -> None:
    plant(shared / "cache.timing", victim)
    plant(shared / "history.sqlite", victim)
    victim.write_bytes(b"")  # an empty file: SQLite would make it a store
    with pytest.raises(UntrustedLink):
        Build(SMALL, history=False, isolation="thread", timing_cache=str(shared / "cache.timing"))
    with pytest.warns(RuntimeWarning, match="another user"):
        build = Build(SMALL, history=str(shared / "history.sqlite"), isolation="thread").start()
    assert build.wait(120) == "succeeded" and build.history is None
    assert victim.read_bytes() == b""


def test_the_cli_writes_nothing_through_planted_links(shared: Path, victim: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    notes = tmp_path / "notes.html"
    notes.write_bytes(PRECIOUS)
    plant(shared / "model.engine", victim)
    plant(shared / "report.html", notes)
    files = ["-o", str(shared / "model.engine"), "--report", str(shared / "report.html")]
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "build", str(model), *files, "--plain"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRT_WIDGET_HISTORY": "off"},
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "another user" in done.stderr
    assert victim.read_bytes() == PRECIOUS and notes.read_bytes() == PRECIOUS


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_planted_timing_cache_lock_is_not_followed(shared: Path, victim: Path, tmp_path: Path) -> None:
    cache = shared / "cache.timing"
    plant(shared / "cache.timing.lock", victim)
    build = Build(SMALL, history=False, isolation="thread", timing_cache=str(cache)).start()
    assert build.wait(120) == "succeeded"  # the cache is an extra: the build succeeds, says why it was not saved
    assert any("cache.timing.lock" in r["message"] and "symbolic link" in r["message"] for r in build.problems)
    assert victim.read_bytes() == PRECIOUS and stat.S_IMODE(victim.stat().st_mode) == 0o600


def test_a_link_in_a_folder_another_user_owns_is_not_followed(built: Build, shared: Path, victim: Path) -> None:
    """Not only in sticky folders: ``nobody``'s own folder, which root may write into, holds ``nobody``'s links."""
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    theirs = shared / "theirs"
    subprocess.run([*nobody, "mkdir", "-m", "0777", str(theirs)], check=True, timeout=30)
    plant(theirs / "m.engine", victim)
    with pytest.raises(UntrustedLink):
        built.save(str(theirs / "m.engine"))
    assert victim.read_bytes() == PRECIOUS


def test_a_link_of_ones_own_is_still_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.bin"
    target.write_bytes(b"old")
    (tmp_path / "link.bin").symlink_to(target)
    atomic_write(tmp_path / "link.bin", b"new")
    assert target.read_bytes() == b"new" and (tmp_path / "link.bin").is_symlink()


# -- defect 3: permissions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_rewritten_file_keeps_its_mode(built: Build, tmp_path: Path, writer: str) -> None:
    path = tmp_path / "private"
    path.write_bytes(b"old")
    path.chmod(0o600)
    WRITERS[writer](built, str(path))
    assert path.read_bytes() != b"old" and stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_rewritten_file_keeps_its_group(built: Build, tmp_path: Path, writer: str) -> None:
    """Issue 35 (re-run): a 0640 file of group ``nogroup`` came back of the writer's own group, widening who reads
    it where users share a primary group."""
    import grp

    path = tmp_path / "shared"
    path.write_bytes(b"old")
    gid = grp.getgrnam("nogroup").gr_gid
    os.chown(path, -1, gid)
    path.chmod(0o640)
    WRITERS[writer](built, str(path))
    assert path.read_bytes() != b"old" and path.stat().st_gid == gid and stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_file_another_user_planted_does_not_lend_its_mode(built: Build, shared: Path) -> None:
    """Keeping the mode is for one's own files: a world-writable file ``nobody`` put where the engine goes would
    leave the new engine writable by ``nobody``; set-id bits are never kept."""
    planted = shared / "m.engine"
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    subprocess.run([*nobody, "sh", "-c", f"echo x > {planted} && chmod 0666 {planted}"], check=True, timeout=30)
    built.save(str(planted))
    info = planted.stat()
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o022 == 0
    own = shared / "own.engine"
    own.write_bytes(b"old")
    own.chmod(0o4755)
    built.save(str(own))
    assert stat.S_IMODE(own.stat().st_mode) == 0o755


@pytest.mark.usefixtures("nvidia_timing_cache")
def test_output_and_timing_cache_keep_their_mode_and_a_new_file_gets_opens_mode(tmp_path: Path) -> None:
    engine, cache = tmp_path / "m.engine", tmp_path / "m.cache"  # thread: the timing-cache fake is in-process
    first = Build(SMALL, history=False, isolation="thread", output=str(engine), timing_cache=str(cache)).start()
    assert first.wait(120) == "succeeded"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(engine.stat().st_mode) == 0o666 & ~umask
    engine.chmod(0o600)
    cache.chmod(0o640)
    again = Build(SMALL, history=False, isolation="thread", output=str(engine), timing_cache=str(cache)).start()
    assert again.wait(120) == "succeeded"
    assert stat.S_IMODE(engine.stat().st_mode) == 0o600 and stat.S_IMODE(cache.stat().st_mode) == 0o640


# -- defect 25: one output-path policy -----------------------------------------------------------------------
@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("which", ["m.onnx", "m.data"])
def test_no_writer_overwrites_the_model_or_its_external_data(built: Build, writer: str, which: str) -> None:
    path = Path(built.source.value).parent / which
    before = path.read_bytes()
    with pytest.raises(ValueError, match="the model file itself" if which == "m.onnx" else "external data"):
        WRITERS[writer](built, str(path))
    assert path.read_bytes() == before


def test_build_options_refuse_the_models_external_data(built: Build) -> None:
    model, data = built.source.value, str(Path(built.source.value).parent / "m.data")
    makers: list[Callable[[], Build]] = [
        lambda: Build(model, history=False, isolation="thread", output=data),
        lambda: Build(model, history=False, isolation="thread", timing_cache=data),
        lambda: Build(model, history=False, isolation="thread", events=data),
    ]
    for make in makers:
        with pytest.raises(ValueError, match="external data"):
            make()


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_no_writer_writes_onto_a_folder_or_leaves_a_partial_file(built: Build, tmp_path: Path, writer: str) -> None:
    (tmp_path / "folder").mkdir()
    with pytest.raises(OSError, match="directory"):
        WRITERS[writer](built, str(tmp_path / "folder"))
    assert sorted(os.listdir(tmp_path)) == ["folder"] and os.listdir(tmp_path / "folder") == []


def test_widget_to_json_writes_atomically_the_state(built: Build, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    text = BuildWidget(None, build=built).to_json(str(path))
    assert json.loads(path.read_text()) == json.loads(text) and not list(tmp_path.glob(".*.part"))


def test_a_replays_writers_refuse_its_recording(tmp_path: Path) -> None:
    recording = tmp_path / "r.jsonl"
    recorded = Build(SMALL, history=False, isolation="thread", events=str(recording)).start()
    assert recorded.wait(120) == "succeeded" and recorded.events is not None and recorded.events.join(30)
    kept = recording.read_bytes()
    replay = Build.from_events(recording).start()
    replay.wait(60)
    for writer in ("to_html", "to_trace", "widget.to_json", "timeline.save_svg"):
        with pytest.raises(ValueError, match="the recording itself"):
            WRITERS[writer](replay, str(recording))
    assert recording.read_bytes() == kept
    assert check_output(tmp_path / "other.html", "path", replay) == tmp_path / "other.html"


# -- defect 16: two builds, one engine file ------------------------------------------------------------------
def test_a_matrix_of_two_models_with_one_file_name_writes_two_engines(tmp_path: Path) -> None:
    for folder, blocks in (("a", 2), ("b", 3)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.onnx").write_bytes(to_bytes(deep_residual(blocks)))
    out = tmp_path / "out"
    out.mkdir()
    matrix = BuildMatrix(
        [str(tmp_path / "a" / "m.onnx"), str(tmp_path / "b" / "m.onnx")], output_dir=out, history=False
    )
    matrix.start()
    assert matrix.wait(240) == "done"
    assert [b.status for b in matrix.builds] == ["succeeded", "succeeded"]
    written = sorted(name for name in os.listdir(out) if not name.endswith(".manifest.json"))
    assert written == ["m-2-default.engine", "m-default.engine"]
    assert {(out / name).read_bytes() for name in written} == {b.engine for b in matrix.builds}
    assert sorted(os.listdir(out)) == sorted([*written, *(f"{name}.manifest.json" for name in written)])


def test_a_matrix_refuses_a_second_cell_writing_the_same_output(tmp_path: Path) -> None:
    engine = tmp_path / "one.engine"
    matrix = BuildMatrix([SMALL, to_bytes(deep_residual(3))], output=str(engine), history=False)
    matrix.start()
    assert matrix.wait(240) == "done"
    assert [b.status for b in matrix.builds] == ["succeeded", "failed"]
    assert "is also the output of" in str(matrix.builds[1].error)
    assert engine.read_bytes() == matrix.builds[0].engine


def test_a_second_build_started_onto_a_running_builds_output_is_refused(
    tmp_path: Path, long_model_bytes: bytes, wait_until: WaitUntil
) -> None:
    engine = tmp_path / "m.engine"
    first = Build(long_model_bytes, history=False, isolation="process", output=str(engine)).start()
    second = Build(SMALL, history=False, isolation="thread", output=str(tmp_path / "." / "m.engine"))
    with pytest.raises(ValueError, match="is being written by another build that is still running"):
        second.start()
    assert second.status == "idle"
    assert first.wait(240) == "succeeded"
    assert second.start().wait(120) == "succeeded"  # once the first ended, the same file may be written again


FIFO_READER = """
import os, select, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)  # a reader from now on: a writer's open succeeds
print("reading", flush=True)
while True:
    if select.select([fd], [], [], 0.1)[0] and (data := os.read(fd, 65536)):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
"""


def test_events_are_not_written_into_a_file_or_fifo_another_user_put_in_a_shared_folder(
    shared: Path, wait_until: WaitUntil
) -> None:
    """events= is appended to in place: a world-writable file or a FIFO (with ``nobody`` reading it) that ``nobody``
    made in /tmp first received every event: the model's path, the options, TensorRT's log lines."""
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    planted = shared / "events.jsonl"
    subprocess.run([*nobody, "sh", "-c", f"touch {planted} && chmod 666 {planted}"], check=True, timeout=30)
    fifo = shared / "events.fifo"
    subprocess.run([*nobody, "mkfifo", str(fifo)], check=True, timeout=30)
    reader = subprocess.Popen([*nobody, sys.executable, "-c", FIFO_READER, str(fifo)], stdout=subprocess.PIPE)
    try:
        assert reader.stdout is not None and reader.stdout.readline() == b"reading\n"
        for path in (planted, fifo):
            with pytest.raises(PermissionError, match=r"another user \(uid \d+\) put in the shared folder"):
                Build(SMALL, history=False, isolation="thread", events=str(path)).start()
        assert planted.read_bytes() == b""
    finally:
        reader.kill()
        out, _ = reader.communicate(timeout=30)
    assert out == b""  # nothing reached nobody's reader
    mine = shared / "mine.jsonl"  # a new file of one's own in the same folder is written as before
    build = Build(SMALL, history=False, isolation="thread", events=str(mine)).start()
    assert build.wait(120) == "succeeded"
    wait_until(lambda: '"build_end"' in mine.read_text(), timeout=60, what="the events writer to write build_end")


def test_a_part_file_named_with_an_impossible_pid_does_not_stop_a_write(shared: Path) -> None:
    """``nobody``'s ``.m.engine.99999999999999999999999.x.part`` beside the output: the sweep of stale part files
    asked os.kill about that pid and raised OverflowError, so every build writing ``m.engine`` in that folder
    failed ("unexpected OverflowError") and left its own 400 KB part file behind."""
    planted = shared / f".m.engine.{'9' * 23}.x.part"
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    subprocess.run([*nobody, "touch", str(planted)], check=True, timeout=30)
    build = Build(SMALL, history=False, isolation="thread", output=str(shared / "m.engine")).start()
    assert build.wait(120) == "succeeded", build.status_detail
    assert (shared / "m.engine").stat().st_size > 0
    assert not [p for p in shared.iterdir() if p.name.endswith(".part") and p.owner() != "nobody"]


def test_no_folder_is_made_through_a_link_another_user_planted(shared: Path, tmp_path: Path) -> None:
    """``mkdir -p`` follows links: BuildMatrix's ``output_dir``, a history store's folder and ``reuse_dir`` under
    ``nobody``'s link to the victim's folder made ``sub`` there (as root) before the write itself was refused."""
    victim = tmp_path / "victim"
    victim.mkdir()
    plant(shared / "dir", victim)
    model = tmp_path / "m.onnx"
    model.write_bytes(SMALL)
    with pytest.raises(UntrustedLink):
        BuildMatrix([str(model)], output_dir=str(shared / "dir" / "engines"), history=False)
    build = Build(str(model), history=str(shared / "dir" / "history" / "h.sqlite"), isolation="thread").start()
    assert build.wait(120) == "succeeded"
    build = Build(
        str(model), history=False, isolation="thread", output=str(tmp_path / "m.engine"), reuse=True,
        reuse_dir=str(shared / "dir" / "cache"),
    ).start()  # fmt: skip
    assert build.wait(120) == "succeeded"
    assert list(victim.iterdir()) == []


def _unblock(fifo: Path) -> None:
    """Open ``fifo`` for writing and close it: a reader blocked in ``open`` (the code before the fix) gets EOF."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize("planted", ["fifo", "link to /dev/zero"])
@pytest.mark.usefixtures("nvidia_timing_cache")
def test_a_timing_cache_another_user_swaps_after_the_start_check_costs_the_cache_not_the_build(
    shared: Path, tmp_path: Path, planted: str
) -> None:
    """Seventh re-run: ``timing_cache=`` is checked when the build is made, but read again later (to load it, to
    merge it on save, to hash it for the manifest). ``nobody``, who made the cache file first in a shared folder,
    may rename over it at any time: a FIFO there held the build in ``open`` for ever, a link to ``/dev/zero`` was
    read until memory ran out (a MemoryError, or the OOM killer) and hashed for ever. Only a regular file is read;
    the build succeeds without the cache, saying why."""
    trt = __import__("trt_widget").trt
    cache = shared / "tc.cache"
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    subprocess.run([*nobody, "sh", "-c", f": > {cache}"], check=True, timeout=30)  # a (shared) cache of theirs
    swap = f"mkfifo {cache}.new" if planted == "fifo" else f"ln -s /dev/zero {cache}.new"
    swap += f" && mv -f {cache}.new {cache}"

    def define(network: Any) -> None:  # runs after the start check, before the cache is read
        subprocess.run([*nobody, "sh", "-c", swap], check=True, timeout=30)
        x = network.add_input("x", trt.float32, (1, 16))
        y = network.add_activation(x, trt.ActivationType.RELU).get_output(0)
        y.name = "y"
        network.mark_output(y)

    output = tmp_path / "m.engine"
    build = Build(define, history=False, isolation="thread", timing_cache=str(cache), output=str(output)).start()
    try:
        assert build.wait(120) == "succeeded", build.status_detail
    finally:
        if planted == "fifo":
            _unblock(cache)
            build.wait(60)
    assert output.stat().st_size > 0
    warnings = " ".join(str(p.get("message", "")) for p in build.problems)
    assert "timing_cache" in warnings and "not a regular file" in warnings, warnings
    manifest = json.loads(manifest_path(output).read_text())  # nothing of /dev/zero or the FIFO was hashed
    assert manifest["timing_cache"]["sha256"] is None
