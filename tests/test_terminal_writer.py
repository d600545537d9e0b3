"""The terminal has one writer: nothing draws on the screen between a line's reckoning and its write (issue 37)."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterable

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


class _HookConsole(Console):
    """Runs ``hook`` inside a Ctrl-C notice's print on the thread that prints it, after rich's live display reckoned
    the print's cursor move (from the tree's height when last drawn) and before the print's write."""

    def __init__(self, screen: _Screen) -> None:
        super().__init__(file=screen, force_terminal=True, force_interactive=True, width=110, height=40)
        self.hook: Callable[[], None] = lambda: None
        self.noticer: threading.Thread | None = None  # the thread the Ctrl-C's handler runs on
        self.hooked = False

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        notice = isinstance(renderable, Text) and "cannot be interrupted mid-step" in renderable.plain  # not the footer
        if notice and threading.current_thread() is self.noticer:
            self.noticer = None
            self.hooked = True
            self.hook()
        return super().render(renderable, options)


def _ctrl_c_during_the_build(hook: Callable[[TerminalView], None]) -> tuple[_Screen, Build]:
    """A thread build drawn live on a fake terminal, a first Ctrl-C while its tree is up, ``hook(view)`` inside the
    notice's print; returns once the build was cancelled and its view finished."""
    build = Build(deep_residual(400), isolation="thread", history=False)
    screen = _Screen()
    console = _HookConsole(screen)
    view = TerminalView(build, screen, style="rich", console=console)
    console.hook = lambda: hook(view)
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
    assert console.hooked, "the notice was never printed"
    return screen, build


@pytest.mark.rtx_long_step
def test_no_redraw_of_the_live_tree_comes_between_a_ctrl_c_notice_and_its_write() -> None:
    """Issue 37: a two-worker run cut the second Ctrl-C notice at its 220th character, its third row overwritten by
    TensorRT's next log line. A print above rich's live tree moves the cursor up by the tree's height when last
    drawn; rich's own refresh thread redrew the tree (a shorter one as phases closed) between that reckoning and
    the print's write, so the move went up into the notice. Every drawing now holds the view's one lock."""
    between: list[str] = []

    def pause(view: TerminalView) -> None:  # long enough for rich's 10 Hz refresh thread (before the fix) to draw
        screen = view.stream
        assert isinstance(screen, _Screen)
        start = len(screen.writers)
        screen.wrote.clear()
        screen.wrote.wait(2.0)
        between.extend(screen.writers[start:])

    screen, _ = _ctrl_c_during_the_build(pause)
    assert between == [], f"drawn by {between} in the middle of the notice's print"
    assert "Cancelling — waiting for the builder" in screen.getvalue()


@pytest.mark.rtx_long_step
def test_a_ctrl_c_that_exits_inside_the_last_ones_print_still_says_so_on_a_line_of_its_own() -> None:
    """The CLI's third Ctrl-C says the build did not finish, then exits at once (``os._exit``). Its handler runs on
    the main thread between two bytecodes, so it can come inside the second Ctrl-C's print above the tree: rich
    then buffered everything printed until that outer print's end, which the exit never reaches, and the line was
    lost. Said inside a print, the line is on the screen when ``abandon`` returns, on a line of its own."""
    said = "Exiting without waiting for the builder: the build did not finish (no engine written)."
    shown: list[str] = []

    def exit_now(view: TerminalView) -> None:
        view.abandon(said)
        screen = view.stream
        assert isinstance(screen, _Screen)
        shown.append(screen.getvalue())  # what the terminal holds when the process would exit

    _ctrl_c_during_the_build(exit_now)
    lines = shown[0].split("\n")
    assert said in lines, shown[0][-500:]
