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
from trt_widget.models import deep_residual


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
        assert row["parent"] is not None
        parent = rows[row["parent"]]
        assert parent["name"] == "Evaluating tactic times" and row["depth"] == 2
        assert row["end_s"] is not None and parent["end_s"] is not None  # all DONE above
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


def _tagged_onnx(tag: str, blocks: int) -> Any:
    """A small ONNX model whose node (and so layer) names start with ``tag``: they show in its VERBOSE lines."""
    model = deep_residual(blocks)
    for node in model.graph.node:
        node.name = f"{tag}_{node.name}"
    return model


def test_two_builds_at_once_on_threads_keep_their_logs_apart() -> None:
    """TensorRT has one logger per process, so one router serves every build. The builds are made to overlap
    for certain: alpha holds at its first phase until beta has parsed its model and holds at its own first
    phase, which waits until alpha has ended. So beta logs its parse while alpha is registered, and alpha
    logs its whole build while beta is: a router that sent each line to every running build mixes them."""
    alpha = Build(_tagged_onnx("alpha", 6), history=False, resources=False, isolation="thread", verbose=True)
    beta = Build(_tagged_onnx("beta", 6), history=False, resources=False, isolation="thread", verbose=True)
    alpha_holds, beta_holds, alpha_ended = threading.Event(), threading.Event(), threading.Event()

    def hold(reached: threading.Event, until: threading.Event) -> Any:
        def on_phase(event: str, phase: Any) -> None:  # on the build's own builder thread
            if event == "phase_start" and not reached.is_set():
                reached.set()
                until.wait(120)

        return on_phase

    alpha.model.subscribe(hold(alpha_holds, beta_holds))
    beta.model.subscribe(hold(beta_holds, alpha_ended))
    alpha.add_done_callback(lambda _build: alpha_ended.set())
    alpha.start()
    assert alpha_holds.wait(120), alpha.status_detail
    beta.start()
    assert alpha.wait(300) == "succeeded" and beta.wait(300) == "succeeded"
    assert beta_holds.is_set() and alpha_ended.is_set()
    alpha_lines = [r["message"] for r in alpha.logs]
    beta_lines = [r["message"] for r in beta.logs]
    assert any("Parsing node: beta_" in m for m in beta_lines) and any("beta_" in m for m in beta_lines[-100:])
    assert any("Parsing node: alpha_" in m for m in alpha_lines) and any("alpha_" in m for m in alpha_lines[-100:])
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


def test_an_ended_build_is_no_longer_sent_tensorrt_lines() -> None:
    from trt_widget import _engine

    build = Build(_tagged_onnx("gamma", 3), history=False, resources=False, isolation="thread", verbose=True)
    assert build.start().wait(300) == "succeeded"
    router = _engine._router
    assert router is not None and build.logger not in router.sinks.values()
    assert not router.any_verbose  # no running build wants VERBOSE lines: dropped first thing again
