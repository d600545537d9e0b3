"""A notebook app server (marimo, Voilà) in a subprocess for the e2e tests.

Like ``server.JupyterLab``: a free loopback port, isolated home/Jupyter dirs under a temp folder, the server's
stdout and stderr in separate files (a test reads what the server printed), its own process group, and a
teardown that leaves nothing running (kernels and trt_widget's builder processes included).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from .notebooks import safe_name, wait_until
from .server import free_port


class AppServer:
    """``argv(port)`` run in ``cwd`` with isolated dirs under ``base``; ready once the port accepts connections."""

    def __init__(
        self,
        name: str,
        argv: Callable[[int], Sequence[str]],
        cwd: Path,
        base: Path,
        *,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [str(a) for a in argv(self.port)]
        self.cwd, self.base = Path(cwd), Path(base)
        self.home = self.base / "home"
        self.stdout_path = self.base / f"{name}-stdout.log"
        self.stderr_path = self.base / f"{name}-stderr.log"
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self._files: list[Any] = []

    def __enter__(self) -> AppServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _environment(self) -> dict[str, str]:
        h = self.home
        env = dict(os.environ)
        env.update(
            HOME=str(h),
            XDG_CONFIG_HOME=str(h / ".config"),
            XDG_CACHE_HOME=str(h / ".cache"),
            XDG_DATA_HOME=str(h / ".local" / "share"),
            XDG_STATE_HOME=str(h / ".local" / "state"),
            JUPYTER_CONFIG_DIR=str(h / "jupyter-config"),
            JUPYTER_DATA_DIR=str(h / "jupyter-data"),
            JUPYTER_RUNTIME_DIR=str(h / "jupyter-runtime"),
            IPYTHONDIR=str(h / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            MARIMO_SKIP_UPDATE_CHECK="1",
            PYTHONUNBUFFERED="1",  # what the server prints is in the log files at once
            TRT_WIDGET_HISTORY=str(self.base / "history.sqlite"),  # no ETAs from the user's builds
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 60.0) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        out, err = open(self.stdout_path, "wb"), open(self.stderr_path, "wb")  # noqa: SIM115  (closed in stop())
        self._files = [out, err]
        self.proc = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self._environment(),
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group
        )

        def listening() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited early ({self.proc.returncode}):\n{self.output()}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        try:
            wait_until(listening, timeout=timeout, interval=0.1, what=f"{self.name} on port {self.port}")
        except BaseException:
            self.stop()
            raise

    def stdout_text(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def output(self) -> str:
        return f"--- stdout ---\n{self.stdout_text()}\n--- stderr ---\n{self.stderr_text()}"

    def descendants(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            children: list[psutil.Process] = psutil.Process(self.proc.pid).children(recursive=True)
            return children
        except psutil.NoSuchProcess:
            return []

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the server's process group, then SIGKILL it and every process it started that is left."""
        if self.proc is None:
            return
        children = self.descendants()  # before the server goes: kernels may run in their own process groups
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
        for f in self._files:
            f.close()
        self._files = []

    def save_logs(self, artifacts: Path) -> list[Path]:
        """Copy the server's stdout and stderr into ``artifacts``."""
        artifacts.mkdir(parents=True, exist_ok=True)
        saved = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                target = artifacts / path.name
                target.write_bytes(path.read_bytes())
                saved.append(target)
        return saved


@contextlib.contextmanager
def screenshot_on_failure(page: Any, artifacts: Path, name: str) -> Iterator[None]:
    """Save ``FAILED-<name>.png`` of the page when the block raises (the conftest hook only knows ``lab``)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            artifacts.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(artifacts / f"FAILED-{safe_name(name)}.png"), full_page=True)
        raise
