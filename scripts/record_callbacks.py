"""Record the TensorRT monitor callbacks of a real build as a script for ``ScriptedRunner.recorded(name)``.

    .venv/bin/python scripts/record_callbacks.py deep_residual_40 "deep_residual(40)"

Writes ``trt_widget/runners/scripts/<name>.json``: the backend and its version, the model, and every
``phase_start`` / ``step_complete`` / ``phase_finish`` TensorRT made, with the time between them (``wait``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from trt_widget import models
from trt_widget._backend import select_backend
from trt_widget._engine import CaptureLogger, ModelSource, build_engine
from trt_widget._monitor import BuildMonitor
from trt_widget._options import BuildOptions


class Recorder(BuildMonitor):
    def __init__(self) -> None:
        super().__init__()
        self.callbacks: list[list[object]] = []
        self.last = time.perf_counter()
        self.lock = threading.Lock()

    def _note(self, *callback: object) -> None:
        with self.lock:
            now = time.perf_counter()
            if now - self.last >= 0.0005:
                self.callbacks.append(["wait", round(now - self.last, 4)])
            self.last = now
            self.callbacks.append(list(callback))

    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        self._note("start", phase_name, parent_phase, num_steps)

    def step_complete(self, phase_name: str, step: int) -> bool:
        self._note("step", phase_name, step)
        return True

    def phase_finish(self, phase_name: str) -> None:
        self._note("finish", phase_name)


def main(name: str, model: str) -> None:
    source = ModelSource.of(models.to_bytes(eval(model, vars(models))))  # a generator call from trt_widget.models
    recorder = Recorder()
    engine = build_engine(source, BuildOptions(), recorder, CaptureLogger())
    assert engine is not None
    backend, module = select_backend()
    out = Path(__file__).resolve().parents[1] / "trt_widget" / "runners" / "scripts" / f"{name}.json"
    record = {"backend": backend, "version": module.__version__, "model": model, "callbacks": recorder.callbacks}
    lines = ",\n".join(json.dumps(callback) for callback in recorder.callbacks)
    head = json.dumps({key: value for key, value in record.items() if key != "callbacks"})[:-1]
    out.write_text(f'{head}, "callbacks": [\n{lines}\n]}}\n')
    print(f"{out}: {len(recorder.callbacks)} callbacks")


if __name__ == "__main__":
    main(*sys.argv[1:3])
