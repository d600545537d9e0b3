"""The manifest beside every engine, reuse of an engine whose manifest matches, and check_engine: real RTX builds.

Fakes only for what cannot run here: another TensorRT version, NVIDIA TensorRT, another GPU; each is a manifest (or
a machine description) that differs from this one in exactly that fact."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

import onnx
import pytest

import trt_widget
from trt_widget import Build
from trt_widget._backend import backend_info
from trt_widget.models import deep_residual, to_bytes
from trt_widget.provenance import ManifestError, check_engine, key_of, manifest_path, read_manifest
from trt_widget.provenance._hashes import HASHES_FILE


def _build(model: Any, **options: Any) -> Build:
    build = Build(model, history=False, resources=False, **options).start()
    build.wait()
    return build


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rewrite(engine: Path, **identity: Any) -> None:
    """Make the manifest of ``engine`` say it was built with other facts (a consistent manifest: key recomputed)."""
    path = manifest_path(engine)
    data = json.loads(path.read_text())
    data["identity"].update(identity)
    if "backend" in identity or "tensorrt_version" in identity:
        data["tensorrt"].update(
            {
                k: v
                for k, v in (("backend", identity.get("backend")), ("version", identity.get("tensorrt_version")))
                if v
            }
        )
    data["key"] = key_of(data["identity"])
    path.write_text(json.dumps(data))


def _flip_weight_byte(model: onnx.ModelProto) -> bytes:
    """The model's bytes with one byte of one weight changed."""
    data = bytearray(to_bytes(model))
    raw = next(t.raw_data for t in model.graph.initializer if len(t.raw_data) > 8)
    at = bytes(data).find(raw)
    assert at > 0
    data[at + len(raw) - 1] ^= 1
    return bytes(data)


# -- the manifest ----------------------------------------------------------------------------------------------
def test_manifest_beside_output_round_trips(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "small.engine"
    build = _build(str(onnx_path), output=str(engine), optimization_level=1)
    assert build.status == "succeeded", build.status_detail
    manifest = trt_widget.read_manifest(engine)
    assert manifest.path == tmp_path / "small.engine.manifest.json"
    assert manifest.engine_sha256 == _sha(engine) and manifest.engine_size == engine.stat().st_size
    assert manifest.verify() == ""
    assert manifest.backend == backend_info()["backend"] and manifest.tensorrt_version == backend_info()["version"]
    assert manifest.options["optimization_level"] == 1
    assert manifest.identity["model"] == _sha(onnx_path)
    assert manifest.trt_widget_version == trt_widget.__version__
    assert manifest.build_s is not None and manifest.build_s > 0
    assert (
        manifest.engine_report is not None
        and build.engine_report is not None
        and manifest.engine_report["layers"] == build.engine_report.brief()["layers"]
    )
    assert read_manifest(manifest.path) == manifest  # the manifest itself or its engine
    assert build.manifest_path == str(manifest.path)


def test_save_writes_a_manifest(onnx_path: Path, tmp_path: Path) -> None:
    build = _build(str(onnx_path), isolation="thread")
    target = tmp_path / "saved.plan"
    build.save(target)
    manifest = read_manifest(target)
    assert manifest.engine_file == "saved.plan" and manifest.verify() == ""


def test_external_data_is_in_the_model_hash(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    onnx.save_model(
        deep_residual(2), folder / "model.onnx", save_as_external_data=True, location="w.bin", size_threshold=0
    )
    build = _build(str(folder / "model.onnx"), output=str(tmp_path / "m.engine"))
    assert build.status == "succeeded", build.status_detail
    data = read_manifest(tmp_path / "m.engine").data["model"]
    assert isinstance(data, dict)
    assert data["external_data"] == [
        {"location": "w.bin", "sha256": _sha(folder / "w.bin"), "size": (folder / "w.bin").stat().st_size}
    ]


def test_read_manifest_refuses_foreign_corrupt_and_edited_files(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "e.engine"
    assert _build(str(onnx_path), output=str(engine)).status == "succeeded"
    path = manifest_path(engine)
    good = path.read_text()
    path.write_text(json.dumps({"name": "another tool's file"}))
    with pytest.raises(ManifestError, match="not a trt_widget manifest"):
        read_manifest(engine)
    path.write_text(good[: len(good) // 2])
    with pytest.raises(ManifestError, match="not JSON"):
        read_manifest(engine)
    edited = json.loads(good)
    edited["identity"]["options"]["optimization_level"] = 5  # without recomputing the key
    path.write_text(json.dumps(edited))
    with pytest.raises(ManifestError, match="key does not match"):
        read_manifest(engine)
    with pytest.raises(FileNotFoundError):
        read_manifest(tmp_path / "none.engine")


def test_a_manifest_that_cannot_be_written_keeps_the_engine(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "e.engine"
    manifest_path(engine).mkdir()  # a folder where the manifest goes
    build = _build(str(onnx_path), output=str(engine))
    assert build.status == "succeeded"
    assert engine.stat().st_size == build.engine_size
    assert "manifest could not be written" in build.status_detail


# -- reuse -----------------------------------------------------------------------------------------------------
def test_second_reuse_build_returns_the_engine_without_tensorrt(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    first = _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache))
    assert first.status == "succeeded" and first.reused_from is None
    assert "built anew" in first.status_detail
    built = engine.read_bytes()
    second = _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache))
    assert second.status == "succeeded"
    assert [row["name"] for row in second.timings()] == ["Reused engine"]  # no TensorRT phase
    assert second.reused_from == str(engine)
    assert f"reused the engine in {engine}" in second.status_detail
    assert second.engine == built and engine.read_bytes() == built
    assert second.engine_report is None and "reused" in second.engine_report_reason
    assert read_manifest(engine).engine_report is not None  # the summary of the build that made it
    # from the cache, to another output
    other = tmp_path / "other.engine"
    third = _build(str(onnx_path), output=str(other), reuse=True, reuse_dir=str(cache))
    assert [row["name"] for row in third.timings()] == ["Reused engine"]
    assert third.reused_from is not None and Path(third.reused_from).parent == cache
    assert other.read_bytes() == built and read_manifest(other).verify() == ""
    # the seventh newcomer trial: the widget has them too (BuildWidget.reused_from was an AttributeError)
    from trt_widget import BuildWidget

    widget = BuildWidget(
        str(onnx_path), output=str(other), reuse=True, reuse_dir=str(cache), history=False, resources=False
    ).start()
    assert widget.wait(120) == "succeeded"
    assert widget.reused_from == str(other)  # in place: its engine and manifest match
    assert widget.engine_report is None and "reused" in widget.engine_report_reason
    assert widget.cold_builder is False  # no builder process ran
    widget.close()


def test_one_byte_of_the_model_builds_anew(tmp_path: Path) -> None:
    model = deep_residual(2)
    path, engine, cache = tmp_path / "m.onnx", tmp_path / "m.engine", tmp_path / "cache"
    path.write_bytes(to_bytes(model))
    assert _build(str(path), output=str(engine), reuse=True, reuse_dir=str(cache)).status == "succeeded"
    path.write_bytes(_flip_weight_byte(model))
    again = _build(str(path), output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.status == "succeeded" and again.reused_from is None
    assert "Reused engine" not in [row["name"] for row in again.timings()]
    assert "built anew" in again.status_detail and "the model's content" in again.status_detail
    assert read_manifest(engine).identity["model"] == _sha(path)


def test_one_byte_of_the_external_data_builds_anew(tmp_path: Path) -> None:
    folder, engine, cache = tmp_path / "m", tmp_path / "m.engine", tmp_path / "cache"
    folder.mkdir()
    onnx.save_model(
        deep_residual(2), folder / "model.onnx", save_as_external_data=True, location="w.bin", size_threshold=0
    )
    assert _build(str(folder / "model.onnx"), output=str(engine), reuse=True, reuse_dir=str(cache)).reused_from is None
    weights = bytearray((folder / "w.bin").read_bytes())
    weights[-1] ^= 1
    (folder / "w.bin").write_bytes(bytes(weights))
    again = _build(str(folder / "model.onnx"), output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.status == "succeeded" and again.reused_from is None
    assert "external data" in again.status_detail


def test_one_option_builds_anew_naming_it(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    assert _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache)).status == "succeeded"
    again = _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache), optimization_level=1)
    assert again.reused_from is None
    assert "option optimization_level: null -> 1" in again.status_detail


def test_another_tensorrt_version_builds_anew(onnx_path: Path, tmp_path: Path) -> None:
    engine, cache = tmp_path / "e.engine", tmp_path / "cache"
    assert _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache / "x")).status == "succeeded"
    _rewrite(engine, tensorrt_version="0.9.0")  # as if another TensorRT built the engine at output=
    again = _build(str(onnx_path), output=str(engine), reuse=True, reuse_dir=str(cache))
    assert again.reused_from is None
    assert f'TensorRT version: "0.9.0" -> "{backend_info()["version"]}"' in again.status_detail


def test_a_corrupt_cache_entry_is_ignored_with_a_warning(onnx_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _build(str(onnx_path), reuse=True, reuse_dir=str(cache))
    entry = next(cache.glob("*.engine"))
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = _build(str(onnx_path), reuse=True, reuse_dir=str(cache))
    assert again.status == "succeeded" and again.reused_from is None
    assert "does not match its manifest's sha256" in again.status_detail
    assert read_manifest(entry).verify() == ""  # replaced by the new build's engine
    assert first.engine is not None and again.engine is not None


def test_two_concurrent_reuse_builds_leave_one_valid_engine(onnx_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    builds = [
        Build(str(onnx_path), output=str(tmp_path / f"{n}.engine"), reuse=True, reuse_dir=str(cache), history=False)
        for n in range(2)
    ]
    go = threading.Barrier(2)

    def start(build: Build) -> None:
        go.wait()
        build.start()

    threads = [threading.Thread(target=start, args=(b,)) for b in builds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for build in builds:
        build.wait()
        assert build.status == "succeeded", build.status_detail
    entries = sorted(p.name for p in cache.iterdir() if p.name != HASHES_FILE)
    assert len(entries) == 2 and entries[1] == entries[0] + ".manifest.json"
    assert read_manifest(cache / entries[0]).verify() == ""
    for n in range(2):
        assert read_manifest(tmp_path / f"{n}.engine").verify() == ""


# -- check_engine ----------------------------------------------------------------------------------------------
def test_check_engine_loads_here_and_names_why_not_elsewhere(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "e.engine"
    assert _build(str(onnx_path), output=str(engine)).status == "succeeded"
    here = backend_info()
    result = check_engine(engine)
    assert result.loads is True and result.verdict == "compatible", result.reason
    other_version = check_engine(engine, backend={**here, "version": "9.9.9"})
    assert other_version.loads is False and f"built with TensorRT {here['version']}" in other_version.reason
    assert "9.9.9" in other_version.reason
    if here["backend"] == "rtx":
        nvidia = check_engine(engine, backend={"backend": "tensorrt", "version": "10.13.0"})
        assert nvidia.loads is False
        assert "TensorRT for RTX engine; this machine has NVIDIA TensorRT" in nvidia.reason


def test_check_engine_names_another_compute_capability(onnx_path: Path, tmp_path: Path) -> None:
    engine = tmp_path / "e.engine"
    assert _build(str(onnx_path), output=str(engine)).status == "succeeded"
    h100: dict[str, object] = {"name": "NVIDIA H100", "compute_capability": "9.0"}
    _rewrite(engine, backend="tensorrt", tensorrt_version="10.13.0", device=h100)  # as built on an H100
    nvidia = {"backend": "tensorrt", "version": "10.13.0"}
    assert check_engine(engine, backend=nvidia, device=h100).loads is True
    result = check_engine(engine, backend=nvidia, device={"name": "NVIDIA A100", "compute_capability": "8.0"})
    assert result.loads is False and "compute capability 9.0" in result.reason and "8.0" in result.reason


def test_check_engine_without_a_manifest_cannot_tell(tmp_path: Path) -> None:
    engine = tmp_path / "x.engine"
    engine.write_bytes(b"not an engine")
    assert check_engine(engine).loads is None


def test_check_command(onnx_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trt_widget.__main__ import main

    engine = tmp_path / "e.engine"
    assert main(["build", str(onnx_path), "-o", str(engine), "--plain", "--reuse", "--reuse-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["check", str(engine)]) == 0
    assert "compatible" in capsys.readouterr().out
    engine.write_bytes(b"changed")
    assert main(["check", str(engine), "--json"]) == 1
    said = json.loads(capsys.readouterr().out)
    # issue 39 (seventh trial, 7): a stale manifest says nothing of whether the file loads
    assert said["loads"] is None and said["verdict"] == "cannot tell" and "manifest is stale" in said["reason"], said


def test_trtexec_save_engine_gets_a_manifest_and_reuses(onnx_path: Path, tmp_path: Path) -> None:
    from trt_widget.__main__ import main

    engine = tmp_path / "t.engine"
    argv = ["trtexec", f"--onnx={onnx_path}", f"--saveEngine={engine}", "--plain", "--reuse", f"--reuse-dir={tmp_path}"]
    assert main(argv) == 0
    first = read_manifest(engine)
    assert first.verify() == "" and first.data["reused_from"] is None
    before = manifest_path(engine).read_bytes()
    assert main(argv) == 0
    assert manifest_path(engine).read_bytes() == before  # reused in place: the manifest of the build that made it


def test_a_reused_build_is_not_recorded_in_history(onnx_path: Path, tmp_path: Path) -> None:
    from trt_widget.history import HistoryStore

    store = HistoryStore(tmp_path / "history.sqlite")
    engine = tmp_path / "e.engine"
    options: dict[str, Any] = {"output": str(engine), "reuse": True, "reuse_dir": str(tmp_path / "c")}
    for _ in range(2):
        build = Build(str(onnx_path), history=store, resources=False, **options).start()
        build.wait()
        assert build.history is not None
        assert build.history.recorded.wait(60)
    assert build.reused_from == str(engine)
    assert len(store.records()) == 1


# -- the full log ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_log_file_holds_every_line_verbose_included(onnx_path: Path, tmp_path: Path, isolation: str) -> None:
    log = tmp_path / "build.log"
    build = _build(str(onnx_path), log_file=str(log), isolation=isolation)
    assert build.status == "succeeded", build.status_detail
    lines = log.read_text().splitlines()
    verbose = [line for line in lines if " VERBOSE " in line]
    assert len(verbose) > 50  # TensorRT's VERBOSE lines, which the build's own records leave out
    assert not any(r["severity"] == "VERBOSE" for r in build.logs)
    info = {r["message"] for r in build.logs if r["severity"] == "INFO"}
    assert info and all(any(message in line for line in lines) for message in info if "\n" not in message)
    assert lines[0][:4].isdigit() and lines[0][23] == "Z"  # UTC time stamps
    assert all("\x1b" not in line and "\x1e" not in line for line in lines)
    assert not list(tmp_path.glob(".build.log.*"))  # the temporary file took its place


def test_log_file_is_bounded_with_a_note(onnx_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trt_widget._tensorrt_log as tensorrt_log

    monkeypatch.setattr(tensorrt_log, "LOG_FILE_MAX_BYTES", 4096)
    log = tmp_path / "build.log"
    assert _build(str(onnx_path), log_file=str(log), isolation="thread").status == "succeeded"
    text = log.read_text()
    assert len(text.encode()) < 4096 + 200
    assert text.splitlines()[-1].startswith("[trt_widget: the log was cut here at 4,096 bytes")


def test_log_file_may_not_be_the_engine(onnx_path: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="log_file= and output= are the same file"):
        Build(str(onnx_path), output=str(tmp_path / "e"), log_file=str(tmp_path / "e"))


@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_a_logging_handler_receives_the_builds_lines(
    onnx_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, isolation: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="trt_widget.tensorrt")
    # TensorRT for RTX logs a warning for a timing cache (it ignores them); NVIDIA TensorRT for a cache file that
    # is not one
    cache = tmp_path / "cache.bin"
    cache.write_bytes(b"not a timing cache")
    build = _build(str(onnx_path), isolation=isolation, timing_cache=str(cache))
    assert build.status == "succeeded", build.status_detail
    records = [r for r in caplog.records if r.name == "trt_widget.tensorrt"]
    warned = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert build.problems and [p["message"] for p in build.problems] == warned
    infos = {r.getMessage() for r in records if r.levelno == logging.INFO}
    assert infos >= {r["message"] for r in build.logs if r["severity"] == "INFO" and r["message"].isprintable()}
    assert any(r.levelno == logging.DEBUG for r in records)  # VERBOSE lines the build saw
    assert all(getattr(r, "build", None) == str(onnx_path) for r in records)


# -- the bug-report bundle -------------------------------------------------------------------------------------
def test_bundle_command_lists_its_contents_and_holds_no_model(onnx_path: Path, tmp_path: Path) -> None:
    import zipfile

    from trt_widget.__main__ import main

    target = tmp_path / "report.zip"
    assert main(["bundle", str(onnx_path), "-o", str(target), "--opt-level", "1"]) == 0
    with zipfile.ZipFile(target) as archive:
        names = set(archive.namelist())
        readme = archive.read("README.txt").decode()
        log = archive.read("log.txt").decode()
        events = [json.loads(line) for line in archive.read("events.jsonl").decode().splitlines()]
        options = json.loads(archive.read("options.json"))
        manifest = json.loads(archive.read("manifest.json"))
        version = json.loads(archive.read("versions.json"))
    expected = {
        "log.txt",
        "events.jsonl",
        "options.json",
        "manifest.json",
        "engine_report.json",
        "versions.json",
        "gpu.json",
        "timings.json",
        "build.json",
    }
    assert names == expected | {"README.txt"}
    assert all(name in readme for name in expected) and "No model, engine" in readme
    assert " VERBOSE " in log  # the full log
    assert events[0]["event"] == "build_start" and events[-1]["event"] == "build_end"
    assert options["optimization_level"] == 1
    assert manifest["identity"]["model"] == _sha(onnx_path)
    assert version["tensorrt"] == backend_info() and version["trt_widget"] == trt_widget.__version__
    assert not any(name.startswith(("model/", "engine/")) for name in names)


def test_bundle_include_model_and_redact(onnx_path: Path, tmp_path: Path) -> None:
    import zipfile

    build = _build(str(onnx_path), output=str(tmp_path / "e.engine"), isolation="thread")
    target = tmp_path / "b.zip"
    build.bundle(target, include_model=True, redact=True)
    with zipfile.ZipFile(target) as archive:
        assert archive.read("model/small.onnx") == onnx_path.read_bytes()
        assert archive.read("engine/e.engine") == build.engine
        texts = [archive.read(n).decode() for n in archive.namelist() if n.endswith((".txt", ".json", ".jsonl"))]
    assert all(str(tmp_path) not in text for text in texts)
    assert any("<model-dir>" in text for text in texts)


def test_bundle_redact_also_replaces_paths_json_or_the_log_escaped(tmp_path: Path, small_model: Any) -> None:
    """A folder named with a quote, a backslash or a tab is written escaped in the JSON members (``\\"``) and in
    the log (``\\x09``): --redact replaced only the raw text, so the folder stood in events, options and
    manifest."""
    import zipfile

    folder = tmp_path / 'my "proj"\\ a\tb'
    folder.mkdir()
    model = folder / "m.onnx"
    model.write_bytes(to_bytes(small_model))
    build = _build(str(model), output=str(folder / "e.engine"), timing_cache=str(folder / "t.cache"))
    target = tmp_path / "b.zip"
    build.bundle(target, redact=True)
    with zipfile.ZipFile(target) as archive:
        texts = {n: archive.read(n).decode() for n in archive.namelist()}
    assert any("<model-dir>/t.cache" in text for text in texts.values())
    assert not [name for name, text in texts.items() if "proj" in text], texts["options.json"]


def test_bundle_of_a_recording(onnx_path: Path, tmp_path: Path) -> None:
    import zipfile

    from trt_widget.__main__ import main

    recording = tmp_path / "rec.jsonl"
    recorded = _build(str(onnx_path), events=str(recording))
    assert recorded.status == "succeeded" and recorded.events is not None
    assert recorded.events.join(60)  # the writer thread has written build_end
    assert main(["bundle", str(recording), "-o", str(tmp_path / "r.zip")]) == 0
    with zipfile.ZipFile(tmp_path / "r.zip") as archive:
        assert json.loads(archive.read("build.json"))["status"] == "succeeded"
        assert archive.read("events.jsonl")


def test_a_cache_entry_another_user_owns_is_never_reused(onnx_path: Path, tmp_path: Path) -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    cache = tmp_path / "cache"
    assert _build(str(onnx_path), reuse=True, reuse_dir=str(cache)).status == "succeeded"
    entry = next(cache.glob("*.engine"))
    os.chown(entry, 65534, 65534)  # as if planted by "nobody" in a shared cache folder, with a consistent manifest
    again = _build(str(onnx_path), reuse=True, reuse_dir=str(cache))
    assert again.status == "succeeded" and again.reused_from is None
    assert "owned by another user" in again.status_detail


def test_check_engine_compares_versions_of_a_version_compatible_engine_as_numbers(
    onnx_path: Path, tmp_path: Path
) -> None:
    """A version-compatible engine of TensorRT 10.9 loads on 10.13 (it said "needs 10.9.0 or newer": "13" < "9" as
    text), one of 10.13 does not load on 10.9, and the reason names the version that built it, not this machine's.
    A manifest rewritten as a version-compatible build writes it: such a build cannot run here (no lean runtime)."""
    engine = tmp_path / "e.engine"
    assert _build(str(onnx_path), output=str(engine)).status == "succeeded"

    def built_with(version: str) -> None:
        path = manifest_path(engine)
        data = json.loads(path.read_text())
        data["identity"]["options"]["version_compatible"] = True
        data["identity"]["backend"] = data["tensorrt"]["backend"] = "tensorrt"
        data["identity"]["tensorrt_version"] = data["tensorrt"]["version"] = version
        data["key"] = key_of(data["identity"])
        path.write_text(json.dumps(data))

    built_with("10.9.0")
    newer = check_engine(engine, backend={"backend": "tensorrt", "version": "10.13.0"})
    assert newer.loads is True and "10.9.0" in newer.reason, newer.reason
    built_with("10.13.0")
    older = check_engine(engine, backend={"backend": "tensorrt", "version": "10.9.0"})
    assert older.loads is False and "10.13.0" in older.reason, older.reason
    built_with("10.x.0")
    odd = check_engine(engine, backend={"backend": "tensorrt", "version": "10.9.0"})
    assert odd.loads is None and odd.verdict == "cannot tell" and "10.x.0" in odd.reason, odd.reason
