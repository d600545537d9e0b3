"""What a silent step is doing: the layer and tactic TensorRT is timing, read from its VERBOSE log lines as they
pass (nothing kept but the latest), so that "no callback for 8 min" can say "timing {ForeignNode[...]} (Myelin)
for 8 min".

TensorRT's autotuner logs, per layer and format combination (TensorRT 8.x to 10.x, NVIDIA's builder):
``--------------- Timing Runner: NAME (KIND)``, then one ``Tactic: 0x… Time: ms`` per tactic timed (TensorRT
10.x names the kernel: ``Tactic Name: KERNEL Tactic: 0x… Time: ms``), ``Fastest Tactic: …`` and
``>>>>>>>>>>>>>>> Chose Runner Type: KIND Tactic: …``. A line is looked at only when its first character can
start one of those (cheap: tens of thousands of VERBOSE lines pass per GPU build).

Every line read is outside text (a recording, a command's relay, a build server): it is read with string methods and
anchored patterns only, linear in its length (a search from every dash of ``-+ Timing Runner: (.*) \\(…\\)$`` was
quadratic: 1.2 s for one 16 KB line).
"""

from __future__ import annotations

import re
from typing import TypedDict

_FIRST = frozenset("-=>TF")  # the first characters of the lines read
_RUNNER = " Timing Runner: "  # after a rule of dashes; then NAME (KIND)
_COSTS = " Computing costs for"  # after a rule of '='; "Computing reformatting costs ...": no layer
_KIND_ID = re.compile(r"\[0x[0-9a-fA-F]+\]")  # a runner kind's trailing id, matched at its one place
_TACTIC_LINE = ("Tactic: ", "Tactic Name: ")
_TACTIC = re.compile(r"(?:Tactic Name: .*? )?Tactic: \S+ [Tt]ime:? ")
MAX_NAME = 120  # layer names of fused nodes run to thousands of characters


def wanted(message: str) -> bool:
    """True for the VERBOSE lines :class:`TacticWatch` reads (the router's pre-filter)."""
    return message[:1] in _FIRST and (
        "Timing Runner: " in message
        or message.startswith(_TACTIC_LINE)
        or "Chose Runner Type" in message
        or "Computing " in message
    )


class Timing(TypedDict):
    """What the autotuner is timing now: the layer, its runner, since when (build time), tactics timed so far."""

    layer: str
    runner: str
    since_s: float
    tactics: int


class TacticWatch:
    """The latest autotuning state: ``(layer, runner kind, since t, tactics timed)``, replaced whole (one
    assignment: readers on other threads see one consistent tuple) or None between layers."""

    def __init__(self) -> None:
        self.state: tuple[str, str, float, int] | None = None

    def feed(self, message: str, t: float) -> None:
        """Read one VERBOSE line logged at build time ``t`` (seconds)."""
        if message.startswith(_TACTIC_LINE):
            state = self.state
            if state is not None and _TACTIC.match(message):
                self.state = (state[0], state[1], state[2], state[3] + 1)
            return
        runner = _runner(message)
        if runner is not None:
            self.state = (_short(runner[0]), runner[1], t, 0)
            return
        if "Chose Runner Type" in message:
            self.state = None
            return
        if "Computing " in message:
            head, found, layer = message.partition(_COSTS)
            layer = layer.strip() if found and head.endswith("=") else ""
            self.state = (_short(layer), "", t, 0) if layer else None

    def snapshot(self) -> Timing | None:
        """JSON-ready: {"layer", "runner", "since_s", "tactics"}, or None when nothing is being timed."""
        state = self.state
        if state is None:
            return None
        return {"layer": state[0], "runner": state[1], "since_s": round(state[2], 3), "tactics": state[3]}


def describe(timing: Timing | None, now: float) -> str:
    """``timing {layer} (Myelin) for 8 min, 3 tactics timed`` for a terminal; "" when nothing is timed."""
    if not timing:
        return ""
    from ._format import fmt_s

    kind = f" ({timing['runner']})" if timing.get("runner") else ""
    count = timing.get("tactics") or 0
    tactics = f", {count} tactic{'s' if count != 1 else ''} timed" if count else ""
    return f"timing {timing['layer']}{kind} for {fmt_s(max(0.0, now - timing['since_s']))}{tactics}"


def _runner(message: str) -> tuple[str, str] | None:
    """``(NAME, KIND)`` of ``----- Timing Runner: NAME (KIND)``, or None: one pass of string methods (linear)."""
    head, found, rest = message.partition(_RUNNER)
    rest = rest.rstrip()
    if not found or not head.endswith("-") or not rest.endswith(")"):
        return None
    name, opened, kind = rest[:-1].rpartition(" (")
    if not opened or "(" in kind or ")" in kind:
        return None
    kind = kind.strip()
    tail = kind.rfind("[")
    if tail >= 0 and _KIND_ID.fullmatch(kind, tail):
        kind = kind[:tail]
    return name.strip(), kind


def _short(name: str) -> str:
    name = "".join(c if c.isprintable() else " " for c in " ".join(name.split()))  # no control characters
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"
