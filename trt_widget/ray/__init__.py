"""Builds on a Ray cluster: ``RayRunner`` (a Ray task per build), ``ensure_ray`` (``pip install "trt_widget[ray]"``).

A runner like those in :mod:`trt_widget.runners`, in a folder of its own because its remote task runs a whole
``Build`` on the Ray worker (the core never imports it).
"""

from __future__ import annotations

from ._runner import RayRunner, ensure_ray

__all__ = ["RayRunner", "ensure_ray"]
