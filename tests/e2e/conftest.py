"""pytest wiring for the real-browser e2e tests (the helpers themselves live in the harness package).

One JupyterLab server and one Chromium per session; per test a fresh browser context (page), a fresh notebook
folder, and its kernels shut down afterwards. A failing test leaves a screenshot, the browser's errors and the
server log in the artifacts dir (``$TRT_WIDGET_ARTIFACTS`` or ``<repo>/artifacts/e2e``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHROMIUM = "/usr/bin/chromium"
IN_CI = bool(os.environ.get("CI"))
MISSING_MODULES = [
    m for m in ("playwright", "jupyterlab", "anywidget", "nbformat", "psutil") if importlib.util.find_spec(m) is None
]
MISSING = (
    f"{CHROMIUM} is missing (apt-get install -y chromium)"
    if not Path(CHROMIUM).exists()
    else f"Python packages missing: {', '.join(MISSING_MODULES)} (pip install -e '.[dev]')"
    if MISSING_MODULES
    else None
)
# Without CI a missing prerequisite skips every e2e test; with CI set it fails them (see `browser`).
# (No module-level pytest.skip here: it crashes pytest when this folder is given on the command line.)

if MISSING_MODULES and not IN_CI:
    collect_ignore_glob = ["test_*.py"]  # they cannot even be imported; the reason goes in the summary
else:
    from harness.browser import chromium
    from harness.lab import Lab
    from harness.notebooks import safe_name
    from harness.server import IPYKERNEL6, IPYKERNEL6_KERNEL, JupyterLab
    from playwright.sync_api import expect

    ARTIFACTS = Path(os.environ.get("TRT_WIDGET_ARTIFACTS") or REPO / "artifacts" / "e2e")
    expect.set_options(timeout=60_000)  # Playwright's 5 s default is too tight on 2 shared cores


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason=f"e2e: {MISSING}") if MISSING and not IN_CI else None
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            if skip is not None:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if MISSING:
        verdict = "fail (CI is set)" if IN_CI else "skipped"
        terminalreporter.write_line(f"e2e tests {verdict}: {MISSING}", yellow=True)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def jupyter(tmp_path_factory: pytest.TempPathFactory, artifacts: Path) -> Iterator[JupyterLab]:
    base = tmp_path_factory.mktemp("jupyter")
    # kernels keep their build history (ETAs) in this session's folder, not in the user's cache
    server = JupyterLab(base, env={"TRT_WIDGET_HISTORY": str(base / "history.sqlite")})
    if IPYKERNEL6.is_dir():  # installed by scripts/test.sh: ipykernel 6.x beside this venv's 7.x
        server.add_kernelspec(IPYKERNEL6_KERNEL, [IPYKERNEL6])
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.copy(server.log_path, artifacts / "server.log")


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if MISSING:
        pytest.fail(f"CI is set but an e2e prerequisite is missing: {MISSING}")
    with chromium(tmp_path_factory.mktemp("chromium-home")) as b:
        yield b


@pytest.fixture
def lab(browser: Any, jupyter: JupyterLab, artifacts: Path, request: pytest.FixtureRequest) -> Iterator[Lab]:
    """A fresh page and notebook folder; kernels are shut down (and changed lab settings reset) afterwards."""
    page = Lab.new(browser, jupyter, workdir=jupyter.notebook_dir(request.node.name), artifacts=artifacts)
    try:
        yield page
    finally:
        if page.problems:  # shown by pytest for a failing test (or with -s)
            print("\n".join(["browser problems:", *page.problems]))
        page.close()
        jupyter.shutdown_kernels()  # 2 cores: leave nothing running for the next test
        for plugin_id in page.changed_settings:  # back to the server's defaults
            jupyter.put_lab_setting(plugin_id, jupyter.lab_settings.get(plugin_id, {}))


def _save_failure_artifacts(item: pytest.Item) -> list[Path]:
    name = f"FAILED-{safe_name(item.name)}"
    saved: list[Path] = []
    page: Lab | None = item.funcargs.get("lab")  # type: ignore[attr-defined]
    server: JupyterLab | None = item.funcargs.get("jupyter")  # type: ignore[attr-defined]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if page is not None:
        server = server or page.server
        try:
            saved.append(page.screenshot(name))
        except Exception as exc:  # the page may be what broke
            print(f"no failure screenshot: {exc}")
        notes = ARTIFACTS / f"{name}-browser.txt"
        notes.write_text(
            "\n".join(
                [
                    f"kernel: {_safe(lambda: page.kernel_status())}",
                    "problems:",
                    *page.problems,
                    "dialogs:",
                    *map(str, page.dialogs),
                ]
            )
            + "\n"
        )
        saved.append(notes)
    if server is not None and server.log_path.exists():
        saved.append(Path(shutil.copy(server.log_path, ARTIFACTS / f"{name}-server.log")))
    return saved


def _safe(fn: Any) -> str:
    try:
        return str(fn())
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and report.when in ("setup", "call"):
        saved = _save_failure_artifacts(item)
        if saved:
            report.sections.append(("e2e artifacts", "\n".join(map(str, saved))))
    return report
