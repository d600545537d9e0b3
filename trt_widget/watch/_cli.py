"""``trt-widget run [--json] [--plain] [--report F] [--trace F] [--force-after S] -- <command ...>``.

Runs a Python build command (``python build.py``, ``polygraphy convert ...``) with its TensorRT builds watched:
a live terminal tree per build on stdout, or ``--json`` events (each line with ``"build": n`` first, n counting
the builds of the run; the command's own stdout then goes to stderr, so stdout holds the events alone), Ctrl-C
cancels the running builds at their next step boundary, a second Ctrl-C (or ``--force-after S`` seconds after
the first) terminates the command. SIGTERM or SIGHUP (``timeout``, a closed
terminal) end the command too. Exit codes: 130 when Ctrl-C cancelled a build or the command was terminated,
128 + the signal when SIGTERM or SIGHUP ended the run, 1 when the command could not start or a --report / --trace
file could not be written, and the command's own exit code otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from .._format import escape_controls, escape_lines, fit_lines, plain_output_line

if TYPE_CHECKING:
    from rich.console import Console

    from .._build import Build
    from .._terminal import TerminalView
    from ._run import CommandRun

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130
SHOW_END_S = 4.0  # within the command's own wait for it (_child.SETTLE_S)
END_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="write the JSON events of every build to stdout, alone (the command's own stdout goes to stderr)",
    )
    parser.add_argument("--plain", action="store_true", help="plain lines even in a terminal")
    parser.add_argument("--report", metavar="F.html", help="write an HTML report per build (F, F-2, ...)")
    parser.add_argument("--trace", metavar="F.json", help="write a Chrome trace per build (F, F-2, ...)")
    parser.add_argument(
        "--force-after",
        type=float,
        metavar="S",
        help="terminate the command S seconds after the first Ctrl-C (default: at a second Ctrl-C)",
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="the command to run")


def numbered(path: str, index: int) -> str:
    """``F`` for the first build, ``F-2.html`` style for the later ones."""
    if index == 0:
        return path
    p = Path(path)
    return str(p.with_name(f"{p.stem}-{index + 1}{p.suffix}"))


def run(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("trt-widget run: error: give the command after --: trt-widget run -- python build.py", file=sys.stderr)
        return 2
    from .._files import check_writable
    from .._format import is_terminal
    from .._terminal import TerminalView, rich_available

    for flag, path in (("--report", args.report), ("--trace", args.trace)):
        try:  # before the command runs, as build's are (the numbered ones, F-2, ..., go in the same folder)
            if path is not None:
                check_writable(path, flag)
        except OSError as exc:
            print(f"trt-widget run: error: cannot write {escape_controls(exc)}", file=sys.stderr)  # one line
            return 1
    from ._run import CommandRun, signal_name
    from ._watch import INTERRUPTED

    lock = threading.RLock()  # every write to the terminal: ours, the command's lines, the live tree's redraws
    console = _console() if not args.json and not args.plain and is_terminal(sys.stdout) and rich_available() else None
    try:
        # with --json the command's own stdout comes through us onto stderr, byte for byte: stdout holds the events
        # alone (a file that view reads); under the live tree both its streams do, by whole lines, above the tree
        output: Callable[[bytes], None] | None = None
        errors: Callable[[bytes], None] | None = None
        stdout = _Stdout(lock)
        if args.json:
            output = stdout.aside
        elif console is not None:
            output = lambda line: _print_above(console, line, lock)  # noqa: E731
            errors = output if is_terminal(sys.stderr) else None
        command = CommandRun(
            argv, force_after=args.force_after, on_output=output, on_errors=errors, whole_lines=not args.json
        )
    except TypeError as exc:
        print(f"trt-widget run: error: {escape_controls(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # no private directory to be made (an unsafe TMPDIR, a full disk)
        print(f"trt-widget run: error: {escape_controls(exc)}", file=sys.stderr)  # one line, as above
        return 1
    views: list[TerminalView] = []

    def notify(text: str) -> None:
        with lock:
            if console is not None:  # above the live tree, on its own line
                console.print(  # wrapped between words; a path longer than a line folds
                    f"trt-widget run: {escape_lines(text)}", style="bold yellow", markup=False, overflow="fold"
                )
            else:  # on a line of its own, also where the command's stdout (on stderr, --json) stopped mid-line
                said = fit_lines(f"trt-widget run: {escape_lines(text)}", sys.stderr)  # between words in a terminal
                print(f"{stdout.break_line()}{said}", file=sys.stderr, flush=True)

    def on_build(build: Build) -> None:
        style = "plain" if args.plain else "auto"
        views.append(
            TerminalView(
                build, sys.stdout, style=style, hint="Ctrl-C to cancel", console=console, lock=lock if console else None
            )
        )

    def show_end(build: Build) -> None:  # the command goes on after a build once its final tree is drawn
        for view in list(views):
            if view.build is build:
                view.join(SHOW_END_S)

    if args.json:  # the events as the command sent them, renumbered for the run
        command.on_event = stdout.event
    else:
        command.on_build(on_build)
        command.show_end = show_end

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        command.stop(
            INTERRUPTED, said=notify, again="Ctrl-C again"
        )  # said before it acts: the builds' summaries come after it

    ended_by: list[int] = []

    def on_end(
        signum: int, frame: FrameType | None
    ) -> None:  # SIGTERM, SIGHUP (`timeout`, a closed terminal): the command too
        ended_by.append(signum)
        threading.Thread(target=command.terminate, args=(signum,), name="trt_widget-run-end", daemon=True).start()

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, on_sigint)}
    for sig in END_SIGNALS:
        previous[sig] = signal.signal(sig, on_end)
    try:
        command.start()
        try:
            while not command.done():
                threading.Event().wait(0.2)  # wakes so the signal handlers run
            code = command.result()
        except Exception as exc:  # the command could not start
            notify(str(exc))
            return EXIT_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if ended_by:
        notify(f"ended by {signal.Signals(ended_by[0]).name}: the command was ended too")
        return 128 + ended_by[0]
    if signal_name(code - 128) is not None:  # a signal ended it: say which, and who sent it (a code alone does not)
        notify(command.ended_words())
    for view in views:
        view.join(30.0)
    ok = _write_files(command, args, notify)
    interrupted = command.stops > 0 and (command.forced or any(b.status == "cancelled" for b in command.builds))
    if interrupted:
        return EXIT_INTERRUPTED
    return code if ok else EXIT_FAILED


def _console() -> Console:
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False)


def _print_above(console: Console, line: bytes, lock: threading.RLock) -> None:
    """One line of the command's output above the live tree (rich redraws the tree), as the widget shows it:
    whole, its colours dropped, tabs expanded, other control characters escaped."""
    from rich.text import Text

    text = plain_output_line(line)
    with lock:
        console.print(Text(text), soft_wrap=True)


class _Stdout:
    """Where ``--json`` writes: the events and the command's own lines. A full disk or a closed pipe is said once
    on stderr and later writes are skipped (the relay swallowed the error: every event was lost without a word,
    exit code 0)."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self.lost = False
        self.mid_line = False  # the command's output passed on last ended inside a line

    def event(self, event: dict[str, object]) -> None:
        self._write(lambda: sys.stdout.write(json.dumps(event) + "\n"))

    def aside(self, chunk: bytes) -> None:
        """The command's own stdout, as read: onto stderr unchanged, so that stdout holds the JSON events alone."""
        with self.lock, contextlib.suppress(OSError, ValueError):  # a closed stderr: the bytes are lost, not the run
            sys.stderr.flush()
            sys.stderr.buffer.write(chunk)
            sys.stderr.flush()
            self.mid_line = not chunk.endswith(b"\n")

    def break_line(self) -> str:
        """A newline where a notice of ours would otherwise start inside a line of the command's, else ""."""
        with self.lock:
            said, self.mid_line = self.mid_line, False
        return "\n" if said else ""

    def _write(self, write: Callable[[], object]) -> None:
        with self.lock:
            if self.lost:
                return
            try:
                sys.stdout.flush()
                write()
                sys.stdout.flush()
            except (OSError, ValueError) as exc:  # ValueError: stdout closed
                self.lost = True
                with contextlib.suppress(OSError, ValueError):
                    print(
                        f"trt-widget run: warning: cannot write to stdout ({escape_controls(str(exc))}): the JSON "
                        "events are lost from here on",
                        file=sys.stderr,
                        flush=True,
                    )


def _write_files(command: CommandRun, args: argparse.Namespace, notify: Callable[[str], None]) -> bool:
    ok = True
    for i, build in enumerate(command.builds):
        build.wait(10.0)
        for flag, path, method in (("--report", args.report, "to_html"), ("--trace", args.trace, "to_trace")):
            if path is None:
                continue
            target = numbered(path, i)
            try:
                getattr(build, method)(target)
            except (OSError, ValueError) as exc:
                notify(f"cannot write the {flag} file {target}: {exc}")
                ok = False
            else:
                notify(f"{'Report' if flag == '--report' else 'Trace'} written to {target}")
    return ok
