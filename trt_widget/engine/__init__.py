"""What the build produced: the engine's layers, precisions, tactics, fusions and memory (:class:`EngineReport`),
read from TensorRT's own words: the build log's layer record, the inspector's JSON, or a recording."""

from ._cli import add_arguments as cli_arguments
from ._cli import run as cli_inspect
from ._collect import EngineLog, apply_report_event, engine_line, report_event, report_of
from ._delta import brief_delta, delta_text, engine_brief, engine_delta, signed, signed_bytes
from ._html import engine_html
from ._layer import _MEMORY_WORDS as MEMORY_WORDS
from ._layer import MAX_LAYERS, MEMORY_KEYS, EngineLayer, EngineTensor, display, tactic_hex
from ._model import EngineReport, EngineReportDiff, LayerChange

__all__ = [
    "MAX_LAYERS",
    "MEMORY_KEYS",
    "MEMORY_WORDS",
    "EngineLayer",
    "EngineLog",
    "EngineReport",
    "EngineReportDiff",
    "EngineTensor",
    "LayerChange",
    "apply_report_event",
    "brief_delta",
    "cli_arguments",
    "cli_inspect",
    "delta_text",
    "display",
    "engine_brief",
    "engine_delta",
    "engine_html",
    "engine_line",
    "report_event",
    "report_of",
    "signed",
    "signed_bytes",
    "tactic_hex",
]
