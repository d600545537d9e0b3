"""The build service: ``trt-widget serve`` (HTTP + SSE), its store and page, and the client ``RemoteBuild``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._server import ServerThread, UsageError, add_arguments, default_data_dir, run

if TYPE_CHECKING:
    from ._client import RemoteBuild
    from ._guard import connection_guard, guarded_server

__all__ = [
    "RemoteBuild",
    "ServerThread",
    "UsageError",
    "add_arguments",
    "connection_guard",
    "default_data_dir",
    "guarded_server",
    "run",
]


def __getattr__(name: str) -> object:
    if name == "RemoteBuild":  # the client needs httpx, the server does not
        from ._client import RemoteBuild

        return RemoteBuild
    if name in ("connection_guard", "guarded_server"):  # they need uvicorn (also the MCP server's)
        from . import _guard

        return getattr(_guard, name)
    raise AttributeError(f"module 'trt_widget.serve' has no attribute {name!r}")
