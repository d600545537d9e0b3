"""``trt-widget matrix``: a build matrix in a terminal — a live table in a TTY, plain lines in a pipe, or one JSON
event stream (``--json``) with the build id in every event.

  trt-widget matrix model.onnx [more.onnx ...] [--opt-level N [N ...]] [--executor local|ray] [--max-parallel N]
                    [--ray-address ADDR] [-o DIR] [--json] [--plain] [--budget S] [--timing-cache F]
                    [--workspace SIZE] [--verbose]

One build per (model, --opt-level value). Exit codes: 0 every build succeeded, 1 a build failed (or bad input),
2 bad usage, 124 a build ran out of its --budget, 130 cancelled with Ctrl-C. Ctrl-C stops every build (each
escalates to terminating its builder 0.1 s later, as ``trt-widget build``); a second Ctrl-C force-stops them at
once; a third exits without waiting.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, TextIO, cast

from .._event_sinks import PipeStdout
from .._files import BadModelPath, model_file
from .._format import RawHelpFormatter, escape_controls, escape_lines, fit_lines, say
from .._signals import WakeupListener
from .._status import INTERRUPTED

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    from .._options import BuildOptionsDict
    from ._matrix import BuildMatrix, Cell, Executor


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 124, 130
COLORS = {"succeeded": "green", "failed": "red", "cancelled": "yellow", "cancelling": "yellow", "running": "cyan"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``matrix`` sub-command's arguments."""
    parser.add_argument("models", nargs="+", metavar="MODEL", help="ONNX files")
    parser.add_argument(
        "--opt-level",
        type=int,
        nargs="+",
        choices=range(6),
        metavar="N",
        help="builder optimization levels 0..5: one build per level and model (default: TensorRT's default)",
    )
    parser.add_argument("--executor", choices=("local", "ray"), default="local", help="where the builds run")
    parser.add_argument(
        "--max-parallel", type=int, metavar="N", help="builds at once (local default 1; ray: as many as Ray runs)"
    )
    parser.add_argument("--ray-address", metavar="ADDR", help="Ray cluster address (default: RAY_ADDRESS or local)")
    parser.add_argument(
        "-o",
        "--output-dir",
        metavar="DIR",
        help="write each engine as DIR/<model>-<variant>.engine (DIR is created when missing)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON event stream on stdout, 'build' in every event")
    parser.add_argument("--plain", action="store_true", help="plain lines even in a terminal")
    from .._cli_options import SHAPES_EPILOG, add_option_arguments

    add_option_arguments(
        parser.add_argument_group("build options of every build (see docs/options.md)"),
        exclude=("optimization_level", "output"),  # --opt-level makes the variants; -o names a directory here
    )
    parser.epilog = SHAPES_EPILOG
    parser.formatter_class = RawHelpFormatter


def run(args: argparse.Namespace) -> int:
    """Run the matrix; returns the exit code."""
    for model in args.models:
        try:
            model_file(model)
        except BadModelPath as exc:
            _stderr(f"trt-widget: error: {escape_controls(exc)}")
            return EXIT_FAILED
    if args.max_parallel is not None and args.max_parallel < 1:
        _stderr(f"trt-widget: error: --max-parallel must be at least 1, got {args.max_parallel}")
        return EXIT_USAGE
    from .._cli_options import checked_options
    from ._matrix import output_folder

    try:  # every variant's options too: a bad --budget is one usage error, not a failed build per variant
        options = checked_options(args)
        for level in args.opt_level or ():
            checked_options(args, optimization_level=level)
    except OSError as exc:  # not found, or a path stat() refuses (a name too long, a folder not entered)
        _stderr(f"trt-widget: error: {escape_controls(exc)}")
        return EXIT_FAILED
    except ValueError as exc:
        print(f"trt-widget: error: {escape_controls(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if args.output_dir is not None:
        try:
            output_folder(args.output_dir, "-o/--output-dir")
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _stderr(f"trt-widget: error: {escape_controls(reason)}")
            return EXIT_FAILED
    executor: Executor = args.executor
    if args.executor == "ray" and args.ray_address:
        from ..ray import RayRunner

        executor = RayRunner(address=args.ray_address)
    ray_started = args.executor == "ray" and _connect_ray(args.ray_address)
    if ray_started is None:
        return EXIT_FAILED
    try:
        return _run_matrix(args, executor, cast("BuildOptionsDict", options))  # Build's keywords, checked
    finally:
        if ray_started:  # the local instance this command started: shut down now, its helpers and folder with it
            from ..ray import end_local_ray

            end_local_ray()


def _connect_ray(address: str | None) -> bool | None:
    """Connect to Ray on the main thread (Ray sets its SIGTERM handler only there); True when this started a
    local instance (to shut down at the end), None (after saying why) when Ray cannot be reached.

    A Ctrl-C during the start ends what Ray started so far and exits at once (130), without the interpreter's
    exit: a KeyboardInterrupt inside ``ray.init`` left a half-connected core worker whose shutdown at exit
    crashed (a segfault, exit 139)."""
    from ..ray import ensure_ray

    ray_module = sys.modules.get("ray")
    if ray_module is not None and ray_module.is_initialized():  # a caller's own instance (main() from Python)
        return False
    local = not (address or os.environ.get("RAY_ADDRESS"))
    _stderr("trt-widget matrix: " + ("starting a local Ray instance" if local else "connecting to Ray") + " …")

    ending = threading.Lock()

    def interrupted() -> None:
        if ending.acquire(blocking=False):  # once, from whichever of the two hears it first
            _stderr("trt-widget: interrupted")
            _end_children()
            os._exit(EXIT_INTERRUPTED)

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        interrupted()

    # Python runs a handler only when the main thread is back in Python: ray.init can wait in C++ for a raylet the
    # same Ctrl-C ended (the whole foreground group gets it), so a thread hears the signal through the wakeup fd too
    previous = signal.signal(signal.SIGINT, on_sigint)
    listener = WakeupListener.start(interrupted, "trt-widget-ray-start-sigint")
    try:
        ensure_ray(address, None if not local else {"include_dashboard": False})  # lighter; no one views it
    except Exception as exc:  # BuildError (no Ray), Ray's own start-up and connection errors
        _stderr(f"trt-widget: error: Ray: {exc}")
        return None
    finally:
        signal.signal(signal.SIGINT, previous)
        if listener is not None:
            listener.close()  # the fd from before back, then ours closed: the listener's thread ends
    return local


def _end_children() -> None:
    """End this process's descendants (a half-started Ray's raylet, GCS, agents, workers): SIGTERM, then SIGKILL
    for any left after 1 s (a raylet's graceful end takes longer) or started meanwhile. Ray's parent-death signal
    alone kills only the direct children, which orphaned the raylet's agents."""
    import psutil

    def descendants() -> list[psutil.Process]:
        try:
            return list(psutil.Process().children(recursive=True))
        except psutil.Error:
            return []

    started = descendants()
    for process in started:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _gone, alive = psutil.wait_procs(started, timeout=1.0)
    for process in [*alive, *descendants()]:
        with contextlib.suppress(psutil.Error):
            process.kill()


def _run_matrix(args: argparse.Namespace, executor: Executor, options: BuildOptionsDict) -> int:
    """Build the matrix with the live table (or events) and Ctrl-C; the exit code."""
    from ._matrix import BuildMatrix

    variants: list[BuildOptionsDict] = [{"optimization_level": n} for n in args.opt_level] if args.opt_level else [{}]
    try:
        matrix = BuildMatrix(
            args.models,
            variants=variants,
            executor=executor,
            max_parallel=args.max_parallel,
            output_dir=args.output_dir,
            events=cast("TextIO", PipeStdout(sys.stdout)) if args.json else None,
            **options,
        )
    except (ValueError, TypeError) as exc:
        _stderr(f"trt-widget: error: {escape_controls(exc)}")
        return EXIT_USAGE
    except OSError as exc:
        _stderr(f"trt-widget: error: {escape_controls(exc)}")
        return EXIT_FAILED
    view: MatrixView | None = None if args.json else MatrixView(matrix, sys.stdout, plain=args.plain)
    notify = view.notice if view is not None else _stderr
    presses = [0]

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        presses[0] += 1
        if presses[0] == 1:
            matrix.stop(INTERRUPTED)
            notify("Stopping every build (Ctrl-C again to force)")
        elif presses[0] == 2:
            matrix.stop(INTERRUPTED)
            notify("Force stopping — terminating the builders")
        else:
            notify("Exiting without waiting for the builders.")
            os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        matrix.start()
        while not matrix.done():
            matrix.wait(0.1)
            if view is not None:
                view.update()
        if matrix.events is not None:
            matrix.events.join(30.0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if view is not None:
        view.finish()
    statuses = [b.status for b in matrix.builds]
    if presses[0]:
        return EXIT_INTERRUPTED
    if "failed" in statuses:
        return EXIT_FAILED
    return EXIT_BUDGET if "cancelled" in statuses else EXIT_OK


def _stderr(text: str) -> None:
    say(text, sys.stderr)


ECHO_MARGIN = 4  # columns the live table leaves free for a terminal's echo of Ctrl-C ("^C", twice)


def _name(text: str) -> Text:
    """An untrusted name as a table cell: escaped, plain (no markup), shortened with "…" rather than wrapped."""
    from rich.text import Text

    return Text(escape_controls(text), no_wrap=True, overflow="ellipsis")


class MatrixView:
    """The matrix on a text stream: a rich live table in a terminal, else a line per status change."""

    def __init__(self, matrix: BuildMatrix, stream: TextIO, *, plain: bool = False) -> None:
        from .._format import is_terminal
        from .._terminal import rich_available

        self.matrix = matrix
        self.stream = stream
        self.rich = not plain and is_terminal(stream) and rich_available()
        self._shown: dict[int, str] = {}
        self._live: Live | None = None
        # every drawing holds it: a print above the live table moves the cursor up by the table's height when last
        # drawn, so no redraw may come between that reckoning and the print's write (rich's own refresh thread,
        # holding only rich's locks, did: a Ctrl-C's notice left a stale frame line above it, issue 39)
        self._lock = threading.RLock()
        if self.rich:
            from rich.console import Console
            from rich.live import Live

            self.console = Console(file=stream, highlight=False)
            self.console.print(f"Build matrix: {len(matrix.cells)} builds, executor {matrix.executor}", style="bold")
            self._live = Live(
                console=self.console, get_renderable=self._live_table, auto_refresh=False, transient=False
            )
            self._live.start()
            from .._terminal import keep_redrawing

            keep_redrawing(lambda: self._live, self._lock, 0.125, "trt_widget-matrix-redraw")  # until finish()

    def notice(self, text: str) -> None:
        if self.rich:
            with self._lock:  # wrapped between words; a path longer than a line folds
                self.console.print(escape_lines(text), style="bold yellow", markup=False, overflow="fold")
        else:
            self._write(text)

    def update(self) -> None:
        """Plain mode: one line per build whose status changed since the last call."""
        if self.rich:
            return
        for cell in self.matrix.cells:
            status = cell.build.status
            if self._shown.get(cell.id) != status:
                self._shown[cell.id] = status
                self._write(f"#{cell.id} {cell.model} [{cell.variant}]: {self._outcome(cell, said_below=True)}")

    def finish(self) -> None:
        """The final table (rich) or the remaining status lines and the results table (plain)."""
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            from rich.text import Text

            live.update(self._table(), refresh=True)
            live.stop()
            for cell in self.matrix.cells:  # the table cuts a row's detail off: here in full, wrapped
                if cell.build.status in ("failed", "cancelled"):
                    line = f"#{cell.id} {cell.model} [{cell.variant}]: {self._outcome(cell)}"
                    self.console.print(Text(escape_lines(line)), overflow="fold")
            comparison = self._comparison(self.console.width)
            if comparison:
                self.console.print()
                self.console.print(Text(comparison), overflow="fold")  # lines fit: wrapped between words already
        else:
            self.update()
            self._write("")
            self._write(self.matrix.table_text())
            width = None
            with contextlib.suppress(AttributeError, ValueError, OSError):  # a terminal's width; else lines unwrapped
                if self.stream.isatty():
                    width = os.get_terminal_size(self.stream.fileno()).columns
            comparison = self._comparison(width)
            if comparison:
                self._write("")
                self._write(comparison)

    def _comparison(self, width: int | None) -> str:
        """What differs between the variants (the widget's Comparison), wrapped to ``width``; "" for a matrix of
        one build; where no build succeeded, that there is nothing to compare (failed, cancelled and never-started
        builds have no times to compare)."""
        from ._table import comparison_paragraphs, wrap_paragraphs

        if len(self.matrix.cells) < 2:
            return ""
        return wrap_paragraphs(comparison_paragraphs(self.matrix.cells), width)

    def _outcome(self, cell: Cell, *, said_below: bool = False) -> str:
        """What became of a build; ``said_below``: a failure's cause is left to the results table at the end."""
        from .._format import fmt_bytes, fmt_s
        from ._table import elapsed

        build = cell.build
        if said_below and build.status == "failed" and build.error is not None:
            return f"failed after {fmt_s(elapsed(build))} (the error is in the table at the end)"
        if build.status == "succeeded":
            where = f", written to {build.options.output}" if build.options.output else ""
            return f"succeeded in {fmt_s(elapsed(build))}, engine {fmt_bytes(build.engine_size or 0)}{where}"
        if build.status == "cancelled" and not build.started_building:  # no time: it never built
            return f"cancelled: {build.status_detail}"
        if build.status in ("failed", "cancelled"):
            return f"{build.status} after {fmt_s(elapsed(build))}: {build.status_detail}"
        return str(build.status)

    def _live_table(self) -> RenderableType:
        """The table while it is live: a few columns short of the terminal's width, so that the "^C" a terminal
        echoes after its last line stays on that line (at the full width it wrapped onto a new one, which the next
        redraw did not know of: a stale frame line was left above the Ctrl-C notice)."""
        from rich.constrain import Constrain

        return Constrain(self._table(), max(20, self.console.width - ECHO_MARGIN))

    def _table(self) -> Table:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        from .._format import fmt_bytes, fmt_s
        from .._terminal import BAR_STYLE
        from ._table import elapsed, short_variants

        # a narrow terminal shortens the names (…), never the numbers: only the name columns are collapsible
        # (their Text does not wrap); the bar and phase columns are there only while they have something to show
        builds = [cell.build for cell in self.matrix.cells]
        running = any(b.status in ("running", "cancelling") for b in builds)
        noted = running or any(b.status in ("failed", "cancelled") and b.status_detail for b in builds)
        table = Table(box=None, padding=(0, 1), show_edge=False)
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column(_name("model"))
        table.add_column(_name("variant"))  # what tells the variants apart: "opt=3", not "optimizat…" in each row
        variants = short_variants([cell.options for cell in self.matrix.cells])
        table.add_column("status", no_wrap=True)
        if noted:
            table.add_column(_name("current phase" if running else "detail"), max_width=40)
        if running:
            table.add_column("", max_width=16)  # a bar as wide as there is room for, 4 at least
        table.add_column("elapsed", justify="right", no_wrap=True)
        table.add_column("engine", justify="right", no_wrap=True)
        for cell, variant in zip(self.matrix.cells, variants, strict=True):
            build = cell.build
            phase = build.model.innermost_running() if build.status in ("running", "cancelling") else None
            bar: ProgressBar | str = ""
            if phase is not None and phase.num_steps > 1:
                bar = ProgressBar(  # not rich's pink-red: red is only for what failed
                    total=phase.num_steps,
                    completed=min(phase.step, phase.num_steps),
                    complete_style=BAR_STYLE,
                    finished_style=BAR_STYLE,
                )
            note = phase.name if phase else (build.status_detail if build.status in ("failed", "cancelled") else "")
            cells: list[RenderableType] = [  # names are untrusted: plain Text (no markup), control characters escaped
                str(cell.id),
                _name(cell.model),
                _name(variant),
                Text(build.status, style=COLORS.get(build.status, "")),
            ]
            if noted:
                cells.append(_name(note))
            if running:
                cells.append(bar)
            cells += [
                # a queued build's clock restarts when it builds: no time until then, none if it never built
                fmt_s(elapsed(build)) if build.started_building else "",
                fmt_bytes(build.engine_size) if build.engine_size else "",
            ]
            table.add_row(*cells)
        return table

    def _write(self, text: str) -> None:
        try:
            self.stream.write(fit_lines(escape_lines(text), self.stream) + "\n")  # between words in a terminal
            self.stream.flush()
        except (OSError, ValueError):
            pass
