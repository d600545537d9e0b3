"""Settings every pytest run of this repository needs, whatever it collects (tests/, notebooks/ alone, both)."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-lsp 1.0's ``pytest_runtest_call`` wrapper returns without yielding for an item that has no funcargs
    (nbval's notebook cells), which fails the item: give such items an empty mapping."""
    for item in items:
        if not hasattr(item, "funcargs"):
            item.funcargs = {}  # type: ignore[attr-defined]
