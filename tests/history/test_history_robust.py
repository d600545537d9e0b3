"""History never breaks a build: unusable locations, off words, corrupt stores and unreadable rows.

Permission failures are reproduced in a subprocess where file modes bind even for root (setpriv drops the
DAC-override capabilities), since the suite runs as root, for whom mode 000 is no obstacle.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest

from trt_widget import Build
from trt_widget import history as hist
from trt_widget.history import HistoryStore, compare, list_builds
from trt_widget.models import deep_residual

PY = sys.executable
NO_DAC_OVERRIDE = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]
OFF = ["off", "OFF", " Off ", "none", "false", "no", "0"]


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the real user cache: the default store of every test is a temp file."""
    path = tmp_path / "default-history.sqlite"
    monkeypatch.setenv(hist.ENV, str(path))
    return path


def history_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning) and "history" in str(w.message)]


# -- 1. an unusable location turns history off; a failed record changes nothing -------------------------------
_BUILDS = textwrap.dedent("""
    import json, os, sys, warnings
    probe, settings = sys.argv[1], json.loads(sys.argv[2])
    try:  # do file modes bind in this process?
        open(probe, "rb").close()
        enforced = False
    except PermissionError:
        enforced = True
    from trt_widget import Build
    from trt_widget.models import deep_residual
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for setting in settings:
            build = Build(deep_residual(4), **({} if setting is None else {"history": setting})).start()
            results.append({"status": build.wait(120), "engine": len(build.engine or b""),
                            "history": build.history is not None, "problems": [p["message"] for p in build.problems]})
    print(json.dumps({"enforced": enforced, "results": results,
                      "warnings": [str(w.message) for w in caught if "history" in str(w.message)]}))
""")


def run_without_dac_override(tmp_path: Path, settings: list[Any], env: dict[str, str]) -> dict[str, Any]:
    """Build deep_residual(4) once per history setting (None: the default) where mode 000 really denies."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    probe.chmod(0)
    cmd = [PY, "-c", _BUILDS, str(probe), json.dumps(settings)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to drop root's DAC override")
        cmd = NO_DAC_OVERRIDE + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    seen: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not seen["enforced"]:
        pytest.skip("file modes do not bind in the subprocess")
    return seen


def test_env_var_at_an_unreadable_directory_warns_once_and_builds_without_history(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        seen = run_without_dac_override(tmp_path, [None, None], {hist.ENV: str(locked)})
    finally:
        locked.chmod(0o700)
    assert [r["status"] for r in seen["results"]] == ["succeeded", "succeeded"]
    assert all(r["engine"] > 0 and not r["history"] for r in seen["results"])
    assert len(seen["warnings"]) == 1  # once per location and reason, not once per build
    assert str(locked / hist.FILENAME) in seen["warnings"][0] and "Permission denied" in seen["warnings"][0]
    for result in seen["results"]:  # each build says it ran without history
        assert any("cannot use the history store" in p and str(locked) in p for p in result["problems"])


def test_unopenable_store_file_as_argument_or_env_var(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    store.write_bytes(b"")
    store.chmod(0)
    seen = run_without_dac_override(tmp_path, [str(store), None], {hist.ENV: str(store)})
    assert [(r["status"], r["history"]) for r in seen["results"]] == [("succeeded", False)] * 2
    assert seen["warnings"] == [
        f"trt_widget: cannot use the history store {store} (Permission denied); builds run without history"
    ]


def test_a_file_in_the_way_turns_history_off_even_when_warnings_are_errors(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    location = blocker / "sub" / "h.sqlite"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build = Build(deep_residual(4), history=str(location))
    assert build.history is None
    (message,) = history_warnings(caught)
    assert str(location) in message and "history" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same problem (already warned) and a new one: neither raises
        again = Build(deep_residual(4), history=str(location)).start()
        other = Build(deep_residual(4), history=str(blocker / "elsewhere.sqlite")).start()
        assert again.wait(120) == other.wait(120) == "succeeded"
    for b in (again, other):
        assert b.history is None and b.engine
        assert any("cannot use the history store" in p["message"] for p in b.problems)


def test_a_failure_while_recording_keeps_status_and_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")

    def broken_add(record: dict[str, Any], **options: Any) -> int:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "add", broken_add)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build = Build(deep_residual(4), history=store).start()
        assert build.wait(120) == "succeeded"
        assert build.history is not None
        assert build.history.recorded.wait(60)
    assert build.status == "succeeded" and build.engine and build.error is None
    assert build.history is not None
    assert build.history.recorded_id is None and "disk I/O error" in (build.history.error or "")
    assert any("could not record" in m for m in history_warnings(caught))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recording warning raising inside the build's end changes nothing
        strict = Build(deep_residual(4), history=store).start()
        assert strict.wait(120) == "succeeded"
    assert strict.history is not None
    assert strict.engine and strict.status == "succeeded" and strict.history.recorded.wait(60)  # after wait()


# -- 2. the argument and the environment variable agree --------------------------------------------------------
@pytest.mark.parametrize("word", OFF)
def test_off_words_disable_history_as_argument_and_env_var(
    word: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Build(deep_residual(4), history=word).history is None
    with pytest.raises(RuntimeError, match="turned off"):
        list_builds(word)
    monkeypatch.setenv(hist.ENV, word)
    assert hist.default_path() is None and Build(deep_residual(4)).history is None
    assert list(tmp_path.iterdir()) == []  # no store file named after the word


@pytest.mark.parametrize("word", ["on", "TRUE", "yes", "1"])
def test_on_words_mean_the_default_location(
    word: str, private_history: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    build = Build(deep_residual(4), history=word)
    assert build.history is not None and build.history.store.path == private_history
    monkeypatch.setenv(hist.ENV, word)
    assert hist.default_path() == hist.history_path(True) == hist.history_path("on")
    default = hist.default_path()
    assert default is not None and default.name == hist.FILENAME and default.parent.name == "trt_widget"
    assert not (tmp_path / word).exists()


def test_one_parser_for_paths(tmp_path: Path) -> None:
    assert hist.history_path(str(tmp_path)) == hist.history_path(tmp_path) == tmp_path / hist.FILENAME
    assert hist.history_path(f"{tmp_path}/new-dir/") == tmp_path / "new-dir" / hist.FILENAME
    assert hist.history_path(tmp_path / "off") == tmp_path / "off"  # a Path object is always a path
    assert hist.history_path(False) is None and hist.history_path("") is None


# -- 3. a corrupt store is moved aside and replaced ------------------------------------------------------------
def test_a_corrupt_store_is_moved_aside_once_and_history_works_again(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    junk = b"SQLite format 3\x00" + os.urandom(64 * 1024)  # SQLite's magic, then garbage: a damaged store
    path.write_bytes(junk)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = Build(deep_residual(4), history=str(path)).start()
        assert first.history is not None
        assert first.wait(120) == "succeeded" and first.history.recorded.wait(60)
        second = Build(deep_residual(4), history=str(path)).start()
        assert second.history is not None
        assert second.wait(120) == "succeeded" and second.history.recorded.wait(60)
    (aside,) = tmp_path.glob("h.sqlite.corrupt-*")
    assert aside.read_bytes() == junk
    (message,) = history_warnings(caught)  # one warning, saying where the old file went
    assert str(path) in message and str(aside) in message
    assert first.history is not None and second.history is not None
    assert first.history.error is None and second.history.error is None
    assert second.history.match is not None and second.history.match["id"] == first.history.recorded_id
    assert [b["id"] for b in list_builds(path)] == [second.history.recorded_id, first.history.recorded_id]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("content", [b"# my notes\n" * 100, b"\x00garbage" + b"\xff" * 4096])
def test_a_file_that_is_not_sqlite_is_never_moved_or_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    """Issue 35: ``TRT_WIDGET_HISTORY=notes.md`` renamed the user's notes aside. Now the build runs without history,
    saying why, and the file stays as it was; a direct call says the same as a ValueError."""
    notes = tmp_path / "notes.md"
    notes.write_bytes(content)
    monkeypatch.setenv("TRT_WIDGET_HISTORY", str(notes))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build = Build(deep_residual(4)).start()
        assert build.wait(120) == "succeeded"
    assert build.history is None
    assert any("not an SQLite database" in str(w.message) and str(notes) in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="not an SQLite database"):
        HistoryStore(notes).records()
    assert notes.read_bytes() == content and sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


def test_a_damaged_sqlite_store_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path)
    for i in range(40):
        padded: dict[str, Any] = {"key": f"k{i}", "status": "succeeded", "total_s": 1.0, "rows": [], "pad": "x" * 3000}
        store.add(cast(Any, padded))  # a record padded past what one page holds: the damage hits rows
    data = bytearray(path.read_bytes())
    data[8192:16384] = os.urandom(8192)  # pages 3-4: a valid header, damaged b-tree
    path.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="moved it aside"):
        assert len(HistoryStore(path)) == 0
    assert len(list(tmp_path.glob("h.sqlite.corrupt-*"))) == 1
    assert list_builds(path) == []


# -- 4. one bad row never breaks listing or ETAs ---------------------------------------------------------------
def test_unreadable_rows_are_flagged_in_listings_and_skipped_for_etas(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    first = Build(deep_residual(4), history=store).start()
    assert first.history is not None
    assert first.wait(120) == "succeeded" and first.history.recorded.wait(60)
    key, now = first.history.key, time.time()
    bad_rows = json.dumps(
        {
            "key": key,
            "status": "succeeded",
            "created": now,
            "total_s": 1.0,
            "label": "bad rows",
            "rows": [{"name": "no path"}],
        }
    )
    with closing(sqlite3.connect(store.path)) as conn, conn:  # newer than the good record, same key
        conn.executemany(
            "INSERT INTO builds (key, status, created, total_s, label, record) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (key, "succeeded", now, 1.0, "bad json", "{not json"),
                (key, "succeeded", now, 1.0, "not an object", "[1, 2]"),
                (key, "succeeded", now, 1.0, "bad rows", bad_rows),
            ],
        )

    listed = list_builds(store)
    assert [b["label"] for b in listed[:3]] == ["bad rows", "not an object", "bad json"]
    assert "error" not in listed[0] and listed[0]["phases"] == 1  # readable, only useless for an ETA
    assert all("unreadable" in b["error"] and b["phases"] == 0 and b["when"] != "?" for b in listed[1:3])
    assert listed[3]["id"] == first.history.recorded_id and "error" not in listed[3]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = Build(deep_residual(4), history=store)
        assert again.history is not None
        assert again.history.ready.wait(60)
    assert again.history is not None
    assert again.history.error is None and again.history.match is not None
    assert again.history.match["id"] == first.history.recorded_id  # the newest *usable* record
    eta = again.history.eta()
    assert eta is not None and eta["total_s"] == pytest.approx(first.elapsed_s, abs=0.01)
    skipped = history_warnings(caught)
    assert len(skipped) == 3 and all("skipping record" in m for m in skipped)
    with pytest.raises(ValueError, match="unreadable"):
        compare(listed[2]["id"], first.history.recorded_id, store=store)
