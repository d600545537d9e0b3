"""Settings every pytest run of this repository needs, whatever it collects (tests/, notebooks/ alone, both),
and the test tiers by cost: ``--fast`` runs the fast tier (``scripts/test.sh --fast``, docs/development.md)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# The fast tier: modules whose tests need no TensorRT build, server, browser or subprocess (scripted builds
# are fine: trt_widget.runners.ScriptedRunner). A test in them that needs one is marked slow itself. Every test
# of any other module is marked slow here, so a new module joins the fast tier only when listed.
FAST_MODULES = frozenset(
    {
        "tests/history/test_history_like.py",
        "tests/ray/test_ray_init_working_dir.py",
        "tests/ray/test_relay.py",
        "tests/runners/test_scripted.py",
        "tests/test_api_docs.py",
        "tests/test_cli_shapes.py",
        "tests/test_events.py",
        "tests/test_files.py",
        "tests/test_grouping.py",
        "tests/test_layout.py",
        "tests/test_monitor.py",
        "tests/test_options.py",
        "tests/test_options_typed.py",
        "tests/test_phases.py",
        "tests/test_phases_fuzz.py",
        "tests/test_public_types.py",
        "tests/test_snapshot.py",
        "tests/test_statements.py",
        "tests/test_subscribe.py",
        "tests/test_trtexec.py",
        "tests/test_verbose.py",
    }
)
COSTLY = ("slow", "e2e", "ray", "contract")
SLOW_S = 1.0  # a fast-tier test that takes longer is named at the end of a --fast run


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast", action="store_true", help="the fast tier only: no test marked slow, e2e, ray or contract"
    )
    parser.addoption(
        "--deadline-tests",
        choices=("only", "skip"),
        help="only the tests marked deadline, or all but them (scripts/test.sh's two passes; composes with -m, -k)",
    )


def _module(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under --fast, modules outside the fast tier are not even imported (collection is most of a fast run)."""
    if not config.getoption("--fast", default=False):
        return None
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return _module(collection_path) not in FAST_MODULES
    if collection_path.is_dir():  # a folder with no fast module: not even its conftest.py is imported
        folder = _module(collection_path) + "/"
        return not any(module.startswith(folder) for module in FAST_MODULES) or None
    return None


def pytest_configure(config: pytest.Config) -> None:
    # A suite started with SIGINT ignored (``cmd &`` in a script, nohup) would pass that on to every process its
    # tests start (an ignored signal stays ignored across exec), and a test's Ctrl-C would reach none of them: a
    # handler here is reset to the default in each child instead.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getoption("--fast", default=False):
        os.environ["TRT_WIDGET_FAST_TIER"] = "1"  # property tests draw fewer examples (tests/test_phases_fuzz.py)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the tests of modules outside the fast tier slow; under --fast, deselects every costly test.

    pytest-lsp 1.0's ``pytest_runtest_call`` wrapper returns without yielding for an item that has no funcargs
    (nbval's notebook cells), which fails the item: such items get an empty mapping."""
    for item in items:
        if not hasattr(item, "funcargs"):
            item.funcargs = {}  # type: ignore[attr-defined]
        module = _module(Path(str(item.path)))
        if module.startswith("tests/") and module not in FAST_MODULES and not item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--fast", default=False):
        _keep(config, items, lambda item: not any(item.get_closest_marker(mark) for mark in COSTLY))
    if deadline := config.getoption("--deadline-tests", default=None):  # after tests/conftest.py's marks
        _keep(config, items, lambda item: (item.get_closest_marker("deadline") is not None) == (deadline == "only"))


def _keep(config: pytest.Config, items: list[pytest.Item], wanted: Callable[[pytest.Item], bool]) -> None:
    """Deselect the items ``wanted`` refuses (reported as deselected, as ``-m`` does)."""
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (keep if wanted(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


_durations: dict[str, float] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        _durations[item.nodeid] = time.perf_counter() - started


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if not config.getoption("--fast", default=False):
        return
    slow = sorted(((s, n) for n, s in _durations.items() if s > SLOW_S), reverse=True)
    if slow:
        terminalreporter.write_line(
            f"fast tier: {len(slow)} test(s) took over {SLOW_S:.0f} s: mark them slow, or script them "
            "(trt_widget.runners.ScriptedRunner):",
            yellow=True,
        )
        for seconds, nodeid in slow:
            terminalreporter.write_line(f"  {seconds:5.1f} s  {nodeid}")
