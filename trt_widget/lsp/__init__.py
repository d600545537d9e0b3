"""A language server for editors: ``trt-widget lsp`` (stdio). Commands ``trtWidget.build`` (file URI, then
optionally {options, budget, output}) with work-done progress and cancel, ``trtWidget.stop``, ``trtWidget.builds``;
a failed build's parser errors become diagnostics on the ONNX file. Needs ``pip install "trt_widget[lsp]"``;
importing this package does not import pygls. See docs/agents.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..mcp import PROGRESS_INTERVAL_S
from ._cli import add_arguments, run

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from ..mcp import BuildRegistry

__all__ = ["add_arguments", "create_server", "run"]


def create_server(
    registry: BuildRegistry | None = None, *, progress_interval: float = PROGRESS_INTERVAL_S
) -> LanguageServer:
    """A ``pygls.lsp.server.LanguageServer`` with the trtWidget commands (``progress_interval=`` s, 0.1)."""
    from ._server import create_server as create

    return create(registry, progress_interval=progress_interval)
