"""Resource sampling (placeholder until the sampler lands)."""

from __future__ import annotations

from typing import Any


def attach_resources(build: Any) -> None:
    """Placeholder: no samples are taken yet."""
