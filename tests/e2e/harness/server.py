"""The e2e harness's ``jupyter lab`` server: a free loopback port, a random token, a temp root, isolated dirs."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from .notebooks import safe_name, wait_until

# Lab settings every server starts with: no news/update toasts over the notebook, every cell in the DOM
# (no windowing: locators and screenshots see all cells), and no autosave racing the test's own save.
DEFAULT_LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


IPYKERNEL6 = Path(sys.prefix) / "ipykernel6"  # `pip install --target` of ipykernel 6.x (scripts/test.sh)
IPYKERNEL6_KERNEL = "python3-ipykernel6"


class JupyterLab:
    """``jupyter lab`` on a free loopback port with a random token, a temp root and fully isolated dirs."""

    def __init__(
        self,
        base: Path,
        *,
        env: Mapping[str, str] | None = None,
        lab_settings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
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
            sys.executable,
            "-m",
            "jupyterlab",
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
        self._log = open(self.log_path, "wb")  # noqa: SIM115  (the server's output; stop() closes it)
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.root,
            env=self._environment(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # its own process group

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
        req = urllib.request.Request(
            f"{self.url}/{path}?token={self.token}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
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

    def home_url(self) -> str:
        """JupyterLab with an empty workspace and no document."""
        return f"{self.url}/lab?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """End every session and its kernel (the server answers once each kernel is down)."""
        for session in self.request("GET", "api/sessions"):
            try:
                self.request("DELETE", f"api/sessions/{session['id']}")
            except urllib.error.HTTPError as exc:  # 404: it ended meanwhile (a test shut its kernel down)
                if exc.code != 404:
                    raise

    def interrupt_kernels(self) -> None:
        """Interrupt every kernel, as the toolbar's stop button does."""
        for kernel in self.kernel_ids():
            self.request("POST", f"api/kernels/{kernel}/interrupt")

    def add_kernelspec(self, name: str, python_path: Sequence[str | Path]) -> None:
        """A kernel of this Python with ``python_path`` first on sys.path (e.g. another ipykernel version)."""
        spec = self.home / "data" / "kernels" / name
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": name,
                    "language": "python",
                    "env": {"PYTHONPATH": os.pathsep.join(str(p) for p in python_path)},
                }
            )
        )

    def kernel_ids(self) -> list[str]:
        return [k["id"] for k in self.request("GET", "api/kernels")]

    def descendants(self) -> list[psutil.Process]:
        """The server's live child processes (kernels run in their own process groups, so track them here)."""
        if self.proc is None:
            return []
        try:
            children: list[psutil.Process] = psutil.Process(self.proc.pid).children(recursive=True)
            return children
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
            with contextlib.suppress(subprocess.TimeoutExpired, ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        psutil.wait_procs(children, timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
