"""TensorRT engine builds as MCP tools, for agents: ``trt-widget mcp`` (stdio) or ``trt-widget mcp --http``.

Tools: build_engine (waits, with progress notifications), start_build / build_status / stop_build (for clients
that don't keep a request open), list_builds, build_timings. Needs ``pip install "trt_widget[mcp]"``; importing
this package does not import the SDK (that happens in :func:`create_server`). See docs/agents.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._builds import BadInput, BuildDescription, BuildRegistry
from ._cli import add_arguments, add_max_concurrent, run
from ._stream import PROGRESS_INTERVAL_S

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ._http import HttpServerThread

__all__ = [
    "PROGRESS_INTERVAL_S",
    "BadInput",
    "BuildDescription",
    "BuildRegistry",
    "HttpServerThread",
    "add_arguments",
    "add_max_concurrent",
    "create_server",
    "run",
]


def create_server(
    registry: BuildRegistry | None = None, *, progress_interval: float = PROGRESS_INTERVAL_S
) -> MCPServer[object]:
    """An ``mcp.server.mcpserver.MCPServer`` with the build tools (``progress_interval=`` s between progress
    notifications, 0.1 by default)."""
    from ._server import create_server as create

    return create(registry, progress_interval=progress_interval)


def __getattr__(name: str) -> object:
    if name == "HttpServerThread":
        from ._http import HttpServerThread

        return HttpServerThread
    raise AttributeError(f"module 'trt_widget.mcp' has no attribute {name!r}")
