"""Timing history: records of real builds in a temp store, ETA from a matching past build, compare, cross-process."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from trt_widget import Build
from trt_widget import history as hist
from trt_widget.history import HistoryStore, compare, list_builds
from trt_widget.history import _keys as hist_keys
from trt_widget.models import deep_residual

PY = sys.executable


@pytest.fixture(autouse=True)
def private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the real user cache: the default store of every test is a temp file."""
    path = tmp_path / "default-history.sqlite"
    monkeypatch.setenv(hist.ENV, str(path))
    return path


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory, resnet50_bytes: bytes) -> dict[str, Any]:
    """Two real resnet50 builds into one store; the second samples its ETA while it runs."""
    store = HistoryStore(tmp_path_factory.mktemp("hist") / "h.sqlite")
    # a warm builder process for both: a cold one adds a "Starting the builder process" row to the first only
    assert Build(deep_residual(2), history=False).start().wait(120) == "succeeded"
    first = Build(resnet50_bytes, history=store).start()
    assert first.wait(300) == "succeeded"
    assert first.history is not None
    assert first.history.recorded.wait(60) and first.history.recorded_id is not None
    assert first.history.match is None  # nothing to go on the first time

    second = Build(resnet50_bytes, history=store)
    assert second.history is not None
    assert second.history.ready.wait(60)
    before = second.history.eta()  # idle: the whole past build is expected
    second.start()
    etas = []
    while not second.done():  # sampling what the widget's pump would see (not a synchronisation sleep)
        before_s = second.elapsed_s  # the build's clock on either side of the ETA's own reading of it
        eta = second.history.eta()
        if eta is not None:
            etas.append((before_s, eta, second.elapsed_s))
        time.sleep(0.02)
    assert second.wait(300) == "succeeded"
    assert second.history.recorded.wait(60)
    return {"store": store, "first": first, "second": second, "before": before, "etas": etas}


def test_second_build_gets_a_plausible_eta(two_builds: dict[str, Any]) -> None:
    first, second, before, etas = two_builds["first"], two_builds["second"], two_builds["before"], two_builds["etas"]
    actual = second.elapsed_s
    assert second.history.match is not None and second.history.match["id"] == first.history.recorded_id
    assert before is not None and before["remaining_s"] == before["total_s"] == pytest.approx(first.elapsed_s, abs=0.01)
    like = second.history.like  # on a GPU machine: ", same <GPU> (compute …, driver …)"
    assert before["based_on"].startswith("build of ") and before["based_on"].endswith(
        f"{first.elapsed_s:.1f} s" + (f", same {hist_keys.describe_like(like)}" if like else "")
    )
    assert etas, "no ETA while the second build ran"
    t, early, _ = etas[0]
    error = early["total_s"] / actual
    print(
        f"\nETA: past build {first.elapsed_s:.2f} s; at t={t:.2f} s predicted total {early['total_s']:.2f} s, "
        f"actual {actual:.2f} s (ratio {error:.2f}, error {100 * (error - 1):+.0f}%)"
    )
    t_mid, mid, _ = etas[len(etas) // 2]
    print(f"ETA at t={t_mid:.2f} s: predicted total {mid['total_s']:.2f} s (ratio {mid['total_s'] / actual:.2f})")
    # The ETA is the past build's timeline re-anchored at the newest matched phase start or end (held at the past
    # end of a phase still running), so at any moment it is off from the past total by at most how far the two
    # builds drifted apart at some matched event: both timelines are known now, so that bound is exact. (Its
    # ratio to this build's duration, printed above, measures how the machine's load changed between the two
    # builds, not the ETA: on a shared 2-core runner that alone varies by 2x.)
    rows_a, rows_b = first.timings(), second.timings()
    drift = max(
        [abs(second.elapsed_s - first.elapsed_s)]
        + [abs(b[k] - a[k]) for a, b in zip(rows_a, rows_b, strict=True) for k in ("start_s", "end_s")]
    )
    for t, eta, after in etas:
        assert abs(eta["total_s"] - first.elapsed_s) <= drift + 0.02, (t, eta["total_s"], first.elapsed_s, drift)
        # total = its moment + remaining (each rounded to 0.01): that moment lies between the two clock readings
        # around the call (one reading after it was off by however long a loaded runner paused the thread)
        at = eta["total_s"] - eta["remaining_s"]
        assert eta["remaining_s"] >= 0 and t - 0.011 <= at <= after + 0.011, (t, at, after, eta)
        assert set(eta) >= {"total_s", "remaining_s", "based_on", "phases", "running"}
    running = [eta for _, eta, _ in etas if eta["running"]]
    assert running, "no ETA named a running phase"
    assert all(isinstance(v, float) for eta in running for v in eta["phases"].values())
    assert second.history.eta() is None  # the build is over


def test_deltas_after_the_second_build(two_builds: dict[str, Any]) -> None:
    first, second = two_builds["first"], two_builds["second"]
    deltas = second.history.deltas()
    rows_a, rows_b = first.timings(), second.timings()
    assert deltas is not None and set(deltas) == {str(r["id"]) for r in rows_b}
    for row_a, row_b in zip(rows_a, rows_b, strict=True):  # same model, same phase structure
        assert row_a["name"] == row_b["name"]
        assert deltas[str(row_b["id"])] == pytest.approx(row_b["duration_s"] - row_a["duration_s"], abs=1e-3)
    assert first.history.deltas() is None  # the first build had nothing to compare with
    # what the deltas compare with, for the widget to say (also once the build ended, when there is no ETA)
    basis = second.history.basis()
    assert basis is not None and second.history.match is not None
    assert basis["created"] == second.history.match["created"] and basis["said"] == second.history.based_on
    assert str(basis["said"]).startswith("build of ")
    from trt_widget._snapshot import snapshot

    assert snapshot(second)["history_basis"] == basis and first.history.basis() is None


@pytest.mark.rtx_long_step
def test_records_list_and_compare(two_builds: dict[str, Any]) -> None:
    store, first, second = two_builds["store"], two_builds["first"], two_builds["second"]
    builds = list_builds(store)
    assert [b["id"] for b in builds[:2]] == [second.history.recorded_id, first.history.recorded_id]
    newest = builds[0]
    assert newest["status"] == "succeeded" and newest["phases"] == len(second.timings()) and "rows" not in newest
    assert newest["total_s"] == pytest.approx(second.elapsed_s)
    assert newest["based_on_id"] == first.history.recorded_id
    assert newest["backend"]["version"] and newest["options"] == second.options.summary()
    resources = newest["resources"]
    assert resources is not None and (resources["peak_rss"] or 0) > 0

    rows = compare(first.history.recorded_id, second.history.recorded_id, store=store)
    assert rows[0]["path"] == "(total)"
    assert rows[0]["delta"] == pytest.approx(second.elapsed_s - first.elapsed_s)
    assert len(rows) == 1 + len(first.timings())
    by_path = {r["path"]: r for r in rows}
    refit = [p for p in by_path if p.endswith("Determining refit engines")]
    assert len(refit) == 1 and by_path[refit[0]]["depth"] == 3
    costs = [p for p in by_path if "Computing reformatting costs" in p]
    assert any(p.endswith("Computing reformatting costs [2]") for p in costs)  # repeated names stay apart
    for row in rows[1:]:
        b_s, a_s = row["b_s"], row["a_s"]
        assert b_s is not None and a_s is not None and row["delta"] == pytest.approx(b_s - a_s)
    # a live Build compares with a record too, and the same build with itself has zero deltas
    assert all(r["delta"] == pytest.approx(0.0) for r in compare(second, second.history.recorded_id, store=store))


def test_other_model_or_options_get_no_eta(two_builds: dict[str, Any], resnet50_bytes: bytes) -> None:
    store = two_builds["store"]
    for build in (Build(resnet50_bytes, history=store, optimization_level=1), Build(deep_residual(4), history=store)):
        assert build.history is not None
        assert build.history.ready.wait(60)
        assert build.history.error is None
        assert build.history.match is None and build.history.deltas() is None
        assert (build.history.eta() or {}).get("none") == "first build"  # no number: the reason instead
        assert two_builds["second"].history is not None
        assert build.history.key != two_builds["second"].history.key


@pytest.mark.deadline  # the look-up must answer before a real build ends
def test_a_first_build_says_why_it_has_no_eta(tmp_path: Path, long_model_bytes: bytes) -> None:
    """Issue 39 item 6: no ETA is guessed for a first build, and the widget's eta trait says so while it runs."""
    from trt_widget._snapshot import snapshot

    build = Build(long_model_bytes, history=HistoryStore(tmp_path / "h.sqlite")).start()
    try:
        assert build.history is not None and build.history.ready.wait(60)
        state = snapshot(build)
        assert build.status == "running", "the long model's build ended before the look-up answered"
        eta = state["eta"]
        assert eta is not None and "total_s" not in eta and eta["none"] == "first build"
        why = eta["why"]
        assert isinstance(why, str) and "first build of this model" in why and "next build" in why
    finally:
        build.stop()
        build.wait(120)
    assert snapshot(build)["eta"] is None  # ended: nothing to say


def test_cancelled_and_failed_builds_are_recorded_but_never_used(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    assert store.path == tmp_path / hist.FILENAME
    model = deep_residual(300)
    cancelled = Build(model, history=store).start()
    cancelled.stop("test")
    assert cancelled.wait(300) == "cancelled"
    failed = Build(b"not an onnx model", history=store).start()
    assert failed.wait(300) == "failed"
    for build in (cancelled, failed):
        assert build.history is not None
        assert build.history.recorded.wait(60) and build.history.error is None
    assert [b["status"] for b in list_builds(store)] == ["failed", "cancelled"]
    again = Build(model, history=store)
    assert again.history is not None
    assert again.history.ready.wait(60)
    assert cancelled.history is not None
    assert again.history.key == cancelled.history.key and again.history.match is None
    assert "total_s" not in (again.history.eta() or {})
    again_failed = Build(b"not an onnx model", history=store)
    assert again_failed.history is not None and again_failed.history.ready.wait(60)
    assert failed.history is not None
    assert again_failed.history.key == failed.history.key and again_failed.history.match is None


def test_history_survives_a_new_process(two_builds: dict[str, Any], resnet50_bytes: bytes, tmp_path: Path) -> None:
    store, second = two_builds["store"], two_builds["second"]
    model = tmp_path / "resnet50.onnx"
    model.write_bytes(resnet50_bytes)  # same bytes from a file: same key
    code = textwrap.dedent(f"""
        import json
        from trt_widget import Build
        from trt_widget.history import HistoryStore, list_builds
        store = HistoryStore({str(store.path)!r})
        build = Build({str(model)!r}, history=store)
        build.history.ready.wait(60)
        print(json.dumps({{"ids": [b["id"] for b in list_builds(store)], "eta": build.history.eta(),
                          "error": build.history.error}}))
    """)
    env = {**os.environ, hist.ENV: "off"}
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert second.history.recorded_id in seen["ids"] and seen["error"] is None
    assert seen["eta"]["total_s"] == pytest.approx(second.elapsed_s, abs=0.01)


_WRITER = textwrap.dedent("""
    import sys, time
    from trt_widget.history import HistoryStore
    store, name, n, go = HistoryStore(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    while not __import__("os").path.exists(go):
        time.sleep(0.001)
    for i in range(n):
        store.add({"key": f"{name}-{i}", "status": "succeeded", "total_s": float(i), "label": name,
                   "rows": [{"path": [["p", 0]], "name": "p", "start_s": 0.0, "end_s": 1.0, "duration_s": 1.0}]})
""")


def test_concurrent_writer_processes_do_not_corrupt_the_store(tmp_path: Path) -> None:
    path, go, n = tmp_path / "shared.sqlite", tmp_path / "go", 150
    writers = [
        subprocess.Popen([PY, "-c", _WRITER, str(path), name, str(n), str(go)], stderr=subprocess.PIPE, text=True)
        for name in ("kernel-a", "kernel-b")
    ]
    go.touch()  # both start writing at once
    for writer in writers:
        assert writer.wait(300) == 0, writer.stderr.read() if writer.stderr else ""
        if writer.stderr is not None:
            writer.stderr.close()  # now, not by the garbage collector in a later test (ResourceWarning)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    records = HistoryStore(path).records()
    assert len(records) == 2 * n
    assert {r["key"] for r in records} == {f"kernel-{w}-{i}" for w in "ab" for i in range(n)}


def test_store_selection_and_bad_stores(tmp_path: Path, private_history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = deep_residual(4)
    assert Build(model, history=False).history is None
    default = Build(model)
    assert default.history is not None
    assert default.history.store.path == private_history
    monkeypatch.setenv(hist.ENV, str(tmp_path))  # a directory
    assert hist.default_path() == tmp_path / hist.FILENAME
    monkeypatch.setenv(hist.ENV, "off")
    assert hist.default_path() is None and Build(model).history is None
    with pytest.raises(RuntimeError, match="turned off"):
        list_builds()

    junk = tmp_path / "junk.sqlite"  # a damaged SQLite file: moved aside and replaced (test_history_robust.py)
    junk.write_bytes(b"SQLite format 3\x00" + b"this is not a database" * 100)
    with pytest.warns(RuntimeWarning, match="moved it aside"):
        assert HistoryStore(junk).records() == []
    assert len(list(tmp_path.glob("junk.sqlite.corrupt-*"))) == 1
    build = Build(model, history=str(junk))
    assert build.history is not None
    assert build.history.ready.wait(60)
    assert build.history.error is None and "total_s" not in (build.history.eta() or {})
    with pytest.raises(TypeError, match="history must be"):
        Build(model, history=3.5)  # type: ignore[arg-type]  # the wrong type on purpose: the check is tested


def test_clear_and_callable_sources(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "c.sqlite")
    store.add({"key": "k", "status": "succeeded", "total_s": 1.0, "rows": []})
    assert len(store) == 1 and hist.clear(store) == 1 and list_builds(store) == []

    def network(net: Any) -> None:  # never called: only hashed
        raise AssertionError

    def other(net: Any) -> None:
        raise AssertionError

    keys = {hist.build_key(Build(fn, history=False))[0] for fn in (network, network, other)}
    assert len(keys) == 2  # same function, same key; different source, different key
