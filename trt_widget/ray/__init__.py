"""Builds on a Ray cluster: ``RayRunner`` (a Ray task per build), ``ensure_ray``, ``end_local_ray`` (the local
instance this process started, shut down and its private folder removed); ``pip install "trt_widget[ray]"``.

A runner like those in :mod:`trt_widget.runners`, in a folder of its own because its remote task runs a whole
``Build`` on the Ray worker (the core never imports it).
"""

from __future__ import annotations

from ._runner import RayRunner, end_local_ray, ensure_ray

__all__ = ["RayRunner", "end_local_ray", "ensure_ray"]
