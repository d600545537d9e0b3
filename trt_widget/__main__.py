"""``trt-widget`` / ``python -m trt_widget``: build an engine in a terminal with live, cancelable progress.

  trt-widget build model.onnx [-o model.engine] [--budget S] [--json] [--plain] [--timing-cache F] [--fp16]
                              [--opt-level N] [--workspace SIZE] [--isolation process|thread] [--verbose]
                              [--shapes input:1x3x224x224 | --min-shapes ... --opt-shapes ... --max-shapes ...]
                              [--report build.html] [--trace build.json]   # every build option: docs/options.md
  trt-widget demo [--blocks N] [same options]    # builds a generated deep residual model
  trt-widget view build.jsonl [--speed X] [--build N] [--report F] [--trace F]   # replays a recording
  trt-widget trtexec --onnx=m.onnx --saveEngine=m.engine [trtexec's build arguments]   # see _trtexec.py
  trt-widget inspect FILE [--json]               # an engine's layers, precisions, tactics (a log, JSON, recording)
  trt-widget check ENGINE [--json]               # does this engine load here? (from its manifest)
  trt-widget bundle MODEL -o report.zip [--include-model] [--redact] [build options]   # a bug-report zip
  trt-widget serve [--host H] [--port P] [--token T | --token-file F] [--data DIR] ...   # a build service
  trt-widget matrix a.onnx [b.onnx ...] --opt-level 0 3 5 [--executor ray] [--json]   # see matrix/_cli.py
  trt-widget mcp [--http] [--port P] [--token-file F]   # builds as MCP tools for agents (docs/agents.md)
  trt-widget lsp                                        # a language server for editors (docs/agents.md)
  trt-widget run [--json] [--report F] [--trace F] [--force-after S] -- COMMAND ...   # see watch/_cli.py

Exit codes: 0 succeeded, 1 failed (or bad input such as a missing file, or a --report / --trace file that could
not be written), 2 bad usage, 124 cancelled because the --budget ran out, 130 cancelled by Ctrl-C, 141 stdout's
reader went away (``| head``). Ctrl-C cancels at the builder's next step boundary, and the builder process is
terminated when that takes more than 0.1 s; a second Ctrl-C terminates it at once (with --isolation thread a
third one exits without waiting).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import re
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from importlib import import_module
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar, cast, overload

from ._files import BadModelPath, expand_user, model_file

if TYPE_CHECKING:
    from ._build import Build
    from ._engine import ModelLike
    from ._events import EventStream

N = TypeVar("N")
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 124, 130
EXIT_PIPE = 141  # stdout's reader went away (128 + SIGPIPE, as a shell tool killed by it): `... | head`


class _InputError(Exception):
    """Bad input (exit 1 with a one-line message)."""


class _UsageError(Exception):
    """A bad option value (exit 2 with a one-line message)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "unrecognized arguments" error is the command's own and names its closest options
    (``--opt-levle`` and ``--opt_level``: did you mean ``--opt-level``?)."""

    @functools.cached_property
    def commands(self) -> dict[str, argparse.ArgumentParser]:
        """The top parser's commands, by name (filled as they are added)."""
        return {}

    @overload  # argparse's own overloads
    def parse_args(self, args: Iterable[str] | None = None, namespace: None = None) -> argparse.Namespace: ...

    @overload
    def parse_args(self, args: Iterable[str] | None, namespace: N) -> N: ...

    @overload
    def parse_args(self, *, namespace: N) -> N: ...

    def parse_args(self, args: Iterable[str] | None = None, namespace: N | None = None) -> N | argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            target = self.commands.get(getattr(parsed, "command", None) or "", self)
            options = [o for o in target._option_string_actions if o.startswith("--")]  # argparse has no public list
            hints = []
            for name in (extra.split("=", 1)[0] for extra in extras if extra.startswith("--")):
                close = get_close_matches(name.replace("_", "-"), options, n=1, cutoff=0.7)
                if name in options:  # given after "--", which ends the options
                    hints.append(f"{name}: options go before --")
                elif close:
                    hints.append(f"{name}: did you mean {close[0]}?")
            from ._format import escape_controls  # what was typed is echoed; a script may pass untrusted names

            said = f"unrecognized arguments: {' '.join(extras)}" + (f" ({'; '.join(hints)})" if hints else "")
            target.error(escape_controls(said))
        return parsed

    def error(self, message: str) -> NoReturn:
        """argparse's error, with the closest command for a mistyped one (``biuld``: did you mean build?)."""
        from ._format import escape_controls

        typed = re.search(r"invalid choice: '(.*?)' \(choose from", message)
        if typed and self.commands:
            close = get_close_matches(typed.group(1), COMMAND_NAMES, n=1, cutoff=0.6)
            message = f"unknown command {typed.group(1)!r}; " + (
                f"did you mean {close[0]}?" if close else choose_a_command()
            )
        super().error(escape_controls(message))


def _build_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX file")


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--blocks",
        type=int,
        default=600,
        metavar="N",
        help="residual blocks, 1 to 20,000: build time grows with N (default 600)",
    )


def _view_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", help="JSON-lines file written by --json or events=")
    parser.add_argument(
        "--speed", type=float, metavar="X", help="replay at the recorded pace times X, 0.001 to 1e6 (default: at once)"
    )
    parser.add_argument("--plain", action="store_true", help="plain lines even in a terminal")
    parser.add_argument(
        "--build",
        type=int,
        metavar="N",
        help="replay build N (from 1) of a recording that holds several (default: all)",
    )
    for flag in ("--report", "--trace"):
        parser.add_argument(flag, metavar="F", help=f"write the replayed build's {flag[2:]} file")


@dataclass(frozen=True)
class Command:
    """One ``trt-widget`` command: the one table below gives the usage line, the "did you mean" list, the
    "choose a command" list and the dispatch."""

    name: str
    help: str
    description: str
    # its own arguments: a function, or "module:function" imported only when this command is parsed (serve, matrix,
    # mcp and run import TensorRT and more: ``build`` need not wait for that)
    arguments: Callable[[argparse.ArgumentParser], None] | str | None
    run: str  # "module:function" taking the parsed arguments, returning the exit code ("": this module's own)
    build_options: bool = False  # takes every build option, --json, --plain, --report, --trace
    epilog: str | None = None


def _shapes_epilog() -> str:
    from ._cli_options import SHAPES_EPILOG

    return SHAPES_EPILOG


COMMANDS = (
    Command(
        "build",
        "build an engine from an ONNX file",
        "Build an engine from an ONNX file (default output: MODEL with the suffix .engine).",
        _build_arguments,
        "",
        build_options=True,
        epilog="shapes",
    ),
    Command(
        "demo",
        "build a generated model to see the progress",
        "Generate a deep residual ONNX model and build it (no engine is written unless -o is given).",
        _demo_arguments,
        "",
        build_options=True,
    ),
    Command(
        "view",
        "replay a recorded build (--json / events=) as a tree",
        "Replay a build recorded with --json or events= (e.g. on a GPU server) in this terminal, and optionally "
        "write its report or trace.",
        _view_arguments,
        "",
    ),
    Command(
        "serve",
        "run a build service: upload, progress as Server-Sent Events, cancel, engines (HTTP)",
        'Run a build service over HTTP (see docs/serve.md for the endpoints). Needs pip install "trt_widget[serve]".',
        ".serve:add_arguments",
        ".serve:run",
    ),
    Command(
        "matrix",
        "one build per (model, --opt-level): a live table, or --json events with the build id",
        "Build every MODEL with every --opt-level, locally (--max-parallel at a time, default 1) or on Ray "
        "(--executor ray). Engines are written only with -o DIR.",
        ".matrix:add_arguments",
        ".matrix:run",
    ),
    Command(
        "inspect",
        "show what an engine holds: layers, precisions, tactics, fusions, memory (a log, JSON or recording)",
        "The engine report of a TensorRT log (a verbose build, trtexec --dumpLayerInfo), a trtexec "
        "--exportLayerInfo JSON, or a trt_widget recording (--json / events=); for an engine trt_widget wrote, what "
        "its manifest records (not deserialized: that needs the GPU it was built for).",
        ".engine:cli_arguments",
        ".provenance:inspect_run",
    ),
    Command(
        "check",
        "say whether an engine loads on this machine (its TensorRT and GPU), from its manifest",
        "Read the manifest beside ENGINE (written with every engine trt_widget writes) and say in one line whether "
        "this machine's TensorRT and GPU can load it, and if not why: another backend, TensorRT version, compute "
        "capability (docs/manifest.md). Exit code 0 when it loads, 1 otherwise.",
        ".provenance:check_arguments",
        ".provenance:check_run",
    ),
    Command(
        "bundle",
        "build (or pack a recording) and write a bug-report zip: log, events, options, manifest, versions, GPU",
        "Build MODEL (or pack a recording: no build runs) and write one zip with the full log, the events, the "
        "options, the manifest, the engine report, versions (Python, TensorRT, trt_widget, driver), the GPU and a "
        "README.txt listing them. No model or engine unless --include-model; --redact replaces your folders. -o "
        "names the zip.",
        "._bundle_cli:bundle_arguments",
        "._bundle_cli:bundle_run",
    ),
    Command(
        "trtexec",
        "build from trtexec's arguments as written: trt-widget trtexec --onnx=m.onnx --saveEngine=m.engine ...",
        "Build with trtexec's build arguments as written (--onnx=, --saveEngine=, --shapes=, --minShapes=, --fp16, "
        "--memPoolSize=workspace:1024M, --timingCacheFile=, --tacticSources=, ...), with the live tree and Ctrl-C. "
        "Inference-only arguments are ignored and said so; arguments trt-widget cannot honour are refused, naming "
        "each. trt-widget's own --json, --plain, --report=F, --trace=F, --budget=S work too. Example: trt-widget "
        "trtexec --onnx=model.onnx --minShapes=input:1x3x224x224 --optShapes=input:8x3x224x224 "
        "--maxShapes=input:32x3x224x224 --fp16 --saveEngine=model.engine",
        None,
        "",  # taken before parsing: _trtexec
    ),
    Command(
        "mcp",
        "serve builds as MCP tools for agents (stdio, or streamable HTTP with --http)",
        'Serve TensorRT builds as MCP tools (see docs/agents.md). Needs pip install "trt_widget[mcp]".',
        ".mcp:add_arguments",
        ".mcp:run",
    ),
    Command(
        "lsp",
        "run a language server for editors (stdio): build commands with work-done progress",
        'A language server over stdio (see docs/agents.md). Needs pip install "trt_widget[lsp]".',
        ".lsp:add_arguments",
        ".lsp:run",
    ),
    Command(
        "run",
        "run a Python build command with its TensorRT builds watched: trt-widget run -- python build.py",
        "Run COMMAND with trt_widget's monitor injected into its Python processes: a live tree per TensorRT build "
        "(or --json events); Ctrl-C cancels at the next step boundary, a second one terminates the command. Exit "
        "code: 130 when interrupted, else the command's own.",
        ".watch:cli_arguments",
        ".watch:cli_run",
    ),
)
COMMAND_NAMES = tuple(c.name for c in COMMANDS)


def _imported(target: str) -> Callable[..., object]:
    """The function ``"module:function"`` names (a module of this package)."""
    module, _, name = target.partition(":")
    function: object = getattr(import_module(module, __package__), name)
    if not callable(function):
        raise TypeError(f"{target} is not a function")
    return function


def choose_a_command() -> str:
    """The line that asks for one of the commands."""
    return f"choose a command: {', '.join(COMMAND_NAMES[:-1])} or {COMMAND_NAMES[-1]}"


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``command``: the only command whose own arguments come from a module (the
    others' are left out: their modules need not be imported)."""
    from ._format import HelpFormatter, RawHelpFormatter

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="write the JSON event stream to stdout")
    common.add_argument("--plain", action="store_true", help="plain lines even in a terminal")
    from ._cli_options import add_option_arguments

    add_option_arguments(common.add_argument_group("build options (see docs/options.md)"))
    common.add_argument(
        "--report",
        metavar="F.html",
        help="write a standalone HTML report of the build (also when it fails or is cancelled)",
    )
    common.add_argument(
        "--trace",
        metavar="F.json",
        help="write the build as Chrome trace-event JSON (open in ui.perfetto.dev or chrome://tracing)",
    )
    parser = _Parser(
        prog="trt-widget",
        formatter_class=HelpFormatter,
        description="Observable, cancelable TensorRT engine builds in a terminal.",
        epilog="Exit codes: 0 succeeded, 1 failed or bad input, 2 bad usage, 124 --budget ran out, "
        "130 cancelled with Ctrl-C, 141 stdout's reader went away (| head).",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(COMMAND_NAMES) + "}", parser_class=argparse.ArgumentParser
    )
    for entry in COMMANDS:
        sub = commands.add_parser(
            entry.name,
            parents=[common] if entry.build_options else [],
            help=entry.help,
            description=entry.description,
            epilog=_shapes_epilog() if entry.epilog == "shapes" else entry.epilog,
            formatter_class=RawHelpFormatter if entry.epilog else HelpFormatter,
        )
        if callable(entry.arguments):
            entry.arguments(sub)
        elif entry.arguments is not None and command in (None, entry.name):
            _imported(entry.arguments)(sub)
    parser.commands = dict(commands.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    # argv None: this process is the command line itself, not a call from Python code (tests, scripts)
    if argv is None:
        import warnings

        warnings.showwarning = _show_warning
        _closed_stdout()
        _escaping_stdout()
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv), whole_process=argv is None)
        if argv is None:
            sys.stdout.flush()  # here, not at exit: a closed pipe is then this except's, not a traceback
        return code
    except BrokenPipeError:  # `trt-widget inspect m.log | head`: the reader has what it wanted
        if argv is not None:
            raise
        from ._event_sinks import quiet_stdout

        quiet_stdout()
        return EXIT_PIPE
    except KeyboardInterrupt:  # Ctrl-C before a build could take it (a build's own Ctrl-C cancels it instead)
        if argv is not None:
            raise
        print("trt-widget: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _closed_stdout() -> None:
    """Started with stdout closed (``>&-``: Python's ``sys.stdout`` is None), the tree or the JSON events go to
    ``/dev/null``, said once on stderr (``build --json`` ended in a TypeError traceback before building)."""
    if sys.stdout is not None:
        return
    from ._python import hold_standard_fds

    hold_standard_fds()
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115  # the process's stdout until its end
    if sys.stderr is not None:
        print("trt-widget: warning: stdout is closed: what this command prints there is lost", file=sys.stderr)


def _escaping_stdout() -> None:
    """On a stdout that is not UTF-8 (``PYTHONIOENCODING``, a Latin-1 locale), a character it cannot hold is written
    as a backslash escape, as Python writes stderr: a name such as ``nœud_日本`` ended ``inspect`` and ``check`` in a
    UnicodeEncodeError traceback. (``--json`` writes such a character as its JSON escape first.)"""
    import codecs

    encoding = getattr(sys.stdout, "encoding", None)
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    try:
        utf8 = isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        utf8 = False
    if not utf8 and reconfigure is not None:
        with contextlib.suppress(Exception):
            reconfigure(errors="backslashreplace")


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning of the command line as one line (wrapped between words in a terminal), escaped: its text can
    hold a path or a name from outside (Python's own display prints it raw, with a line of our source)."""
    from ._format import escape_controls, fit_lines

    out = sys.stderr if file is None else file
    print(fit_lines(f"trt-widget: warning: {escape_controls(str(message))}", out), file=out)


def _main(argv: list[str], whole_process: bool) -> int:
    if argv[:1] == ["trtexec"] and not {"-h", "--help"} & set(argv[1:2]):
        return _trtexec(argv[1:], whole_process)
    _start_builder_early(argv, whole_process)
    parser = _parser(argv[0] if argv and not argv[0].startswith("-") else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or bad usage (2)
        return int(exc.code or 0)
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(f"trt-widget: error: {choose_a_command()}", file=sys.stderr)
        return EXIT_USAGE
    entry = next(c for c in COMMANDS if c.name == args.command)
    if entry.run:
        code = _imported(entry.run)(args)
        if not isinstance(code, int):
            raise TypeError(f"{entry.run} returned {code!r}, not an exit code")
        return code
    try:
        return _view(args) if args.command == "view" else _run(args)
    except _UsageError as exc:  # one line: a path it quotes (or an OSError's own text) forges none
        _stderr_line(f"trt-widget: error: {_one_line(exc)}")
        return EXIT_USAGE
    except (_InputError, OSError) as exc:
        _stderr_line(f"trt-widget: error: {_one_line(exc)}")
        return EXIT_FAILED
    except ImportError as exc:  # BackendUnavailable (its install hint is several lines), missing onnx
        _stderr_line(f"trt-widget: error: {exc}")
        return EXIT_FAILED


def _start_builder_early(argv: list[str], whole_process: bool) -> None:
    """``build`` with the default process isolation: start the builder process before anything else, so its
    start (Python, TensorRT) overlaps this process's own imports and checks instead of following them. In a
    process that is the command line (``whole_process``), the worker ends as soon as its one build is done. Not
    with ``--reuse``: an engine found ends the build in milliseconds, and a builder starting beside that check
    would only take the CPU from it (on a miss the builder starts then)."""
    if argv[:1] != ["build"] or {"-h", "--help", "--reuse"} & set(argv):
        return
    for index, arg in enumerate(argv):
        if arg.startswith("--isolation="):
            value = arg.split("=", 1)[1]
        elif arg == "--isolation" and index + 1 < len(argv):
            value = argv[index + 1]
        else:
            continue
        if value != "process":
            return
    from ._pool import pool

    pool.one_build = whole_process  # its worker ends while this process writes and prints what is left
    pool.start_here()


_OWN = ("--json", "--plain", "--report", "--trace", "--budget", "--isolation", "--reuse", "--reuse-dir", "--log-file")


def _trtexec(argv: list[str], whole_process: bool) -> int:
    """``trt-widget trtexec ...``: translate, say what is ignored or refused, then build as ``trt-widget build``."""
    from ._trtexec import build_argv, split_arguments, translate

    try:
        args = split_arguments(argv)
    except ValueError as exc:  # a pasted line with an unbalanced quote
        _stderr_line(f"trt-widget trtexec: error: {exc}")
        return EXIT_USAGE
    own = [a for a in args if a.split("=", 1)[0] in _OWN]
    translation = translate([a for a in args if a not in own])
    for arg, why in translation.refused:
        _stderr_line(f"trt-widget trtexec: cannot honour {_safe(arg)}: {why}")
    if translation.refused:
        print(
            f"trt-widget trtexec: error: {len(translation.refused)} argument(s) refused; nothing built", file=sys.stderr
        )
        return EXIT_USAGE
    if translation.ignored:
        _stderr_line(
            "trt-widget trtexec: ignored (trt-widget builds the engine and runs no inference): "
            + " ".join(_safe(a) for a in translation.ignored)
        )
    for note in translation.notes:
        _stderr_line(f"trt-widget trtexec: {_safe(note)}")
    command = build_argv(translation, own)
    _stderr_line("trt-widget trtexec: building as: trt-widget " + " ".join(_safe(a) for a in command))
    return _main(command, whole_process)


def _safe(text: str) -> str:
    """A command-line argument for the terminal: control characters shown escaped, never sent raw."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _model_and_output(args: argparse.Namespace) -> tuple[ModelLike, str | None]:
    if args.command == "build":
        try:
            path = model_file(args.model)
        except BadModelPath as exc:
            raise _InputError(str(exc)) from None
        return str(path), args.output or str(path.with_suffix(".engine"))
    from .models import MAX_BLOCKS, deep_residual

    if not 1 <= args.blocks <= MAX_BLOCKS:
        raise _UsageError(f"--blocks must be from 1 to {MAX_BLOCKS:,}, got {args.blocks}")

    return deep_residual(args.blocks), args.output


def _options(args: argparse.Namespace, output: str | None) -> dict[str, Any]:  # for Build(**options): checked
    from ._cli_options import checked_options

    try:
        options = checked_options(args, output=output)
    except FileNotFoundError as exc:
        raise _InputError(str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise _UsageError(str(exc)) from None
    return {k: v for k, v in options.items() if v is not None}


def _check_files(args: argparse.Namespace, output: str | None) -> None:
    """--report / --trace must not overwrite the model, the engine or each other; every file written (engine,
    report, trace) must be writable: checked before the build, not after it."""
    from ._files import check_writable
    from ._format import escape_controls

    named = (
        (getattr(args, "model", None), "the model"),
        (getattr(args, "recording", None), "the recording"),
        (output, "the engine output"),
    )
    taken = {os.path.realpath(p): what for p, what in named if p}
    for flag, path in (("--report", args.report), ("--trace", args.trace)):
        if path is None:
            continue
        real = os.path.realpath(path)
        if real in taken:
            raise _UsageError(f"{flag} {escape_controls(path)} is {taken[real]}: choose another file")
        taken[real] = f"the {flag} file"
    for what, path in (("-o/--output", output), ("--report", args.report), ("--trace", args.trace)):
        if path:
            try:
                check_writable(path, what)
            except OSError as exc:
                raise _InputError(f"cannot write {exc}") from None


def _write_files(build: Build, args: argparse.Namespace) -> bool:
    """Write the --report / --trace files; False (after saying why on stderr) when one cannot be written."""
    from ._format import escape_controls

    ok = True
    for flag, path, method in (("--report", args.report, "to_html"), ("--trace", args.trace, "to_trace")):
        if path is None:
            continue
        try:
            getattr(build, method)(path)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            _stderr_line(f"trt-widget: error: cannot write the {flag} file {escape_controls(path)}: {reason}")
            ok = False
        else:
            _stderr_line(f"{'Report' if flag == '--report' else 'Trace'} written to {escape_controls(path)}")
    return ok


def _run(args: argparse.Namespace) -> int:
    if args.isolation in (None, "process"):  # start the builder process now: its start overlaps the work below
        from .runners import pool

        pool.prewarm()
    model, output = _model_and_output(args)
    options = _options(args, output)
    _check_files(args, output)
    from ._backend import select_backend
    from ._build import Build
    from ._events import attach_events
    from ._terminal import Interrupts, TerminalView

    try:
        build = Build(model, **options)
    except (ValueError, TypeError) as exc:  # an option the backend cannot build, the model's own path as output...
        from ._cli_options import in_flags

        raise _UsageError(in_flags(str(exc))) from None
    if output:  # this process ends with the build: an engine kept in memory is lost with it
        build._unsaved_note = (
            f"The engine is not saved (nothing was written to {output}): make room there or choose another -o, and "
            "build again"
        )
    if args.trace:
        from .report.trace import record_steps

        record_steps(build)  # steps over time, not only at each phase's start and end
    if args.json:
        from ._event_sinks import PipeStdout

        stream: EventStream | TerminalView = attach_events(build, cast("TextIO", PipeStdout(sys.stdout)))
        notify = _stderr_line
    else:
        stream = TerminalView(build, sys.stdout, style="plain" if args.plain else "auto", hint="Ctrl-C to cancel")
        notify = stream.notice
    interrupts = Interrupts(build, notify)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if not interrupts() and not build.done():
            said = "Exiting without waiting for the builder: the build did not finish (no engine written)."
            if isinstance(stream, TerminalView):
                stream.abandon(said)  # the live tree stops, this line ends the screen
            else:
                notify(said)
            sys.stdout.flush()
            os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        build.start()
        while not build.done():
            build.wait(0.2)
        stream.join(30.0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if build.status == "succeeded" and build.options.output:
        note = engine_note(select_backend()[0])
        if note:
            _stderr_line(f"{_one_line(build.options.output)} {note}")  # -o as typed: one line
    written = _write_files(build, args)
    if build.status == "succeeded":
        return EXIT_OK if written else EXIT_FAILED
    if build.status == "cancelled":
        return EXIT_INTERRUPTED if interrupts.count else EXIT_BUDGET
    message = str(build.error) if build.error is not None else build.status_detail
    if args.json or message != build.status_detail or not _one_place():
        _stderr_line(f"trt-widget: build failed: {message}")  # where stderr is stdout, the view's last line said it
    return EXIT_FAILED


def _one_place() -> bool:
    """Whether stdout and stderr show in one place (a terminal, or one file or pipe: ``2>&1 | tee``): there a
    failure the view's last line said is not said again on stderr."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # replaced by objects without a file (main() from Python)
        return False
    if sys.stdout.isatty() and sys.stderr.isatty():
        return True
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def engine_note(backend: str) -> str:
    """What a saved engine is, where that is not what a TensorRT user expects (TensorRT for RTX's engines)."""
    if backend != "rtx":
        return ""
    return (
        "is a TensorRT for RTX engine (finished on the GPU when loaded): NVIDIA TensorRT and Triton's TensorRT "
        "backend cannot load it"
    )


def _view(args: argparse.Namespace) -> int:
    """Replay a recording: exit 0 when it replays to its end, whatever the recorded build's outcome (130 when
    Ctrl-C stopped it)."""
    from ._build import Build
    from .runners import MAX_SPEED, MIN_SPEED, RecordingError, load_events, split_builds

    if args.speed is not None and not MIN_SPEED <= args.speed <= MAX_SPEED:  # NaN too
        raise _UsageError(f"--speed must be a number from {MIN_SPEED:g} to {MAX_SPEED:g}, got {args.speed}")
    _check_files(args, None)
    from ._format import escape_controls

    shown = escape_controls(args.recording)  # a newline in the name forges no line of ours
    if not Path(expand_user(args.recording)).exists():
        raise _InputError(f"recording not found: {shown}")
    try:
        builds = split_builds(load_events(Path(args.recording)))
    except RecordingError as exc:
        if not exc.binary:
            raise _InputError(str(exc)) from None
        hint = f"; to build this model: trt-widget build {shown}" if args.recording.endswith(".onnx") else ""
        raise _InputError(
            f"{shown} is not a recording: a recording is the JSON-lines text that --json or events= "
            f"write, and this file is binary{hint}"
        ) from None
    count = len(builds)
    if args.build is not None and not 1 <= args.build <= max(count, 1):
        raise _UsageError(f"--build {args.build}: {shown} holds {count} build(s), numbered from 1")
    if args.build is None and count > 1 and (args.report or args.trace):
        raise _UsageError(f"{shown} holds {count} builds: pick the one to write --report/--trace for with --build N")
    picked = [args.build] if args.build is not None else list(range(1, count + 1)) or [1]
    ok = True
    for number in picked:
        events = builds[number - 1] if builds else []
        if count > 1:
            first = next((e for e in events if e["event"] == "build_start"), {})
            label = escape_controls(first.get("model", "?"))  # the recording's: outside text
            print(f"Build {number} of {count} in this recording: {label}", flush=True)
        code = _replay_one(Build.from_loaded_events(events, args.recording, speed=args.speed), args)
        if code == EXIT_INTERRUPTED:  # Ctrl-C stops the whole view, not only this build's replay
            return code
        ok = code == EXIT_OK and ok
        if count > 1 and number == picked[-1] and args.build is None:
            print(f"Replayed all {count} builds; --build N replays one alone.", flush=True)
    return EXIT_OK if ok else EXIT_FAILED


def _replay_one(build: Build, args: argparse.Namespace) -> int:
    """Replay one build to its end in the terminal: EXIT_OK, EXIT_FAILED when it did not replay to its end or a
    file failed, EXIT_INTERRUPTED when Ctrl-C stopped it (its files show what was replayed until then)."""
    from ._terminal import TerminalView

    stream = TerminalView(build, sys.stdout, style="plain" if args.plain else "auto", hint="Ctrl-C to stop")
    interrupted = False
    try:
        build.start().wait()
    except KeyboardInterrupt:
        interrupted = True
        build.wait()
    stream.join(30.0)
    written = _write_files(build, args)
    if interrupted and build.status == "cancelled" and "replayed recording" not in build.status_detail:
        return EXIT_INTERRUPTED
    if "replayed recording" not in build.status_detail and build.status != "cancelled":
        message = str(build.error or build.status_detail)
        if message != build.status_detail or not _one_place():  # else the view's last line said it
            from ._format import escape_controls

            _stderr_line(f"trt-widget: error: {escape_controls(message)}")  # a recording's text: one line
        return EXIT_FAILED
    return EXIT_OK if written else EXIT_FAILED


def _one_line(text: object) -> str:
    """``text`` (an error naming a path as typed, or an OSError repeating it) as one line: every control escaped."""
    from ._format import escape_controls

    return escape_controls(text)


def _stderr_line(text: str) -> None:
    """A message on stderr; what it quotes (paths, a model's or a recording's text) is shown escaped."""
    from ._format import say

    say(text, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
