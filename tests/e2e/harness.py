"""Real-browser test harness for trt_widget: a throwaway JupyterLab server and a Playwright page driving it.

No pytest in here (conftest.py wires it up), so a script or a notebook can use it too:

    with JupyterLab(tmp) as server, chromium(tmp / "browser") as browser:
        lab = Lab.new(browser, server, workdir=server.notebook_dir("demo"), artifacts=tmp / "artifacts")
        lab.open(write_notebook(lab.workdir / "demo.ipynb", ["print(1 + 1)"]))
        lab.run_all()
        assert lab.output_text(0) == "2\\n"
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

import nbformat
import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright's own browser download is never used
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--headless",
    "--disable-gpu",
    "--disable-dev-shm-usage",  # docker-sized /dev/shm
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DARK, LIGHT = "JupyterLab Dark", "JupyterLab Light"
HELPERS_JS = (HERE / "lab_helpers.js").read_text()
# Lab settings every server starts with: no news/update toasts over the notebook, every cell in the DOM
# (no windowing: locators and screenshots see all cells), and no autosave racing the test's own save.
DEFAULT_LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
}

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.05,
               what: str = "condition") -> T:
    """Poll ``predicate`` until it returns something truthy and return that (TimeoutError after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def safe_name(text: str) -> str:
    """A file-name-safe version of a pytest node name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "test"


def write_notebook(path: Path, cells: Sequence[str]) -> Path:
    """Write a Python 3 notebook whose code cells hold ``cells`` (sources) and return its path."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def output_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    """Concatenated text of nbformat outputs: streams, text/plain results, and errors as 'Name: value'."""
    parts: list[str] = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            parts.append(text if isinstance(text, str) else "".join(text))
        elif kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain", "")
            parts.append((text if isinstance(text, str) else "".join(text)) + "\n")
        elif kind == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}\n")
    return "".join(parts)


class CellError(AssertionError):
    """A notebook cell (or a kernel query) raised."""


# ------------------------------------------------------------------------------------------ server
class JupyterLab:
    """``jupyter lab`` on a free loopback port with a random token, a temp root and fully isolated dirs."""

    def __init__(self, base: Path, *, env: Mapping[str, str] | None = None,
                 lab_settings: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.base = Path(base)
        self.root, self.home = self.base / "root", self.base / "home"
        self.log_path = self.base / "server.log"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_env = dict(env or {})
        self.lab_settings = {**DEFAULT_LAB_SETTINGS, **(lab_settings or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def __enter__(self) -> JupyterLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _environment(self) -> dict[str, str]:
        h = self.home
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(h / "config"),
            JUPYTER_DATA_DIR=str(h / "data"),
            JUPYTER_RUNTIME_DIR=str(h / "runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(h / "lab-settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(h / "lab-workspaces"),
            IPYTHONDIR=str(h / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra_env)
        return env

    def _write_lab_settings(self) -> None:
        for plugin_id, values in self.lab_settings.items():
            package, plugin = plugin_id.split(":")
            path = self.home / "lab-settings" / package / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))

    def start(self, timeout: float = 120.0) -> None:
        """Start the server and wait until ``/api/status`` answers."""
        for d in (self.root, self.home):
            d.mkdir(parents=True, exist_ok=True)
        self._write_lab_settings()
        cmd = [
            sys.executable, "-m", "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={self.token}",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",  # never query a package index
        ]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=self._environment(), stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)  # its own process group

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited early ({self.proc.returncode}):\n{self.log_text()}")
            try:
                with urllib.request.urlopen(self.api_url("status"), timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        try:
            wait_until(ready, timeout=timeout, interval=0.25, what=f"jupyter lab on port {self.port}")
        except BaseException:
            self.stop()
            raise

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def api_url(self, path: str) -> str:
        return f"{self.url}/api/{path}?token={self.token}"

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """A JSON request to the server (``path`` after the base URL, e.g. ``api/sessions``)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/{path}?token={self.token}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return json.loads(raw) if raw else None

    def put_lab_setting(self, plugin_id: str, values: Mapping[str, Any]) -> None:
        """Replace a lab plugin's user settings (pages opened afterwards see them)."""
        self.request("PUT", f"lab/api/settings/{plugin_id}", {"raw": json.dumps(dict(values))})

    def notebook_dir(self, name: str) -> Path:
        """A fresh, empty folder under the server root (a test's notebooks and files)."""
        base = self.root / safe_name(name)
        path, n = base, 1
        while path.exists():
            n += 1
            path = base.with_name(f"{base.name}-{n}")
        path.mkdir(parents=True)
        return path

    def lab_url(self, notebook: Path) -> str:
        rel = notebook.resolve().relative_to(self.root.resolve()).as_posix()
        # ?reset: start from an empty workspace, so no tab from an earlier page is restored
        return f"{self.url}/lab/tree/{urllib.parse.quote(rel)}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """End every session and its kernel (the server answers once each kernel is down)."""
        for session in self.request("GET", "api/sessions"):
            self.request("DELETE", f"api/sessions/{session['id']}")

    def kernel_ids(self) -> list[str]:
        return [k["id"] for k in self.request("GET", "api/kernels")]

    def descendants(self) -> list[psutil.Process]:
        """The server's live child processes (kernels run in their own process groups, so track them here)."""
        if self.proc is None:
            return []
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def kernel_processes(self) -> list[psutil.Process]:
        """The live ipykernel processes this server started."""
        found = []
        for proc in self.descendants():
            try:
                if proc.status() != psutil.STATUS_ZOMBIE and "ipykernel" in " ".join(proc.cmdline()):
                    found.append(proc)
            except psutil.Error:  # ended meanwhile
                pass
        return found

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the server's process group (it shuts its kernels down), then SIGKILL whatever is left."""
        if self.proc is None:
            return
        children = self.descendants()  # before the server goes: kernels are not in its process group
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        for child in children:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None


# ----------------------------------------------------------------------------------------- browser
@contextmanager
def chromium(home: Path, executable: str = CHROMIUM) -> Iterator[Any]:
    """A headless Debian Chromium under Playwright, with a throwaway HOME/XDG dirs; closed on exit."""
    from playwright.sync_api import sync_playwright

    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_DATA_HOME=str(home / ".local" / "share"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS, env=env)
        try:
            yield browser
        finally:
            browser.close()


# -------------------------------------------------------------------------------------------- page
class Lab:
    """One JupyterLab page (its own browser context) showing one notebook, driven through ``window.jupyterapp``.

    Waits are on exact app state (cell execution counts, kernel status, theme attributes), never on sleeps.
    Timeouts are in seconds. ``problems`` collects page errors and console errors; ``dialogs`` every
    alert/confirm/prompt the page opened (dismissed; a script in widget output would show up here).
    """

    def __init__(self, page: Any, server: JupyterLab, workdir: Path, artifacts: Path) -> None:
        self.page, self.server, self.workdir, self.artifacts = page, server, workdir, artifacts
        self.notebook: Path | None = None
        self.path = ""  # the notebook's path relative to the server root, as JupyterLab names it
        self.panel_id = ""
        self.problems: list[str] = []
        self.dialogs: list[dict[str, str]] = []
        self.theme_changed = False
        page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        page.on("dialog", self._on_dialog)

    @classmethod
    def new(cls, browser: Any, server: JupyterLab, workdir: Path, artifacts: Path,
            viewport: tuple[int, int] = (1280, 900)) -> Lab:
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context.add_init_script(HELPERS_JS)
        page = context.new_page()
        page.set_default_timeout(60_000)  # generous: 2 shared cores
        return cls(page, server, workdir, artifacts)

    def close(self) -> None:
        self.page.context.close()

    def _on_dialog(self, dialog: Any) -> None:
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
        self.page.wait_for_function("([f, a]) => window.__trtE2E[f](...a)", arg=[name, list(args)],
                                    timeout=timeout * 1000, polling=50)

    def next_frame(self) -> None:
        """Wait until the browser has painted twice (after a DOM change, before a screenshot)."""
        self.page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    # -- notebook ------------------------------------------------------------------------------------
    def new_notebook(self, cells: Sequence[str], name: str = "notebook") -> Path:
        """Write a notebook with these code cells into this test's folder."""
        return write_notebook(self.workdir / f"{name}.ipynb", cells)

    def open(self, notebook: Path | Sequence[str], timeout: float = 120.0) -> Lab:
        """Open a notebook file (or a new one from cell sources) and wait for an idle kernel."""
        if not isinstance(notebook, Path):
            notebook = self.new_notebook(notebook)
        self.notebook = notebook
        self.path = notebook.resolve().relative_to(self.server.root.resolve()).as_posix()
        self.page.goto(self.server.lab_url(notebook))
        self.wait_ready(idle=True, timeout=timeout)
        return self

    def wait_ready(self, idle: bool = True, timeout: float = 120.0) -> None:
        """Notebook loaded and rendered, kernel connected (and idle if ``idle``)."""
        self.wait_js("ready", self.path, idle, timeout=timeout)
        self.panel_id = self.page.evaluate("p => window.__trtE2E.panel(p).id", self.path)

    def reload(self, idle: bool = True, timeout: float = 120.0) -> None:
        """Load the page again (same notebook, same kernel session) and wait until it is ready."""
        assert self.notebook is not None, "open() a notebook first"
        self.page.goto(self.server.lab_url(self.notebook))
        self.wait_ready(idle=idle, timeout=timeout)

    def kernel_status(self) -> str:
        """``connectionStatus/status`` of the notebook's kernel, e.g. ``connected/idle``.

        Not a sign of a running cell: on ipykernel 7 it reads idle while an async cell awaits (any message the
        kernel handles meanwhile publishes its own busy/idle pair). Wait on a cell's output or reply instead.
        """
        return str(self.js("kernelStatus", self.path))

    def cell(self, index: int) -> Any:
        """Locator of cell ``index`` (all cells are in the DOM: windowing is off)."""
        return self.page.locator(f"#{self.panel_id} .jp-Notebook .jp-Cell").nth(index)

    def output(self, index: int) -> Any:
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
                tb = _strip_ansi("\n".join(out.get("traceback", [])))
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
            raise CellError(f"kernel raised {err['ename']}: {err['evalue']}\n{_strip_ansi(err['traceback'])}")
        return str(result["text"])

    def kernel_json(self, expression: str, timeout: float = 60.0) -> Any:
        """Evaluate a Python ``expression`` in the kernel and return it, passed through JSON."""
        mark = f"@@{secrets.token_hex(6)}@@"  # a background thread may print into the same request
        text = self.execute(f"import json as _json\nprint({mark!r} + _json.dumps(({expression}), default=repr)"
                            f" + {mark!r})", timeout=timeout)
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
        self.page.wait_for_function("p => window.__trtE2E.dirty(p) === false", arg=self.path,
                                    timeout=timeout * 1000, polling=50)
        assert self.notebook is not None
        return nbformat.read(str(self.notebook), as_version=4)

    def set_theme(self, name: str = DARK, timeout: float = 60.0) -> None:
        """Switch theme with ``apputils:change-theme`` and wait until it is applied and painted."""
        self.theme_changed = True
        self.js("setTheme", name)
        self.page.wait_for_function(
            "n => document.body.dataset.jpThemeName === n && !document.getElementById('jupyterlab-splash')",
            arg=name, timeout=timeout * 1000, polling=50)
        self.next_frame()

    def theme(self) -> dict[str, str]:
        return dict(self.page.evaluate(
            "() => ({name: document.body.dataset.jpThemeName, light: document.body.dataset.jpThemeLight})"))

    def screenshot(self, name: str, target: Any = None) -> Path:
        """Save a PNG of the page (or of a locator) into the artifacts dir and return its path."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / f"{safe_name(name)}.png"
        (target or self.page).screenshot(path=str(path))
        return path


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
