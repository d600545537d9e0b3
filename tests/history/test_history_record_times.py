"""Eighteenth adversarial re-run (issue 35), S2's sibling: a history record's times are read from outside (a store
file anyone may hand over) like an event's ``t``, by the same rule (``json_time``: finite, within 1e12 s). A record
whose ``total_s`` was Infinity was the ETA's match ("remaining_s": inf, which ``fmt_s`` cannot show); one of 400
digits made ``eta()`` raise OverflowError; ``compare`` by id handed on an infinite total. Such records are
skipped for ETAs and refused by ``compare``, as records without usable times were."""

from __future__ import annotations

import json
import math
import sqlite3
import time
import warnings
from contextlib import closing
from pathlib import Path

import pytest

from trt_widget import Build
from trt_widget.history import HistoryStore, compare
from trt_widget.models import deep_residual


def test_records_with_infinite_or_huge_times_are_skipped_for_etas(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite")
    first = Build(deep_residual(4), history=store).start()
    assert first.history is not None
    assert first.wait(120) == "succeeded" and first.history.recorded.wait(60)
    with closing(sqlite3.connect(store.path)) as conn:
        (text,) = conn.execute("SELECT record FROM builds WHERE id = ?", (first.history.recorded_id,)).fetchone()
    good = json.loads(text)
    bad = [{**good, "total_s": math.inf}, {**good, "total_s": 10**400}, {**good, "created": math.nan}]
    row = {**good["rows"][0], "start_s": -math.inf}
    bad.append({**good, "rows": [row, *good["rows"][1:]]})
    now = time.time()
    with closing(sqlite3.connect(store.path)) as conn, conn:  # newer than the good record, same key
        conn.executemany(
            "INSERT INTO builds (key, status, created, total_s, label, record) VALUES (?, ?, ?, ?, ?, ?)",
            [(first.history.key, "succeeded", now, 1.0, f"bad {i}", json.dumps(r)) for i, r in enumerate(bad)],
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = Build(deep_residual(4), history=store)
        assert again.history is not None
        assert again.history.ready.wait(60)
    assert again.history.match is not None and again.history.match["id"] == first.history.recorded_id
    eta = again.history.eta()
    assert eta is not None
    total, remaining = eta["total_s"], eta["remaining_s"]
    assert isinstance(total, float) and isinstance(remaining, float), eta
    assert math.isfinite(total) and math.isfinite(remaining), eta
    skipped = [str(w.message) for w in caught if "skipping record" in str(w.message)]
    assert len(skipped) == len(bad), skipped
    with pytest.raises(ValueError, match="cannot be compared: created/total_s are not numbers"):
        compare(first.history.recorded_id + 1, first.history.recorded_id, store=store)  # total_s inf
    with pytest.raises(ValueError, match="has no usable times"):
        compare(first.history.recorded_id, first.history.recorded_id + 4, store=store)  # a row starting at -inf
    assert compare(first.history.recorded_id, first.history.recorded_id, store=store)[0]["delta"] == 0
