"""``import tensorrt_rtx`` for TensorRT for RTX's PyPI wheel, which installs the module as ``tensorrt_rtx_bindings``:
Polygraphy imports ``tensorrt_rtx`` when ``POLYGRAPHY_USE_TENSORRT_RTX=1``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys


def alias_tensorrt_rtx() -> bool:
    """Make ``import tensorrt_rtx`` give ``tensorrt_rtx_bindings`` (when no real ``tensorrt_rtx`` exists) and set
    ``POLYGRAPHY_USE_TENSORRT_RTX=1`` unless set; call it before importing Polygraphy. True if RTX is usable."""
    if "tensorrt_rtx" not in sys.modules and importlib.util.find_spec("tensorrt_rtx") is None:
        if importlib.util.find_spec("tensorrt_rtx_bindings") is None:
            return False
        sys.modules["tensorrt_rtx"] = importlib.import_module("tensorrt_rtx_bindings")
    os.environ.setdefault("POLYGRAPHY_USE_TENSORRT_RTX", "1")
    return True
