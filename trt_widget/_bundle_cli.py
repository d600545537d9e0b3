"""``trt-widget bundle MODEL -o FILE.zip``: build (or pack a recording) and write a bug-report zip
(:func:`trt_widget.provenance.write_bundle`)."""

from __future__ import annotations

import argparse
import json
import sys

from ._format import escape_controls, say


def bundle_arguments(parser: argparse.ArgumentParser) -> None:
    from ._cli_options import add_option_arguments

    parser.add_argument("model", help="the ONNX model to build, or a recording (--json / events=) to pack")
    parser.add_argument("-o", "--bundle", dest="bundle", required=True, metavar="FILE.zip", help="the zip to write")
    parser.add_argument(
        "--include-model", action="store_true", help="add the model (and its external data) and the engine"
    )
    parser.add_argument("--redact", action="store_true", help="replace the model's folder, the working folder, home")
    add_option_arguments(parser.add_argument_group("build options (see docs/options.md)"), exclude=("output",))


def _is_recording(path: str) -> bool:
    """A JSON-lines recording rather than a model: its first non-blank byte opens a JSON object."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"{")


def bundle_run(args: argparse.Namespace) -> int:
    """Build (or read a recording) and write the bundle: 0 when it is written (whatever the build's outcome), 1
    otherwise."""
    import tempfile
    from pathlib import Path

    from ._build import Build
    from ._cli_options import checked_options, options_from_args
    from ._files import check_writable, expand_user
    from ._leftovers import check_parent
    from .provenance import write_bundle

    def fail(message: str, code: int = 1) -> int:
        say(f"trt-widget bundle: error: {message}", sys.stderr)
        return code

    shown = escape_controls(args.model)  # a newline in the name forges no line of ours
    try:
        model = str(expand_user(args.model))
        if not Path(model).is_file():
            return fail(f"no such file: {shown}")
    except ValueError as exc:  # ~name of no user
        return fail(escape_controls(exc))
    except OSError as exc:  # a path stat() refuses: a name too long, a folder this user may not enter
        return fail(f"cannot read {shown}: {exc.strerror or exc}")
    try:
        check_writable(args.bundle, "-o")
    except OSError as exc:
        return fail(f"cannot write {exc}")
    try:  # the log packed into the report lies here: never in a folder another user could swap
        scratch = check_parent(tempfile.gettempdir())
    except OSError as exc:
        return fail(str(exc))
    events: list[str] = []
    recording = _is_recording(model)
    with tempfile.TemporaryDirectory(prefix="trt_widget-bundle-", dir=scratch) as folder:
        try:
            if recording:
                build = Build.from_events(Path(model))
            else:
                options = options_from_args(args)
                options["log_file"] = options.get("log_file") or str(Path(folder) / "build.log")
                options = checked_options(args, log_file=options["log_file"])
                build = Build(model, events=lambda e: events.append(json.dumps(e, ensure_ascii=False)), **options)
        except (ValueError, TypeError) as exc:
            return fail(str(exc), 2)
        except (OSError, ImportError) as exc:
            return fail(str(exc))
        doing = f"packing the recording {shown}" if recording else f"building {shown}"
        say(f"trt-widget bundle: {doing} ...", sys.stderr)
        build.start()
        try:
            build.wait()
        except KeyboardInterrupt:
            build.stop("interrupted")
            build.wait()
        recorded = "".join(line + "\n" for line in events) if events else None
        try:
            written = write_bundle(
                build,
                args.bundle,
                include_model=args.include_model,
                redact=args.redact,
                events=recorded,
                redact_also=[folder],
            )
        except (OSError, ValueError) as exc:
            return fail(f"cannot write the bundle: {exc}")
    what = "the recorded build" if recording else "the build"
    cause = f": {escape_controls(build.error)}" if build.status == "failed" and build.error is not None else ""
    said = f"trt-widget bundle: bundle written to {escape_controls(written)}; {what} {build.status}{cause}"
    say(said, sys.stderr)
    return 0
