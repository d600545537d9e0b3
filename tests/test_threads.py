"""Callbacks from several threads and builds running at the same time.

NVIDIA documents that an ``IProgressMonitor`` may be called from several internal threads. The first test is a
*synthetic multi-threaded callback driver* (no TensorRT): 6 threads interleave same-named phases under one
parent. The others run real builds side by side and check that nothing of one lands in the other.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import trt_widget
from trt_widget import Build, PhaseModel
from trt_widget._monitor import BuildMonitor
from trt_widget._phases import DONE


def test_interleaved_callbacks_from_six_threads_keep_each_instance_apart_synthetic() -> None:
    model = PhaseModel()
    monitor = BuildMonitor(model)
    monitor.phase_start("Timing tactics", None, 6)
    start = threading.Barrier(6)
    plan = {worker: random.Random(worker).randint(3, 8) for worker in range(6)}

    def worker(index: int) -> None:
        rng = random.Random(100 + index)
        start.wait()
        monitor.phase_start("Evaluating tactic times", "Timing tactics", plan[index])
        for measured in range(plan[index]):
            monitor.phase_start("Measuring tactic time", "Evaluating tactic times", 4)
            for step in range(4):
                time.sleep(rng.uniform(0, 0.002))  # let the other threads' callbacks land in between
                monitor.step_complete("Measuring tactic time", step)
            monitor.phase_finish("Measuring tactic time")
            monitor.step_complete("Evaluating tactic times", measured)
        monitor.phase_finish("Evaluating tactic times")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for step in range(6):
        monitor.step_complete("Timing tactics", step)
    monitor.phase_finish("Timing tactics")

    rows = {row["id"]: row for row in model.timings()}
    evaluating = [r for r in rows.values() if r["name"] == "Evaluating tactic times"]
    measuring = [r for r in rows.values() if r["name"] == "Measuring tactic time"]
    assert sorted(r["num_steps"] for r in evaluating) == sorted(plan.values())
    assert len(measuring) == sum(plan.values())
    assert all(r["status"] == DONE and r["step"] == r["num_steps"] for r in rows.values()), [
        r for r in rows.values() if r["status"] != DONE
    ]
    children: dict[int, int] = {}
    for row in measuring:  # each measurement sits under the evaluation its own thread started
        parent = rows[row["parent"]]
        assert parent["name"] == "Evaluating tactic times" and row["depth"] == 2
        assert parent["start_s"] <= row["start_s"] and row["end_s"] <= parent["end_s"]
        children[parent["id"]] = children.get(parent["id"], 0) + 1
    assert {rows[i]["num_steps"]: n for i, n in children.items()} == {n: n for n in plan.values()}
    assert model.ignored == 0


def _named_network(tag: str, layers: int) -> Any:
    def define(network: Any) -> None:
        t = trt_widget.trt
        y = network.add_input(f"{tag}_in", t.float32, (1, 64))
        for i in range(layers):
            layer = network.add_activation(y, t.ActivationType.RELU)
            layer.name = f"{tag}_relu_{i}"
            y = layer.get_output(0)
        network.mark_output(y)

    return define


def test_two_builds_at_once_on_threads_keep_their_logs_apart() -> None:
    alpha = Build(_named_network("alpha", 400), history=False, isolation="thread", verbose=True)
    beta = Build(_named_network("beta", 400), history=False, isolation="thread", verbose=True)
    alpha.start()
    beta.start()
    assert alpha.wait(300) == "succeeded" and beta.wait(300) == "succeeded"
    overlap = min(alpha.elapsed_s, beta.elapsed_s) > 0
    assert overlap
    alpha_lines = [r["message"] for r in alpha.logs]
    beta_lines = [r["message"] for r in beta.logs]
    assert any("alpha_relu" in m for m in alpha_lines) and any("beta_relu" in m for m in beta_lines)
    assert not [m for m in alpha_lines if "beta_" in m]
    assert not [m for m in beta_lines if "alpha_" in m]


def test_two_default_builds_at_once_use_two_workers_and_stay_apart() -> None:
    alpha = Build(_named_network("alpha", 200), history=False, verbose=True).start()
    beta = Build(_named_network("beta", 200), history=False, verbose=True).start()
    assert alpha.wait(300) == "succeeded" and beta.wait(300) == "succeeded"
    assert alpha.child_pid != beta.child_pid
    assert not [r for r in alpha.logs if "beta_" in r["message"]]
    assert not [r for r in beta.logs if "alpha_" in r["message"]]
    assert alpha.engine and beta.engine and alpha.engine != beta.engine
