"""The e2e harness's page helper: one JupyterLab page showing one notebook, driven through ``window.jupyterapp``."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat

from .notebooks import CellError, output_text, safe_name, strip_ansi, write_notebook
from .server import JupyterLab

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Locator, Page

DARK, LIGHT = "JupyterLab Dark", "JupyterLab Light"
THEMES = "@jupyterlab/apputils-extension:themes"
HELPERS_JS = (Path(__file__).resolve().parent / "lab_helpers.js").read_text()


class Lab:
    """One JupyterLab page (its own browser context) showing one notebook, driven through ``window.jupyterapp``.

    Waits are on exact app state (cell execution counts, kernel status, theme attributes), never on sleeps.
    Timeouts are in seconds. ``problems`` collects page errors and console errors; ``dialogs`` every
    alert/confirm/prompt the page opened (dismissed; a script in widget output would show up here).
    """

    def __init__(self, page: Page, server: JupyterLab, workdir: Path, artifacts: Path) -> None:
        self.page, self.server, self.workdir, self.artifacts = page, server, workdir, artifacts
        self.notebook: Path | None = None
        self.path = ""  # the notebook's path relative to the server root, as JupyterLab names it
        self.panel_id = ""
        self.problems: list[str] = []
        self.dialogs: list[dict[str, str]] = []
        self.changed_settings: set[str] = set()  # lab plugins whose user settings this page changed
        page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        page.on("console", self._on_console)
        page.on("dialog", self._on_dialog)

    @classmethod
    def new(
        cls,
        browser: Browser,
        server: JupyterLab,
        workdir: Path,
        artifacts: Path,
        viewport: tuple[int, int] = (1280, 900),
    ) -> Lab:
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context.add_init_script(HELPERS_JS)
        page = context.new_page()
        page.set_default_timeout(60_000)  # generous: 2 shared cores
        return cls(page, server, workdir, artifacts)

    def close(self) -> None:
        self.page.context.close()

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.problems.append(f"console: {message.text}")

    def _on_dialog(self, dialog: Dialog) -> None:
        if dialog.type == "beforeunload":  # leaving a dirty notebook: reload() means it
            dialog.accept()
            return
        self.dialogs.append({"type": dialog.type, "message": dialog.message})
        dialog.dismiss()

    # -- plumbing ------------------------------------------------------------------------------------
    def js(self, name: str, *args: Any) -> Any:
        """Call ``window.__trtE2E[name](...args)`` in the page (awaits a returned promise)."""
        return self.page.evaluate("([f, a]) => window.__trtE2E[f](...a)", [name, list(args)])

    def wait_js(self, name: str, *args: Any, timeout: float = 60.0) -> None:
        """Wait until ``window.__trtE2E[name](...args)`` is truthy."""
        self.page.wait_for_function(
            "([f, a]) => window.__trtE2E[f](...a)", arg=[name, list(args)], timeout=timeout * 1000, polling=50
        )

    def next_frame(self) -> None:
        """Wait until the browser has painted twice (after a DOM change, before a screenshot)."""
        self.page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    # -- notebook ------------------------------------------------------------------------------------
    def new_notebook(self, cells: Sequence[str], name: str = "notebook", kernel: str = "python3") -> Path:
        """Write a notebook with these code cells into this test's folder."""
        return write_notebook(self.workdir / f"{name}.ipynb", cells, kernel)

    def open(self, notebook: Path | Sequence[str], timeout: float = 120.0, kernel: str = "python3") -> Lab:
        """Open a notebook file (or a new one from cell sources, for ``kernel``) and wait for an idle kernel."""
        if not isinstance(notebook, Path):
            notebook = self.new_notebook(notebook, kernel=kernel)
        self.notebook = notebook
        self.path = notebook.resolve().relative_to(self.server.root.resolve()).as_posix()
        self.page.goto(self.server.lab_url(notebook))
        self.wait_ready(idle=True, timeout=timeout)
        return self

    def open_without_kernel(self, notebook: Path, timeout: float = 120.0) -> Lab:
        """Open a notebook with no kernel at all, as picking "No Kernel" does (none is started, none is joined).

        JupyterLab would start the notebook's kernel, so the notebook factory's kernel preference is switched
        to ``shouldStart: false`` for this one document before ``docmanager:open`` runs. A session the server
        still has for the path would be joined: shut kernels down first.
        """
        self.notebook = notebook
        self.path = notebook.resolve().relative_to(self.server.root.resolve()).as_posix()
        self.page.goto(self.server.home_url())
        self.wait_js("appReady", timeout=timeout)
        self.js("openWithoutKernel", self.path)
        self.wait_js("ready", self.path, False, False, timeout=timeout)
        self.panel_id = self.page.evaluate("p => window.__trtE2E.panel(p).id", self.path)
        return self

    def wait_ready(self, idle: bool = True, timeout: float = 120.0) -> None:
        """Notebook loaded and rendered, kernel connected (and idle if ``idle``)."""
        self.wait_js("ready", self.path, idle, True, timeout=timeout)
        self.panel_id = self.page.evaluate("p => window.__trtE2E.panel(p).id", self.path)

    def reload(self, idle: bool = True, timeout: float = 120.0) -> None:
        """Load the page again (same notebook, same kernel session) and wait until it is ready."""
        assert self.notebook is not None, "open() a notebook first"
        self.page.goto(self.server.lab_url(self.notebook))
        self.wait_ready(idle=idle, timeout=timeout)

    def reload_in_a_new_kernel(self, timeout: float = 120.0) -> None:
        """End the notebook's kernel and load the page again with a new one, which knows nothing of the widgets:
        their views must come from the notebook's saved widget state.

        The new kernel's session is made (its kernel started) before the page loads. When the page itself started
        it, JupyterLab's widget manager sometimes asked a kernel not yet set for its comms on a loaded machine,
        and that failure skips its restore from the notebook ("Error displaying widget: model not found", seen
        once in a clean-clone run): a widget-manager race, not the state trt_widget saved.
        """
        self.page.goto("about:blank")  # the old page starts no kernel of its own meanwhile
        self.server.shutdown_kernels()
        session = self.server.request(
            "POST", "api/sessions", {"path": self.path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        )
        assert self.server.kernel_ids() == [session["kernel"]["id"]]
        self.reload(timeout=timeout)

    def has_kernel(self) -> bool:
        """Whether the notebook's session has a kernel (False after "No Kernel")."""
        return bool(self.js("kernel", self.path))

    def kernel_status(self) -> str:
        """``connectionStatus/status`` of the notebook's kernel, e.g. ``connected/idle``.

        Not a sign of a running cell: on ipykernel 7 it reads idle while an async cell awaits (any message the
        kernel handles meanwhile publishes its own busy/idle pair). Wait on a cell's output or reply instead.
        """
        return str(self.js("kernelStatus", self.path))

    def cell(self, index: int) -> Locator:
        """Locator of cell ``index`` (all cells are in the DOM: windowing is off)."""
        return self.page.locator(f"#{self.panel_id} .jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Locator:
        """Locator of the output area of cell ``index``."""
        return self.cell(index).locator(".jp-OutputArea")

    # -- running cells -------------------------------------------------------------------------------
    def run_cell(self, index: int, wait: bool = True, check: bool = True, timeout: float = 120.0) -> None:
        """Run one cell through ``notebook:run-cell``; with ``wait``, until its execute reply arrived."""
        self.js("runCell", self.path, index)
        if wait:
            self.wait_executed(index, check=check, timeout=timeout)

    def run_all(self, wait: bool = True, check: bool = True, timeout: float = 300.0) -> None:
        """Run every cell through ``notebook:run-all-cells`` (the kernel gets all requests at once)."""
        self.js("runAll", self.path)
        if wait:
            self.wait_all_executed(check=check, timeout=timeout)

    def wait_executed(self, index: int, check: bool = True, timeout: float = 120.0) -> None:
        """Wait for a new execution count on cell ``index``; with ``check``, raise CellError if it raised."""
        self.wait_js("cellExecuted", self.path, index, timeout=timeout)
        if check:
            self.check_cell(index)

    def wait_all_executed(self, check: bool = True, timeout: float = 300.0) -> None:
        self.wait_js("allExecuted", self.path, timeout=timeout)
        if check:
            for i in range(int(self.js("cellCount", self.path))):
                self.check_cell(i)

    def outputs(self, index: int) -> list[dict[str, Any]]:
        """Cell ``index``'s outputs as nbformat dicts, from the notebook model."""
        return list(self.js("outputs", self.path, index))

    def output_text(self, index: int) -> str:
        """Text of cell ``index``'s outputs (streams, text/plain, errors) from the notebook model."""
        return output_text(self.outputs(index))

    def check_cell(self, index: int) -> None:
        for out in self.outputs(index):
            if out.get("output_type") == "error":
                tb = strip_ansi("\n".join(out.get("traceback", [])))
                raise CellError(f"cell {index} raised {out.get('ename')}: {out.get('evalue')}\n{tb}")

    # -- the kernel, outside the notebook ------------------------------------------------------------
    def execute(self, code: str, timeout: float = 60.0) -> str:
        """Run ``code`` on the notebook's kernel (no cell, no history) and return its text output.

        Requests queue behind a running cell (also one awaiting in an async cell), as any execute request does.
        """
        result = self.js("execute", self.path, code, int(timeout * 1000))
        if result["status"] == "timeout":
            raise TimeoutError(f"the kernel did not answer within {timeout:g} s (busy? {self.kernel_status()})")
        if result["error"] is not None:
            err = result["error"]
            raise CellError(f"kernel raised {err['ename']}: {err['evalue']}\n{strip_ansi(err['traceback'])}")
        return str(result["text"])

    def kernel_json(self, expression: str, timeout: float = 60.0) -> Any:
        """Evaluate a Python ``expression`` in the kernel and return it, passed through JSON."""
        mark = f"@@{secrets.token_hex(6)}@@"  # a background thread may print into the same request
        text = self.execute(
            f"import json as _json\nprint({mark!r} + _json.dumps(({expression}), default=repr) + {mark!r})",
            timeout=timeout,
        )
        found = re.search(re.escape(mark) + r"(.*?)" + re.escape(mark), text, re.S)
        if found is None:
            raise CellError(f"no JSON answer from the kernel for {expression!r}; output was {text!r}")
        return json.loads(found.group(1))

    # -- exact DOM transition times ------------------------------------------------------------------
    def watch(self, key: str, selector: str, attribute: str) -> None:
        """Start logging each value ``attribute`` of the first ``selector`` element takes, and clicks inside it."""
        self.js("watch", key, selector, attribute)

    def watched(self, key: str) -> list[dict[str, Any]]:
        """The log of ``watch(key, ...)``: ``{"value", "t"}`` or ``{"click", "t"}`` entries, t in page ms."""
        return list(self.page.evaluate("k => window.__trtE2E.watches[k]", key))

    # -- document and appearance ---------------------------------------------------------------------
    def save(self, timeout: float = 60.0) -> Any:
        """Save through ``docmanager:save``, wait until clean, and return the file as read back from disk."""
        self.js("save", self.path)
        self.page.wait_for_function(
            "p => window.__trtE2E.dirty(p) === false", arg=self.path, timeout=timeout * 1000, polling=50
        )
        assert self.notebook is not None
        return nbformat.read(str(self.notebook), as_version=4)

    def set_lab_setting(self, plugin_id: str, values: Mapping[str, Any]) -> None:
        """Set a lab plugin's user settings for pages opened from now on (the fixture resets them afterwards)."""
        self.changed_settings.add(plugin_id)
        self.server.put_lab_setting(plugin_id, values)

    def set_theme(self, name: str = DARK, timeout: float = 60.0) -> None:
        """Switch theme with ``apputils:change-theme`` and wait until it is applied and painted."""
        self.changed_settings.add(THEMES)  # the command stores the theme in the user settings
        self.js("setTheme", name)
        self.page.wait_for_function(
            "n => document.body.dataset.jpThemeName === n && !document.getElementById('jupyterlab-splash')",
            arg=name,
            timeout=timeout * 1000,
            polling=50,
        )
        self.next_frame()

    def theme(self) -> dict[str, str]:
        return dict(
            self.page.evaluate(
                "() => ({name: document.body.dataset.jpThemeName, light: document.body.dataset.jpThemeLight})"
            )
        )

    def screenshot(self, name: str, target: Any = None) -> Path:
        """Save a PNG of the page (or of a locator) into the artifacts dir and return its path."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / f"{safe_name(name)}.png"
        for attempt in range(5):
            try:
                (target or self.page).screenshot(path=str(path))
                break
            except Exception as error:  # a build's end re-renders its view: the locator then finds the new one
                if "not attached to the DOM" not in str(error) or attempt == 4:
                    raise
        return path
