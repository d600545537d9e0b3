"""Which HTTP request a tool call came on, and whether its client hung up before the response ended."""

from __future__ import annotations

import asyncio

PROGRESS_INTERVAL_S = 0.1  # at most 10 progress notifications a second
STREAM_KEY = "trt_widget.stream"  # the scope entry holding a request's RequestStream


class RequestStream:
    """Whether the client hung up on one HTTP request before its response ended: ``gone`` is set then. A tool
    reads it through ``ctx.request_context.request.scope`` (the SDK keeps serving a request whose stream closed)."""

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        self.answered = False


def request_stream(request: object) -> RequestStream | None:
    """The stream tracker of the HTTP request that carried a tool call; None over stdio."""
    scope = getattr(request, "scope", None)
    found = scope.get(STREAM_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, RequestStream) else None
