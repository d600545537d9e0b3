"""Smoke tests of the e2e harness itself: an inline anywidget renders and talks both ways, the kernel stays
responsive while a thread works, and stopping the server leaves no kernel process behind."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from harness.lab import Lab
from harness.notebooks import wait_until
from harness.server import JupyterLab
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

# A tiny anywidget defined inline: shows `name`; its button sends {"type": "ping"}, which Python counts.
HELLO_CELL = '''\
import anywidget, traitlets

class Hello(anywidget.AnyWidget):
    _esm = """
    export default {
      render({ model, el }) {
        const root = document.createElement("div");
        root.className = "e2e-hello";
        const label = document.createElement("span");
        label.className = "e2e-hello-label";
        const button = document.createElement("button");
        button.textContent = "Ping";
        button.addEventListener("click", () => model.send({ type: "ping" }));
        const sync = () => { label.textContent = "hello " + model.get("name"); };
        model.on("change:name", sync);
        sync();
        root.append(label, " ", button);
        el.append(root);
        return () => model.off("change:name", sync);
      },
    };
    """
    name = traitlets.Unicode("world").tag(sync=True)
    pings = traitlets.Int(0)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(lambda _w, content, _b: content.get("type") == "ping" and setattr(self, "pings", self.pings + 1))

w = Hello()
w
'''


def test_inline_widget_renders_and_talks_both_ways(lab: Lab) -> None:
    lab.open([HELLO_CELL, 'print("printed by cell 2:", 6 * 7)'])
    lab.run_all()

    hello = lab.output(0).locator(".e2e-hello")
    expect(hello.locator(".e2e-hello-label")).to_have_text("hello world")
    expect(lab.output(1)).to_contain_text("printed by cell 2: 42")
    assert lab.output_text(1) == "printed by cell 2: 42\n"

    # kernel -> browser: a trait set in the kernel is rendered
    lab.execute('w.name = "kernel"')
    expect(hello.locator(".e2e-hello-label")).to_have_text("hello kernel")
    # browser -> kernel: a click reaches the Python message handler
    hello.get_by_role("button", name="Ping").click()
    wait_until(lambda: lab.kernel_json("w.pings") == 1, timeout=30, what="the ping to reach Python")
    assert lab.kernel_json("{'name': w.name, 'pings': w.pings}") == {"name": "kernel", "pings": 1}
    lab.screenshot("smoke-inline-widget")
    assert not lab.dialogs


def test_kernel_answers_while_a_background_thread_works(lab: Lab) -> None:
    start_thread = """\
import threading, time
stop = threading.Event()
progress = [0]

def work():
    deadline = time.monotonic() + 300  # never outlives a broken test by much
    while not stop.is_set() and time.monotonic() < deadline:
        sum(i * i for i in range(20_000))  # pure Python: holds the GIL in slices, like a callback-heavy build
        progress[0] += 1

worker = threading.Thread(target=work, daemon=True)
worker.start()
"""
    lab.open([start_thread, 'print("responsive; worker alive:", worker.is_alive())'])
    lab.run_cell(0)
    wait_until(lambda: lab.kernel_json("progress[0]") > 0, timeout=60, what="the worker to make progress")
    lab.run_cell(1, timeout=60)
    expect(lab.output(1)).to_contain_text("responsive; worker alive: True")
    before = lab.kernel_json("progress[0]")
    wait_until(lambda: lab.kernel_json("progress[0]") > before, timeout=60, what="more progress")
    assert lab.kernel_json("(stop.set(), worker.join(30), worker.is_alive())[2]") is False


def test_stopping_the_server_leaves_no_kernel(tmp_path: Path) -> None:
    server = JupyterLab(tmp_path)
    try:
        server.start()
        server.request("POST", "api/kernels", {"name": "python3"})
        kernels = wait_until(server.kernel_processes, timeout=60, what="a kernel process")
    finally:
        server.stop()
    assert server.proc is not None and server.proc.returncode is not None
    assert not [p for p in kernels if _alive(p)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
