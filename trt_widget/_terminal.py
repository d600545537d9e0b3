"""The terminal front end: a live nested phase tree (rich, in a TTY) or plain lines (pipes, CI logs).

Both read the build's event stream (``_events``) on its writer thread, so the builder never waits for the
terminal; the rich tree also reads ``build.model.rows()`` at ~10 Hz. rich is optional: without it (or when
the stream is not a terminal) the output is plain lines with no ANSI escape codes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, TextIO

from ._events import attach_events
from ._expected import expected_reason, held_back, parse_row
from ._format import escape_controls, escape_lines, fit_lines, fmt_bytes, fmt_s, is_terminal, terminal_width
from ._grouping import sibling_runs
from ._snapshot import engine_change
from ._status import CANCELLED, CANCELLING, FAILED, IDLE, RUNNING, SUCCEEDED
from ._verbose import describe
from .engine import delta_text

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.progress_bar import ProgressBar

    from ._build import Build
    from ._events import BuildStartEvent, Event, LogEvent
    from ._phases import PhaseRow

BAR_STYLE = "blue"  # a running phase's bar, as the widget's
DELTA_HEAD = "Δ last build"  # the Δ column's header (the widget's tree says the same)
MARKS = {
    "running": ("▸", "yellow"),
    "done": ("✓", "green"),
    "finished-early": ("✓", "green"),
    "cancelled": ("✗", "yellow"),  # the user's cancel: not a failure
    "failed": ("✗", "red"),  # the build failed while it ran
}


def render_in_terminal(
    build: Build, stream: TextIO | None = None, *, follow: bool = False, style: str = "auto", summary: bool = True
) -> TerminalView:
    """Show ``build``'s phases on ``stream`` (default ``sys.stderr``) as they happen.

    Returns at once (rendering runs on a background thread) unless ``follow=True``, which blocks until the
    build ended and the summary is printed; Ctrl-C while following cancels the build gracefully (see
    :class:`Interrupts`). ``style``: "auto" (rich tree in a terminal, else plain lines), "rich" or "plain".
    """
    view = TerminalView(
        build,
        stream if stream is not None else sys.stderr,
        style=style,
        summary=summary,
        hint="Ctrl-C to cancel" if follow else "",
    )
    if follow:
        view.follow()
    return view


def rich_available() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


class TerminalView:
    """Renders one build on one text stream; all writes go through one lock, in event order."""

    def __init__(
        self,
        build: Build,
        stream: TextIO,
        *,
        style: str = "auto",
        summary: bool = True,
        hint: str = "",
        console: Console | None = None,
        lock: threading.RLock | None = None,
    ) -> None:
        """``console``: a rich Console to draw on, shared with whoever prints other lines above the live tree
        (``trt-widget run`` prints its command's output through it); ``lock``: the lock those prints hold, which
        every drawing of the tree then holds too. Without one the view has its own: rich's own refresh thread is
        never used, as it would redraw the tree between a print's cursor move and its write (issue 37)."""
        if style not in ("auto", "rich", "plain"):
            raise ValueError(f"style must be 'auto', 'rich' or 'plain', got {style!r}")
        self.build = build
        self.stream = stream
        self.summary = summary
        self.hint = hint
        self.rich = style == "rich" or (style == "auto" and is_terminal(stream) and rich_available())
        # re-entrant: a SIGINT handler (on the main thread) may print a notice while the main thread draws
        self._lock = lock if lock is not None else threading.RLock()
        self._depth: dict[int, int] = {}
        self._console: Console | None = None
        self._live: Live | None = None
        self._backend = ""  # from the build_start event
        # the parser's errors, held while the model is parsed: a failed parse's message explains them (issue 39)
        self._parsing: set[int] = set()
        self._held: list[LogEvent] = []
        self._left = False  # leave(): nothing more is drawn
        self._drawing = 0  # prints of notice() / abandon() under way on the thread holding the lock
        if self.rich:
            from rich.console import Console

            self._console = console if console is not None else Console(file=stream, highlight=False)
        self.events = attach_events(build, self._on_event)

    # -- public ---------------------------------------------------------------------------------------
    def notice(self, text: str) -> None:
        """Print a message line (above the live tree in rich mode)."""
        with self._lock:
            self._drawing += 1
            try:
                if self._console is not None:
                    # wrapped between words (the terminal's own wrap breaks words); a path longer than a line folds
                    self._console.print(escape_lines(text), style="bold yellow", markup=False, overflow="fold")
                else:
                    self._write(text)
            finally:
                self._drawing -= 1

    def abandon(self, text: str) -> None:
        """The process stops waiting for an unfinished build (a third Ctrl-C): the live tree is drawn a last time
        and left, and ``text`` is said below it on a line of its own, the outcome the screen ends with."""
        with self._lock:
            if self._drawing and self._console is not None:
                # a SIGINT handler interrupted this thread's own print: rich holds its output (and any print of
                # ours now) until that print ends, which a process exiting next never reaches; said directly
                if self._live is not None and self._console.is_terminal:
                    with contextlib.suppress(OSError, ValueError):  # the cursor the live tree hid (as stop() shows it)
                        self._console.file.write("\x1b[?25h")
                self._write("\n" + text, self._console.file)
                return
            self._drawing += 1
            try:
                if self._live is not None:
                    self._live.update(self._renderable(), refresh=True)
                    self._live.stop()
                    self._live = None
            finally:
                self._drawing -= 1
            self.notice(text)

    def leave(self, text: str) -> None:
        """Stop drawing before the build ended (a wait at an interpreter's prompt returned early): the tree as it is,
        ``text`` below it, and nothing more from this view, so the prompt is the user's again."""
        with self._lock:
            self.abandon(text)
            self._left = True

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the build ended and its final tree and summary are printed; True if they were."""
        return self.events.join(timeout)

    def follow(self) -> None:
        """Block until done; Ctrl-C cancels gracefully, and a third one stops waiting (re-raises)."""
        interrupts = Interrupts(self.build, self.notice)
        while True:
            try:
                if self.build.status == IDLE and not self.build.done():
                    self.events.join(0.1)
                    continue
                if self.join(0.1):
                    return
            except KeyboardInterrupt:
                if not interrupts():
                    raise

    # -- events (on the event stream's writer thread) ---------------------------------------------------
    def _on_event(self, event: Event) -> None:
        with self._lock:
            if self._left:
                return
            if event["event"] == "build_start":
                self._started(event)
            elif event["event"] == "phase_start":
                self._depth[event["id"]] = event["depth"]
                if parse_row(event["name"], event["parent"]):
                    self._parsing.add(event["id"])
                if not self.rich:
                    steps = f" ({event['num_steps']} steps)" if event["num_steps"] > 1 else ""
                    self._line(event["t"], event["depth"], f"{escape_controls(event['name'])}{steps}")
            elif event["event"] == "phase_finish":
                if event["id"] in self._parsing:
                    self._parsing.discard(event["id"])
                    if event["status"] != "failed":  # parsed after all: its errors are news
                        self._release_held()
                if not self.rich:
                    # a phase TensorRT closed before its announced last step is done (the event keeps the word)
                    status = "" if event["status"] in ("done", "finished-early") else f" [{event['status']}]"
                    self._line(
                        event["t"],
                        self._depth.get(event["id"], 0),
                        f"{escape_controls(event['name'])}: {fmt_s(event['duration_s'])}{status}",
                    )
            elif event["event"] == "log":
                parse = "running" if self._parsing else None
                if held_back(event["severity"], parse, verbose=self.build.options.verbose):
                    self._held.append(event)  # the rule every front end applies (_expected.held_back)
                    return
                self._log(event)
            elif event["event"] == "build_end":
                if self.build.status != FAILED:
                    self._release_held()  # else the failure's message says them; the build's log keeps them
                self._ended()

    def _release_held(self) -> None:
        """Print the parser's held errors after all (the parse succeeded, or the build did not fail there)."""
        held, self._held = self._held, []
        for event in held:
            self._log(event)

    def _log(self, event: LogEvent) -> None:
        """A TensorRT log line: expected ones calmly, with what they mean; errors in red."""
        text = f"{escape_controls(event['severity'])}: {escape_controls(event['message'])}"
        cancelled = self.build.status in (CANCELLING, CANCELLED)
        reason = expected_reason(event["message"], cancelled=cancelled, backend=self._backend)
        if reason is not None:  # true but expected: said calmly, with what it means
            text = f"expected: {escape_controls(event['message'])} ({reason})"
        if self._console is not None:
            style = "dim" if reason else "red" if "ERROR" in event["severity"] else "yellow"
            self._console.print(escape_controls(text), style=style, markup=False)
        else:
            self._line(event["t"], 0, text)

    def _started(self, event: BuildStartEvent) -> None:
        self._backend = str(event["backend"])
        title = escape_controls(f"Building {event['model']} with {event['backend']} {event['version']}")
        if self._console is None:
            self._write(title)
            return
        from rich.live import Live

        self._console.print(escape_controls(title), style="bold", markup=False)
        live = Live(
            console=self._console,
            get_renderable=self._renderable,
            auto_refresh=False,  # redrawn by _redraw, under the lock every print holds
            refresh_per_second=10,
            redirect_stdout=False,
            redirect_stderr=False,
            transient=False,
        )
        try:
            live.start()
        except Exception:  # rich draws one live display per console: another build's tree is up; say when it ends
            self._console.print("(its tree is shown when it ends)", style="dim", markup=False)
            return
        self._live = live
        keep_redrawing(lambda: self._live, self._lock, 0.1, "trt_widget-terminal-redraw")

    def _ended(self) -> None:
        if self._live is not None:
            self._live.update(self._renderable(), refresh=True)
            self._live.stop()
            self._live = None
        elif self._console is not None:  # a build whose tree could not be live (another one was): its final tree
            self._console.print(self._renderable())
        if self.summary:
            if self._console is not None:
                self._console.print(rich_summary(self.build))
            else:
                self._write("\n".join(plain_summary(self.build, terminal_width(self.stream))))

    def _line(self, t: float, depth: int, text: str) -> None:
        self._write(f"[{t:7.2f}s] {'  ' * depth}{text}")

    def _write(self, text: str, stream: IO[str] | None = None) -> None:
        try:
            out = stream if stream is not None else self.stream
            out.write(fit_lines(escape_lines(text), out) + "\n")  # wrapped between words in a terminal
            out.flush()
        except (OSError, ValueError):
            pass

    # -- the rich tree -------------------------------------------------------------------------------
    def _renderable(self) -> RenderableType:
        try:
            return self._tree()
        except Exception as exc:  # rich's refresh thread must keep running
            from rich.text import Text

            return Text(escape_controls(f"(cannot draw the phase tree: {exc!r})"))

    def _tree(self) -> RenderableType:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        build = self.build
        rows = build.model.rows()
        now = build.elapsed_s
        deltas = build.history.deltas() if build.history is not None else None  # None: no past build matched
        lines = list(tree_lines(rows, now))
        changes: list[str] = []
        for _depth, group, _count in lines:
            found = [deltas[str(r["id"])] for r in group if str(r["id"]) in deltas] if deltas is not None else []
            ended = all(r["end_s"] is not None for r in group)
            duration = sum(r["duration_s"] or 0.0 for r in group)
            changes.append(phase_delta(sum(found), duration) if found and ended else "")
        shown = any(changes)  # a Δ column (and its header) only where a row has a Δ: not over a reused engine's row
        # a header only to label the Δ column, as the widget's tree does ("Δ last build")
        table = (
            Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False) if shown else Table.grid(padding=(0, 1))
        )
        # a narrow terminal shortens the names (…), never the numbers: only the name column is collapsible (its
        # Text does not wrap), the others keep their whole width
        table.add_column(max_width=60)
        # a narrow terminal gives the names the room of half the bar (at 60 columns they were cut to 10 characters)
        bar_width = 20 if self._console is None or self._console.width >= 100 else 10
        table.add_column(width=bar_width if any(r["end_s"] is None for r in rows) else None, no_wrap=True)  # bars
        table.add_column(justify="right", no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        if shown:  # Δ: slower (+) or faster (−) than the past build
            table.add_column(Text(DELTA_HEAD, style="dim"), justify="right", no_wrap=True)
        for (depth, group, count), change in zip(lines, changes, strict=True):
            row = group[-1]
            running = [r for r in group if r["end_s"] is None]
            if running:
                row = running[-1]
            status = "running" if running else row["status"]
            mark, color = MARKS.get(status, ("·", "white"))
            label = Text("  " * depth, no_wrap=True, overflow="ellipsis")
            label.append(f"{mark} ", style=color)
            label.append(escape_controls(row["name"]), style="bold" if running else "")
            if count > 1:
                label.append(f" ×{count}", style="cyan")
            duration = now - row["start_s"] if running else sum(r["duration_s"] or 0.0 for r in group)
            bar: ProgressBar | str = ""
            if running and row["num_steps"] > 1:
                bar = ProgressBar(
                    total=row["num_steps"],
                    completed=min(row["step"], row["num_steps"]),
                    width=bar_width,
                    complete_style=BAR_STYLE,  # rich's default is a pink-red: red is only for what failed
                    finished_style=BAR_STYLE,
                )
            # a closed phase TensorRT ended before its announced last step is done: "5/6" would read as a gap
            early = not running and row["status"] == "finished-early"
            steps = f"{row['step']}/{row['num_steps']}" if row["num_steps"] > 1 and not early else ""
            cells = [label, bar, Text(steps, style="dim"), Text(fmt_s(duration))]
            if shown:  # slower than last time is no failure: amber, as the widget's; red is for what failed
                cells.append(Text(change, style="yellow" if change.startswith("+") else "green"))
            table.add_row(*cells)
        if build.done():
            return table
        footer = Text(escape_controls(self._footer(now)), style="dim" if build.status == RUNNING else "bold yellow")
        return Group(table, footer)

    def _footer(self, now: float) -> str:
        build = self.build
        if build.status == CANCELLING:
            phase = build.cancel_info["phase"] if build.cancel_info is not None else ""
            return f"Cancelling — waiting for the builder to finish the current step of {phase or 'the build'}"
        hint = f" — {self.hint}" if self.hint and build.status == RUNNING else ""
        timing = describe(build.logger.tactics.snapshot(), now) if build.status == RUNNING else ""
        eta = eta_text(build.history.eta() if build.history is not None else None, now)
        return f"{build.status} {fmt_s(now)}{f' · {eta}' if eta else ''}{f' · now {timing}' if timing else ''}{hint}"


def eta_text(eta: Mapping[str, object] | None, now: float) -> str:
    """The widget's ETA words for the terminal's status line: "ETA ~12 s (based on …)" from the history's
    match, "over ETA of ~…" past it, "no ETA: first build" (the reason in a word) without one; "" while unknown."""
    if not eta:
        return ""
    total, based, none = eta.get("total_s"), eta.get("based_on"), eta.get("none")
    if isinstance(total, (int, float)):
        said = f" (based on {based})" if isinstance(based, str) and based else ""
        left = total - now
        return f"ETA ~{fmt_s(left)}{said}" if left > 0 else f"over ETA of ~{fmt_s(total)}{said}"
    return f"no ETA: {none}" if isinstance(none, str) and none else ""


def phase_delta(delta: float, duration: float) -> str:
    """A finished phase's change against the past build, as the widget's Δ ("+1.2 s", "−340 ms"): "" where it
    is below 0.1 s or 5% of the past time (noise on a loaded machine)."""
    size = abs(delta)
    if not (size >= 0.1 and size >= 0.05 * max(0.0, duration - delta)):
        return ""
    return ("+" if delta > 0 else "−") + fmt_s(size)


class Interrupts:
    """What repeated Ctrl-C presses do to a build: cancel, then force (process isolation) or say it waits.

    Call it once per Ctrl-C; it returns False when the caller should stop waiting (a third Ctrl-C on a
    thread-isolated build, whose current TensorRT step cannot be interrupted).
    """

    def __init__(self, build: Build, notify: Callable[[str], None]) -> None:
        self.build = build
        self.notify = notify
        self.count = 0

    def __call__(self) -> bool:
        build = self.build
        if build.done() or build.status == IDLE:
            return False
        self.count += 1
        if self.count == 1:
            build.stop("interrupted (Ctrl-C)")
            self.notify(
                f"Cancelling — waiting for the builder to finish the current step of {self._phase()} "
                "(Ctrl-C again to force)"
                if build.options.isolation == "process"
                else f"Cancelling — waiting for the builder to finish the current step of {self._phase()}: a "
                "build on a thread cannot be interrupted mid-step, it stops when the step ends (Ctrl-C twice more "
                "exits without waiting; --isolation process, the default, can be force-stopped)"
            )
            return True
        if build.options.isolation == "process":
            build.stop("interrupted (Ctrl-C twice)")
            self.notify("Force stopping — terminating the build process")
            return True
        if self.count == 2:
            self.notify(
                f"Still waiting for the builder to finish the current step of {self._phase()}: a "
                "TensorRT step on a thread cannot be interrupted (the default --isolation process allows "
                "a forced stop). Ctrl-C once more to exit without waiting."
            )
            return True
        return False

    def _phase(self) -> str:
        info = self.build.cancel_info
        return (info["phase"] if info is not None else "") or "the build"


def tree_lines(rows: Sequence[PhaseRow], total_s: float) -> list[tuple[int, list[PhaseRow], int]]:
    """(depth, instances, count) per displayed line: runs of same-named siblings grouped by the rule every live
    front end shares (:mod:`trt_widget._grouping`); running phases and finished ones that took at least 5% of
    ``total_s`` are expanded, the rest collapsed."""
    children: dict[int | None, list[PhaseRow]] = {}  # parent id (None for the top) -> its children
    for row in rows:
        if row:
            children.setdefault(row["parent"], []).append(row)
    lines: list[tuple[int, list[PhaseRow], int]] = []

    def add(parent: int | None, depth: int) -> None:
        for group in sibling_runs(children.get(parent, [])):
            lines.append((depth, group, len(group)))
            running = [r for r in group if r["end_s"] is None]
            if running:
                add(running[-1]["id"], depth + 1)
            elif len(group) == 1 and (depth == 0 or (group[0]["duration_s"] or 0.0) >= 0.05 * total_s):
                add(group[0]["id"], depth + 1)

    add(None, 0)
    return lines


def summary_rows(build: Build) -> list[tuple[int, str, int, float]]:
    """(depth, name, count, seconds) for top-level phases and their children, grouped by name."""
    rows = build.timings()
    out: list[tuple[int, str, int, float]] = []
    for depth, group, count in tree_lines(rows, float("inf")):
        if depth <= 1:
            out.append((depth, group[0]["name"], count, sum(r["duration_s"] or 0.0 for r in group)))
    return out  # the time outside TensorRT's phases is in phases of its own (see PhaseModel.framing)


def slowest_leaf(build: Build) -> PhaseRow | None:
    """The innermost phase instance that took longest (what a user would look at first)."""
    rows = build.timings()
    parents = {r["parent"] for r in rows}
    leaves = [r for r in rows if r["id"] not in parents and r["duration_s"] is not None]
    return max(leaves, key=lambda r: r["duration_s"] or 0.0, default=None)


def keep_redrawing(live: Callable[[], Live | None], lock: threading.RLock, interval: float, name: str) -> None:
    """Redraw ``live()`` every ``interval`` s under ``lock`` (a daemon thread), until it is None: a print above a
    live display moves the cursor up by its height when last drawn, so no redraw may come between that move's
    reckoning and the print's write (rich's own refresh thread, holding only rich's locks, did)."""

    def redraw() -> None:
        while True:
            time.sleep(interval)
            with lock:
                current = live()
                if current is None:
                    return
                try:
                    current.refresh()
                except Exception:  # a closed stream: nothing more to draw on
                    return

    threading.Thread(target=redraw, name=name, daemon=True).start()


def outcome(build: Build) -> str:
    """One line: status, time, and the engine (size and path) or the reason."""
    elapsed = fmt_s(build.elapsed_s)
    if build.status == SUCCEEDED:
        if build.source.kind == "recording":
            size = fmt_bytes(build.engine_size) if build.engine_size is not None else "of unknown size"
            return f"Replayed a build that succeeded in {elapsed}: its engine was {size} (a recording holds no engine)"
        where = f" written to {build.options.output}" if build.options.output else ""  # a script may save() next
        size = fmt_bytes(build.engine_size) if build.engine_size is not None else "of unknown size"  # watched builds
        reused = build.reused_from  # reuse=True found it: where from (no TensorRT ran)
        if reused is not None:
            where += " (reused in place)" if reused == build.options.output else f", reused from {reused}"
        return f"Succeeded in {elapsed}: engine {size}{where}"
    if build.status == CANCELLED:
        phase = build.cancel_info["phase"] if build.cancel_info is not None else ""
        if not phase:
            return f"Cancelled after {elapsed}: {build.status_detail}"
        # TensorRT heard the stop at that phase's last step: the tree shows it done ("during" read as a contradiction)
        ended = [r["status"] for r in build.model.rows() if r and r["name"] == phase]
        when = "at the end of" if ended and ended[-1] in ("done", "finished-early") else "during"
        return f"Cancelled after {elapsed}: {build.status_detail} ({when} {phase})"
    return f"Failed after {elapsed}: {build.status_detail}"


def _summed(build: Build) -> bool:
    """Whether a summary helps: TensorRT ran phases of its own (nested ones), not only the time before or after."""
    return any(r["depth"] > 0 for r in build.model.rows())


def plain_summary(build: Build, width: int | None = None) -> list[str]:
    """The summary as plain lines; ``width``: a terminal's, which the table's rows fit (names shortened)."""
    if not _summed(build):
        return [escape_controls(outcome(build))]
    rows = summary_rows(build)
    lines = ["", "Summary"] if rows else []
    elapsed = build.elapsed_s or 0.0
    names = 56 if width is None else max(16, min(56, width - 18))  # 18: the indent, time and share columns
    for depth, name, count, seconds in rows:
        label = ("  " * depth + escape_controls(name) + (f" x{count}" if count > 1 else ""))[:names]
        share = f"{100 * seconds / elapsed:3.0f}%" if elapsed > 0 else ""
        lines.append(f"  {label:<{names}} {fmt_s(seconds):>9} {share:>5}")
    leaf = slowest_leaf(build)
    if leaf is not None:
        lines.append(f"  slowest innermost phase: {escape_controls(leaf['name'])} ({fmt_s(leaf['duration_s'])})")
    lines += engine_lines(build)
    lines.append(escape_controls(outcome(build)))  # a recording's error text is outside text: one line
    return lines


def engine_lines(build: Build) -> list[str]:
    """The engine report's summary (escaped) of a succeeded build, "" lines where it has none."""
    report = build.engine_report if build.status == SUCCEEDED else None
    if report is None:
        return []
    lines: list[str] = report.summary().split("\n")
    change = engine_change(build)
    if change is not None:
        delta, basis = change
        lines.append(f"  {delta_text(delta)}" + (f" (against the {escape_controls(basis)})" if basis else ""))
    return lines


def rich_summary(build: Build) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    color = {SUCCEEDED: "green", CANCELLED: "yellow"}.get(build.status, "red")
    if not _summed(build):
        return Text(escape_controls(outcome(build)), style=f"bold {color}")
    table = Table(title="Summary", title_justify="left", show_edge=False, box=None, padding=(0, 2))
    table.add_column("phase")  # collapsible: a narrow terminal shortens the names (…), the numbers stay whole
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("share", justify="right", no_wrap=True)
    elapsed = build.elapsed_s or 0.0
    for depth, name, count, seconds in summary_rows(build):
        share = f"{100 * seconds / elapsed:.0f}%" if elapsed > 0 else ""
        label = Text("  " * depth + escape_controls(name), no_wrap=True, overflow="ellipsis")
        table.add_row(label, str(count), fmt_s(seconds), share)
    parts: list[RenderableType] = [Text(""), table] if table.row_count else []
    leaf = slowest_leaf(build)
    if leaf is not None:
        slowest = f"slowest innermost phase: {escape_controls(leaf['name'])} ({fmt_s(leaf['duration_s'])})"
        parts.append(Text(slowest, style="dim"))
    for line in engine_lines(build):  # a line that wraps keeps its indent
        text = line.lstrip(" ")
        indent = len(line) - len(text)
        parts.append(Padding(Text(text), (0, 0, 0, indent), expand=False) if indent else Text(text))
    parts.append(Text(escape_controls(outcome(build)), style=f"bold {color}"))
    return Group(*parts)
