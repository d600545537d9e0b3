"""Real-browser test harness for trt_widget: a throwaway JupyterLab server and a Playwright page driving it.

- ``server``: ``JupyterLab``, the server process (ports, isolated dirs, lab settings, kernels, teardown).
- ``browser``: ``chromium()``, Debian's headless Chromium under Playwright.
- ``lab``: ``Lab``, one page showing one notebook (runs cells, waits on exact app state, saves, screenshots),
  with ``lab_helpers.js`` injected into the page.
- ``notebooks``: writing notebooks, reading outputs, ``wait_until``.

No pytest in here (tests/e2e/conftest.py wires it up), so a script or a notebook can use it too:

    with JupyterLab(tmp) as server, chromium(tmp / "browser") as browser:
        lab = Lab.new(browser, server, workdir=server.notebook_dir("demo"), artifacts=tmp / "artifacts")
        lab.open(write_notebook(lab.workdir / "demo.ipynb", ["print(1 + 1)"]))
        lab.run_all()
        assert lab.output_text(0) == "2\\n"
"""

from __future__ import annotations

from .browser import chromium
from .lab import DARK, LIGHT, Lab
from .notebooks import CellError, output_text, wait_until, write_notebook
from .server import JupyterLab

__all__ = ["DARK", "LIGHT", "CellError", "JupyterLab", "Lab", "chromium", "output_text", "wait_until", "write_notebook"]
