"""Renderings of a build for people: inline (text, Markdown, HTML fragment), the standalone HTML page, the
timeline (SVG/PNG) and Chrome traces."""

from __future__ import annotations

from . import timeline, trace
from ._inline import (
    INLINE_MAX_NODES,
    REPORT_MAX_NODES,
    PhaseNode,
    mimebundle,
    phase_tree,
    to_html_fragment,
    to_markdown,
    to_text,
    tree_html,
)
from ._page import to_html

__all__ = [
    "INLINE_MAX_NODES",
    "REPORT_MAX_NODES",
    "PhaseNode",
    "mimebundle",
    "phase_tree",
    "timeline",
    "to_html",
    "to_html_fragment",
    "to_markdown",
    "to_text",
    "trace",
    "tree_html",
]
