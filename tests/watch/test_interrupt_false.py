"""``watch(interrupt=False)`` with Python's own SIGINT handler: Ctrl-C during a main-thread build raised inside
TensorRT's callback, where the bindings caught and printed it, and the build ended "failed" with the interrupt
lost. Now it cancels the build at the next step boundary and the call raises KeyboardInterrupt."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from user_scripts import default_sigint

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import tensorrt_rtx_bindings as trt
    import trt_widget

    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    assert trt.OnnxParser(network, logger).parse(open(sys.argv[1], "rb").read())
    config = builder.create_builder_config()
    watch = trt_widget.watch(interrupt=False, history=False)

    def ctrl_c():
        while not (watch.builds and watch.builds[0].model.structure_version):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        with watch:
            engine = builder.build_serialized_network(network, config)
        print("RETURNED", engine is not None, watch.builds[0].status)
    except KeyboardInterrupt:
        print("INTERRUPTED", watch.builds[0].status)
    """
)


def test_ctrl_c_with_interrupt_false_is_not_swallowed(tmp_path: Path, long_model_bytes: bytes) -> None:
    model = tmp_path / "long.onnx"
    model.write_bytes(long_model_bytes)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TRT_WIDGET_HISTORY": "off"}
    done = subprocess.run(
        [sys.executable, str(script), str(model)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=default_sigint,  # its own os.kill(SIGINT) is a Ctrl-C, as at a terminal
    )
    assert done.stdout.splitlines()[-1:] == ["INTERRUPTED cancelled"], (done.stdout, done.stderr[-2000:])
    assert "Exception caught" not in done.stderr
