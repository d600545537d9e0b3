"""``BuildMatrix``: one engine build per (model, variant), run locally or on a Ray cluster, watched as one.

Every build of a matrix is an ordinary :class:`~trt_widget.Build`; only its runner differs. The local executor
wraps the default runner (a warm worker process) in a first-come-first-served slot queue: at most
``max_parallel`` builds at once (default 1 — TensorRT's advice is one build per GPU, and the local executor
does not pin builds to GPUs). The Ray executor gives each build a :class:`~trt_widget.RayRunner` and lets Ray
schedule them. A build waiting for its slot or for a Ray worker has status ``queued``. Options a variant gets
wrong fail that variant alone.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, Union, cast

from .._build import Build, HistorySetting
from .._engine import ModelLike, ModelSource
from .._errors import BuildError
from .._event_sinks import Sink
from .._files import expand_user, resolve
from .._json import json_int
from .._options import BuildOptionsDict
from .._status import FINAL, IDLE, INTERRUPTED
from ..runners import EngineFile, RunContext, Runner
from ._table import (
    COMPARE_INTEGERS,
    ENGINE_COLUMNS,
    ENGINE_INTEGERS,
    RESULT_COLUMNS,
    RESULT_INTEGERS,
    as_table,
    compare_rows,
    comparison,
    engine_rows,
    fmt_row_text,
    model_labels,
    result_row,
    variant_label,
)

if TYPE_CHECKING:
    from pandas import DataFrame
    from typing_extensions import Unpack

    from ..ray import RayRunner
    from ._events import MatrixEvents
    from ._table import Comparison, ResultRow
    from ._widget import MatrixWidget

__all__ = ["BuildMatrix", "Cell", "Executor", "ModelsLike"]

# models=: one model, a list or tuple of them, or a dict label -> model
ModelsLike = ModelLike | list[ModelLike] | tuple[ModelLike, ...] | Mapping[str, ModelLike]
# executor=: worker processes here ("local"), Ray ("ray"), or a RayRunner as the template of every build's runner
Executor = Union[Literal["local", "ray"], "RayRunner"]


class _BuildArgs(TypedDict, total=False):
    history: HistorySetting
    resources: bool


def _model_key(model: object, label: str) -> str:
    """One short digest per model, of a file's real path, of bytes, else of the label (a ModelProto, a function):
    the widget's state gets no path."""
    import hashlib

    if isinstance(model, (str, os.PathLike)):
        key = b"file:" + os.fsencode(os.path.realpath(model))
    elif isinstance(model, (bytes, bytearray, memoryview)):
        key = b"bytes:" + bytes(model)
    else:
        key = b"label:" + label.encode("utf-8", "replace")
    return hashlib.sha256(key).hexdigest()[:16]


SLOT_POLL_S = 0.05  # how often a queued build looks at its Stop while waiting for a slot


@dataclass
class Cell:
    """One build of a matrix: its id (index in ``matrix.builds``), model and variant labels, options and Build."""

    id: int
    model: str
    variant: str
    options: BuildOptionsDict
    build: Build
    # which builds are of one model (the same file given twice has two labels): its comparison groups by it
    same_model: str = ""


class Slots:
    """At most ``size`` builds at once, served in the order they asked; a waiting build can be stopped."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cond = threading.Condition()
        self._free = size
        self._waiting: collections.deque[object] = collections.deque()

    def reserve(self, ticket: object) -> None:
        """Put ``ticket`` in line now, so the build holding it is served in this order, not its thread's."""
        with self._cond:
            self._waiting.append(ticket)

    def forget(self, ticket: object) -> None:
        """Take ``ticket`` out of line if it is still there (its build ended without asking for a slot)."""
        with self._cond:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                self._cond.notify_all()

    def acquire(self, cancel: threading.Event, on_wait: Callable[[], None], ticket: object | None = None) -> bool:
        """Take a slot (calling ``on_wait()`` first if none is free now); False when ``cancel`` is set first.
        ``ticket``: a place in line taken earlier with :meth:`reserve`."""
        ticket = object() if ticket is None else ticket
        with self._cond:
            if ticket not in self._waiting:
                self._waiting.append(ticket)
            waited = False
            while not (self._free > 0 and self._waiting[0] is ticket):
                if cancel.is_set():
                    self._waiting.remove(ticket)
                    self._cond.notify_all()
                    return False
                if not waited:
                    waited = True
                    on_wait()
                self._cond.wait(SLOT_POLL_S)
            self._waiting.popleft()
            self._free -= 1
            self._cond.notify_all()
            return True

    def release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()


class SlotRunner:
    """Runs ``inner`` once a slot is free; until then the build is ``queued`` (and Stop ends it at once)."""

    def __init__(self, inner: Runner, slots: Slots) -> None:
        self.inner = inner
        self.slots = slots
        self.name = inner.name
        self.framed = inner.framed
        self.local = inner.local
        self.placed = threading.Event()  # set once the build holds a slot or waits (queued) for one
        self.ticket = object()  # its place in the slots' line (taken at the matrix's start, in list order)

    def reserve(self, build: Build) -> None:
        """Take this build's place in line now; given back if the build ends without asking for a slot."""
        self.slots.reserve(self.ticket)
        build.add_done_callback(lambda _future: self.slots.forget(self.ticket))

    def run(self, ctx: RunContext) -> bytes | EngineFile | None:
        waited: list[bool] = []

        def on_wait() -> None:
            waited.append(True)
            ctx.on_queued(True)
            self.placed.set()

        try:
            if not self.slots.acquire(ctx.cancel, on_wait, self.ticket):
                return None
        finally:
            self.placed.set()
        try:
            if ctx.cancel.is_set():  # stopped as the slot came: it never builds
                return None
            if waited:
                ctx.on_queued(False)
            return self.inner.run(ctx)
        finally:
            self.slots.release()


class _Refused:
    """The runner of a variant whose options were refused: the build fails with the reason, the others run."""

    name = "refused"
    framed = True
    local = False  # its options were refused already: the build fails with that reason

    def __init__(self, message: str) -> None:
        self.message = message

    def run(self, ctx: RunContext) -> bytes | None:
        raise BuildError(self.message)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def output_folder(folder: str | os.PathLike[str], what: str) -> Path:
    """The engines' folder, created (with its parents) when missing, as ``mkdir -p``; ``what`` names it in the
    errors as the user gave it (``output_dir``, or the CLI's ``-o/--output-dir``)."""
    path = expand_user(folder)
    resolve(path)  # UntrustedLink: a folder is never made through another user's link (mkdir -p follows it)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{what} {path} is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"{what}: cannot create the folder {path}: {exc.strerror or exc}") from None
    return path


class BuildMatrix:
    """One build per (model, variant): ``BuildMatrix(models, variants=[{...}, ...], executor="local").start()``.

    ``models``: one model (path, bytes, ModelProto or network function), a list of them, or a dict label ->
    model. ``variants``: a list of option dicts (or a dict label -> options); ``**options`` apply to every
    build and a variant's own options override them. ``executor``: "local" (worker processes here,
    ``max_parallel`` at a time, default 1), "ray", or a :class:`~trt_widget.RayRunner` used as the template of
    every build's runner. ``output_dir``: write each engine there as ``<model>-<variant>.engine`` (the folder is
    created when missing). ``events``:
    one JSON event stream (path, text file or callable) for all builds, ``"build": id`` in every event.
    """

    def __init__(
        self,
        models: ModelsLike,
        *,
        variants: Sequence[BuildOptionsDict] | Mapping[str, BuildOptionsDict] | None = None,
        executor: Executor = "local",
        max_parallel: int | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        events: Sink | None = None,
        history: HistorySetting = True,
        resources: bool = True,
        **options: Unpack[BuildOptionsDict],
    ) -> None:
        named_models = _named(models, model_labels)
        named_variants = _named_variants(variants)
        if max_parallel is not None and (not json_int(max_parallel) or max_parallel < 1):
            raise ValueError(f"max_parallel must be a positive integer, got {max_parallel!r}")
        self.executor = _executor_name(executor)
        self._ray_template = executor if not isinstance(executor, str) else None
        if self.executor == "local":
            max_parallel = max_parallel or 1
        self.max_parallel = max_parallel
        self.slots = Slots(max_parallel) if max_parallel else None
        self.output_dir = output_folder(output_dir, "output_dir") if output_dir is not None else None
        self.cells: list[Cell] = []
        self._build_args: _BuildArgs = {"history": history, "resources": resources}
        self._outputs: dict[str, str] = {}  # the real path of each cell's output= -> which cell writes it
        self._places: list[tuple[SlotRunner, Build]] = []  # the builds that wait for a slot, in list order
        self._last_ray: RayRunner | None = None  # the Ray executor's last runner (the next one submits after it)
        for model_label, model in named_models:
            for variant, variant_options in named_variants:
                merged: BuildOptionsDict = {**options, **variant_options}
                cell_id = len(self.cells)
                build = self._make_build(model, model_label, variant, merged)
                self.cells.append(Cell(cell_id, model_label, variant, merged, build, _model_key(model, model_label)))
        self.events: MatrixEvents | None = None
        if events is not None:
            from ._events import attach_matrix_events

            self.events = attach_matrix_events(self, events)
        self._started = False
        self._widget: MatrixWidget | None = None

    def _make_build(self, model: ModelLike, model_label: str, variant: str, options: BuildOptionsDict) -> Build:
        """The cell's Build with the executor's runner; a variant whose options are refused gets a failing one."""
        options = options.copy()
        if self.output_dir is not None and "output" not in options:
            options["output"] = self._engine_path(self.output_dir, model_label, variant)
        try:
            output = options.get("output")
            real = os.path.realpath(expand_user(output)) if output is not None else None
            if real in self._outputs:  # two cells writing one file: the last would silently win
                raise ValueError(f"output={str(output)!r} is also the output of {self._outputs[real]}")
            if self.executor == "ray":
                from ..ray import RayRunner

                template = self._ray_template if isinstance(self._ray_template, RayRunner) else RayRunner()
                remote: _BuildArgs = {"history": False, "resources": False}  # here, they would time a remote machine
                remote.update(self._explicit_args())
                runner = template.clone()
                build = Build(model, runner=runner, **remote, **options)
                if self._last_ray is not None:  # submitted in list order, after the build before it
                    runner.after = self._last_ray.submitted
                build.add_done_callback(lambda _future: runner.submitted.set())  # ended without reaching Ray
                self._last_ray = runner
            else:
                build = Build(model, **self._build_args, **options)
        except (TypeError, ValueError, OSError) as exc:  # bad options fail this variant alone
            refused = _Refused(f"variant {variant!r} of {model_label}: {exc}")
            source = ModelSource("refused", None, model_label)
            build = Build(source, runner=refused, isolation="thread", history=False, resources=False)
            return build
        if real is not None:
            self._outputs[real] = f"variant {variant!r} of {model_label}"
        if self.slots is not None:
            build.runner = slot = SlotRunner(build.runner, self.slots)
            self._places.append((slot, build))
        return build

    def _engine_path(self, folder: Path, model_label: str, variant: str) -> Path:
        """``<model>-<variant>.engine`` in ``folder``, numbered (``m-2-fp16.engine``) where two models share a
        file name (``a/m.onnx`` and ``b/m.onnx``): each cell writes its own file."""
        stem, name = _slug(Path(model_label).stem), _slug(variant)
        path, number = folder / f"{stem}-{name}.engine", 2
        while os.path.realpath(path) in self._outputs:
            path, number = folder / f"{stem}-{number}-{name}.engine", number + 1
        return path

    def _explicit_args(self) -> _BuildArgs:
        """history= / resources= where the caller changed them from the default."""
        explicit: _BuildArgs = {}
        if self._build_args["history"] is not True:
            explicit["history"] = self._build_args["history"]
        if self._build_args["resources"] is not True:
            explicit["resources"] = self._build_args["resources"]
        return explicit

    # -- the builds ----------------------------------------------------------------------------------
    @property
    def builds(self) -> list[Build]:
        """The builds, one per (model, variant), models outer: ``builds[i]`` is ``cells[i].build``."""
        return [cell.build for cell in self.cells]

    def __len__(self) -> int:
        return len(self.cells)

    def __getitem__(self, index: int) -> Build:
        return self.cells[index].build

    @property
    def status(self) -> str:
        """idle (not started), running (some build not ended) or done."""
        if not self._started:
            return IDLE
        return "done" if all(b.status in FINAL for b in self.builds) else "running"

    def done(self) -> bool:
        """True once every build has ended."""
        return self._started and all(b.done() for b in self.builds)

    def counts(self) -> dict[str, int]:
        """How many builds have each status."""
        counter: collections.Counter[str] = collections.Counter(b.status for b in self.builds)
        return dict(counter)

    # -- control -------------------------------------------------------------------------------------
    def start(self) -> BuildMatrix:
        """Start every build and return at once (builds without a free slot or worker are ``queued``)."""
        if self._started:
            raise RuntimeError("this matrix already started; a BuildMatrix runs once")
        self._started = True
        for slot, build in self._places:  # served in list order: each build's thread may ask late
            slot.reserve(build)
        try:
            for build in self.builds:
                build.start()
        except BaseException:  # a build that cannot start must not hold its place in line
            for slot, build in self._places:
                if build.status == IDLE:
                    slot.slots.forget(slot.ticket)
            raise
        return self

    def stop(self, reason: str = "stopped by user (Stop all)") -> int:
        """Stop every build that has not ended (a second call force-stops); returns how many were asked. ``reason``
        is what each build says (``"interrupted (Ctrl-C)"`` for a terminal's Ctrl-C)."""
        return sum(bool(build.stop(reason)) for build in self.builds)

    def wait(self, timeout: float | None = None) -> str:
        """Block until every build ended (or ``timeout`` s passed); returns the matrix status.

        A KeyboardInterrupt while waiting stops every build, then re-raises."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for build in self.builds:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                build.wait(left)
        except KeyboardInterrupt:
            self.stop(INTERRUPTED)
            raise
        return self.status

    async def wait_async(self) -> str:
        """Await every build without blocking the event loop (Stop clicks get through)."""
        try:
            for build in self.builds:
                await build.wait_async()
        except KeyboardInterrupt:
            self.stop(INTERRUPTED)
            raise
        except asyncio.CancelledError:
            self.stop()
            raise
        return self.status

    def __await__(self) -> Generator[object, None, str]:
        return self.wait_async().__await__()

    # -- results -------------------------------------------------------------------------------------
    def results(self) -> DataFrame | list[ResultRow]:
        """One row per build: build, model, variant, status, build_s, engine_bytes, top_phases (the phases
        with the most self time, seconds), error. A pandas DataFrame when pandas is installed, else dicts."""
        return as_table([result_row(cell) for cell in self.cells], RESULT_COLUMNS, RESULT_INTEGERS)

    def compare(self, baseline: int = 0) -> DataFrame | list[dict[str, object]]:
        """Differences against build ``baseline``: build time, engine size, and seconds per phase name. Its
        ``build_s`` leaves out the builder process's start-up (``start_up_s``), which ``results()`` includes;
        ``cold_builder`` marks a builder process's first build, whose phases hold one-time costs (fresh memory)."""
        rows = compare_rows(self.cells, baseline)
        return as_table(rows, list(rows[0]) if rows else [], COMPARE_INTEGERS)

    def engines(self) -> DataFrame | list[dict[str, object]]:
        """One row per build: what its engine holds: layers, precision mix, main layer types, weights and
        activation memory, engine size (``EngineReport``); a DataFrame when pandas is installed, else dicts."""
        return as_table(engine_rows(self.cells), ENGINE_COLUMNS, ENGINE_INTEGERS)

    def comparison(self) -> Comparison:
        """Per build: status, build time, engine size and seconds per phase name (JSON-ready)."""
        return comparison(self.cells)

    def to_json(self) -> str:
        """The results rows as JSON text."""
        return json.dumps([result_row(cell) for cell in self.cells], indent=1)

    def table_text(self) -> str:
        """The results as an aligned plain-text table."""
        header = ["id", "model", "variant", "status", "time", "engine", "top phases / error"]
        lines = [fmt_row_text(result_row(cell)) for cell in self.cells]
        widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header) - 1)]
        out = []
        for row in [header, *lines]:
            out.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
        return "\n".join(out)

    # -- display -------------------------------------------------------------------------------------
    @property
    def widget(self) -> MatrixWidget:
        """The matrix widget (created on first use): one row per build, Stop, expandable phase trees."""
        if self._widget is None:
            from ._widget import MatrixWidget

            self._widget = MatrixWidget(self)
        return self._widget

    def _repr_mimebundle_(self, **kwargs: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
        """As the last expression of a cell: the widget (with a text and HTML table for other front ends)."""
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        """In IPython: the widget under a display id, its static tables updated when the last build ends."""
        self.widget._ipython_display_()

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        return f"<BuildMatrix {len(self.cells)} builds, executor={self.executor!r}: {counts}>"


def _named(models: ModelsLike, labeller: Callable[[Sequence[object]], list[str]]) -> list[tuple[str, ModelLike]]:
    if isinstance(models, Mapping):
        return [(str(k), v) for k, v in models.items()]
    if isinstance(models, (list, tuple)):
        if not models:
            raise ValueError("a BuildMatrix needs at least one model")
        return list(zip(labeller(list(models)), models, strict=True))
    return list(zip(labeller([models]), [models], strict=True))


def _named_variants(
    variants: Sequence[BuildOptionsDict] | Mapping[str, BuildOptionsDict] | None,
) -> list[tuple[str, BuildOptionsDict]]:
    if variants is None:
        return [("default", {})]
    items: list[tuple[str | None, object]]
    if isinstance(variants, Mapping):
        items = [(str(k), v) for k, v in variants.items()]
    elif isinstance(variants, (list, tuple)):
        items = [(None, v) for v in variants]
    else:
        raise TypeError(f"variants must be a list of option dicts or a dict label -> options, got {variants!r}")
    if not items:
        raise ValueError("variants is empty: give at least one (an empty dict means the default options)")
    out: list[tuple[str, BuildOptionsDict]] = []
    for label, options in items:
        if not isinstance(options, Mapping):
            raise TypeError(f"each variant must be a dict of build options, got {options!r}")
        # the names are checked where the build is made (a TypeError that fails this variant alone)
        checked = cast("BuildOptionsDict", {str(k): v for k, v in options.items()})
        out.append((label if label is not None else variant_label(checked), checked))
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        out = [(f"{label} #{i}", options) for i, (label, options) in enumerate(out)]
    return out


def _executor_name(executor: object) -> str:
    if executor in ("local", "ray"):
        return str(executor)
    if type(executor).__name__ == "RayRunner":
        return "ray"
    raise ValueError(f"executor must be 'local', 'ray' or a trt_widget.RayRunner, got {executor!r}")
