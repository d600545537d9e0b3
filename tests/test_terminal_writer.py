"""The terminal has one writer: nothing draws on the screen between a line's reckoning and its write (issue 37)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterable

import pytest
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from trt_widget import Build
from trt_widget._terminal import Interrupts, TerminalView
from trt_widget.models import deep_residual


class _Screen(io.StringIO):
    """A terminal's input: every write, with the thread that made it."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: list[str] = []
        self.wrote = threading.Event()

    def write(self, s: str) -> int:
        self.writers.append(threading.current_thread().name)
        self.wrote.set()
        return super().write(s)

    def isatty(self) -> bool:
        return True


class _PausingConsole(Console):
    """Holds a Ctrl-C notice's print between its cursor move's reckoning (rich's live display computes it from the
    tree's height when last drawn) and its write, long enough for any other writer to draw, and says who did."""

    def __init__(self, screen: _Screen) -> None:
        super().__init__(file=screen, force_terminal=True, force_interactive=True, width=110, height=40)
        self.terminal = screen
        self.between: list[str] | None = None
        self.noticer: threading.Thread | None = None  # the thread the Ctrl-C's handler runs on

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        notice = isinstance(renderable, Text) and "cannot be interrupted mid-step" in renderable.plain  # not the footer
        if notice and threading.current_thread() is self.noticer:
            start = len(self.terminal.writers)
            self.terminal.wrote.clear()
            self.terminal.wrote.wait(2.0)  # rich's refresh thread (before the fix) redraws at 10 Hz: it comes
            self.between = self.terminal.writers[start:]
        return super().render(renderable, options)


@pytest.mark.rtx_long_step
def test_no_redraw_of_the_live_tree_comes_between_a_ctrl_c_notice_and_its_write() -> None:
    """Issue 37: a two-worker run cut the second Ctrl-C notice at its 220th character, its third row overwritten by
    TensorRT's next log line. A print above rich's live tree moves the cursor up by the tree's height when last
    drawn; rich's own refresh thread redrew the tree (a shorter one as phases closed) between that reckoning and
    the print's write, so the move went up into the notice. Every drawing now holds the view's one lock."""
    build = Build(deep_residual(400), isolation="thread", history=False)
    screen = _Screen()
    console = _PausingConsole(screen)
    view = TerminalView(build, screen, style="rich", console=console)
    build.start()
    deadline = time.monotonic() + 120
    while "running" not in screen.getvalue() and not build.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "running" in screen.getvalue(), screen.getvalue()  # the live tree is up
    console.noticer = threading.current_thread()
    try:
        assert Interrupts(build, view.notice)(), "the build ended before the Ctrl-C"
    finally:
        build.stop()
        assert build.wait(300) == "cancelled"
        assert view.join(30)
    assert console.between == [], f"drawn by {console.between} in the middle of the notice's print"
    assert "Cancelling — waiting for the builder" in screen.getvalue()
