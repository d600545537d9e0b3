"""What a command run in a pseudo-terminal (``pexpect.spawn`` with an encoding) wrote, as text: shared by the CLI
tests of several folders (a plain module, as tests/attacks.py says why)."""

from __future__ import annotations

import pexpect


def before(child: pexpect.spawn[str]) -> str:
    """What the child wrote before the last match (text: the child was spawned with an encoding)."""
    assert isinstance(child.before, str), child.before
    return child.before


def through_match(child: pexpect.spawn[str]) -> str:
    """What the child wrote up to the end of the last match, a text pattern's."""
    assert isinstance(child.after, str), child.after
    return before(child) + child.after
