"""The MCP server's builds: started from an ONNX path, kept by id (the newest ``keep``), and described as the
JSON the tools return. No SDK here: the tools in ``_server`` turn :class:`BadInput` into tool errors."""

from __future__ import annotations

import difflib
import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, TypedDict, cast

from .._files import BadModelPath, expand_user, model_file, resolve
from .._follow import path_label, running_path
from .._json import json_int

if TYPE_CHECKING:
    from .._build import Build
    from .._json import JSONObject
    from .._options import BuildOptionsDict
    from .._phases import PhaseRow
    from .._status import BuildStatus


class TopPhase(TypedDict):
    name: str
    self_s: float
    instances: int


class BuildDescription(TypedDict):
    """What the tools say about a build (``BuildResult``'s fields)."""

    build_id: str
    model: str
    status: BuildStatus
    detail: str
    build_s: float
    phase: str
    engine_path: str | None
    engine_bytes: int | None
    top_phases: list[TopPhase]
    warnings: list[str]
    error: str | None
    error_cause: str | None
    created_at: float
    ended_at: float | None
    engine: JSONObject | None


class PhaseChange(TypedDict):
    path: str
    previous_s: float
    now_s: float
    delta_s: float


class HistoryComparison(TypedDict):
    previous: str | None
    previous_s: float | None
    delta_s: float | None
    phases: list[PhaseChange]


class TimingsDescription(TypedDict):
    build_id: str
    status: BuildStatus
    build_s: float
    top_phases: list[TopPhase]
    comparison: HistoryComparison | None


KEEP = 32  # builds remembered; the oldest finished ones are forgotten first
MAX_CONCURRENT = 2  # builds at once; more wait, "queued", in the order they came (each builder takes ~150 MiB)
MAX_WAITING = 32  # queued builds at most; more are refused (a tool error) until one has ended
SETTLE_S = 10.0  # start_build waits at most this long for a started build to take a slot or queue for one
TOP = 5
_TEXT_LIMIT = 500
# budget and output are the tool's own arguments; force_after (and isolation, refused over HTTP) stay the default
# process runner's, so a stop always ends a build in ~0.2 s
_NOT_FOR_AGENTS = ("budget", "output", "force_after")


def _agent_options() -> tuple[str, ...]:
    """What an agent may set: every engine setting a build-service request may, plus a (local) timing cache; not
    where the builder runs nor how long a stop may take (from the options' own metadata, as the service does)."""
    from .._http_options import http_options

    return (*(n for n in http_options() if n not in _NOT_FOR_AGENTS), "timing_cache")


def _refusal(name: str) -> str:
    from .._http_options import http_refusals

    if name in ("isolation", "force_after"):
        return "builds run in the default builder process, which a stop always ends"
    return http_refusals().get(name, "not settable by an agent")


class BadInput(ValueError):
    """Input the build cannot start with (a missing file, an unknown option, ...): a tool error, not a crash."""


def _clip(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class _Entry:
    def __init__(self, build_id: str, build: Build, model: str) -> None:
        self.id = build_id
        self.build = build
        self.model = model
        self.created_at = time.time()
        self.ended_at: float | None = None
        self.stop_requested_at: float | None = None
        self.held = False  # a command waits on it (LSP build, MCP build_engine): kept until it lets go
        build.add_done_callback(self._ended)

    def _ended(self, _build: object) -> None:
        self.ended_at = time.time()


def _not_an_engine(output: str) -> str:
    """Why an agent's build may not replace the file at ``output`` ("" when nothing is there, or an engine is: its
    manifest beside it names it, or it begins as a TensorRT for RTX engine). An agent's ``output`` once turned the
    user's text file into an engine; the CLI and Python API, where the user types the path, are not limited so.
    The file asked about is the one the build writes, resolved as the write resolves it (``DIR/nosuch/../x`` is
    ``DIR/x`` there, where the kernel finds no ``nosuch``)."""
    import os

    from ..provenance import ManifestError, manifest_path, read_engine_header, read_manifest

    try:
        given = expand_user(output)
        where = resolve(given)
        if not os.path.lexists(where) or os.path.isdir(where):  # a folder: the build's own check refuses it
            return ""
        try:  # the manifest where the build reads and writes it, naming the engine as the build names it
            if not read_manifest(resolve(manifest_path(given))).names_other(given):
                return ""
        except (ManifestError, OSError):  # FileNotFoundError among them: no manifest
            pass
        if read_engine_header(where) is not None:
            return ""
    except (OSError, ValueError) as exc:  # a FIFO, a device, a path stat() refuses
        return f"output {output} cannot be checked ({getattr(exc, 'strerror', None) or exc}): choose another output"
    return (
        f"output {output} exists and is not an engine (no manifest beside it names it): an agent's build replaces "
        "only an engine; remove the file or choose another output"
    )


def _not_a_manifest(output: str) -> str:
    """Why an agent's build may not write the engine's manifest, ``<output>.manifest.json`` ("" when nothing is
    there, or a trt_widget manifest is): the same policy as the engine's own path, for the file written beside it,
    resolved as the write resolves it."""
    import os

    from ..provenance import ManifestError, manifest_path, read_manifest

    where = f"{output}.manifest.json"  # as named, should the path itself be refused
    try:
        where = str(resolve(manifest_path(expand_user(output))))
        if not os.path.lexists(where):
            return ""
        read_manifest(where)
        return ""
    except ManifestError:  # another tool's JSON, any other file, a FIFO or a folder (never read or waited on)
        pass
    except (OSError, ValueError) as exc:  # a dangling link, a name too long, a path stat() refuses
        said = getattr(exc, "strerror", None) or exc
        return f"the engine's manifest {where} cannot be checked ({said}): choose another output"
    return (
        f"{where} exists and is not a trt_widget manifest: an agent's build writes the engine's manifest there and "
        "replaces only a manifest; remove the file or choose another output"
    )


class BuildRegistry:
    """Builds by id, for every tool of one server (thread-safe: HTTP sessions share one registry). At most
    ``max_concurrent`` build at once; the others wait with status ``queued`` (a stop ends a queued build at once),
    ``max_waiting`` of them at most: more are refused until one has ended."""

    def __init__(
        self, keep: int = KEEP, *, max_concurrent: int = MAX_CONCURRENT, max_waiting: int = MAX_WAITING
    ) -> None:
        from ..matrix import Slots

        if not json_int(max_concurrent) or max_concurrent < 1:
            raise ValueError(f"max_concurrent must be an integer of at least 1, got {max_concurrent!r}")
        self.keep = keep
        self.max_concurrent = max_concurrent
        self.max_waiting = max_waiting
        self._slots = Slots(max_concurrent)
        self._entries: dict[str, _Entry] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def create(
        self,
        model: str,
        *,
        options: Mapping[str, object] | None = None,
        budget: float | None = None,
        output: str | None = None,
        held: bool = False,
    ) -> tuple[str, Build]:
        """A new, not yet started Build of the ONNX file ``model`` (its id and the build); raises BadInput.
        ``held``: a command waits on it, and it is kept (not forgotten for newer builds) until `release`."""
        from .._build import Build
        from .._options import BuildOptions

        with self._lock:
            live = sum(1 for entry in self._entries.values() if not entry.build.done())
        if live >= self.max_concurrent + self.max_waiting:
            raise BadInput(f"too many builds: {live} running or queued (at most {self.max_concurrent} at once and "
                           f"{self.max_waiting} waiting); stop one or wait until one has ended")  # fmt: skip
        try:
            path = model_file(model)
        except BadModelPath as exc:  # missing, not a file, ~name of no user, or a path stat() refuses
            raise BadInput(str(exc)) from None
        if options is not None and not isinstance(options, Mapping):
            raise BadInput(f"options must be an object of build options, got {type(options).__name__}")
        options = dict(options or {})
        known = [f.name for f in fields(BuildOptions)]
        allowed = _agent_options()
        for name in options:
            if name in allowed:
                continue
            if name in ("budget", "output"):
                raise BadInput(f"give {name!r} as the tool's own argument, not in options")
            if name in known:
                raise BadInput(f"option {name!r} cannot be set here: {_refusal(name)}")
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise BadInput(f"unknown build option {name!r}{hint} Options: {', '.join(allowed)}")
        output = output or str(path.with_suffix(".engine"))
        try:
            # the names were checked above; Build checks the values (TypeError / ValueError: BadInput)
            checked: BuildOptionsDict = {**cast("BuildOptionsDict", options), "output": output, "budget": budget}
            build = Build(str(path), **checked)
        except (TypeError, ValueError, OSError) as exc:
            raise BadInput(str(exc)) from None
        # after Build's own output checks, which say more (the model itself, ...)
        refusal = _not_an_engine(output) or _not_a_manifest(output)
        if refusal:
            raise BadInput(refusal)
        from ..matrix import SlotRunner

        build.runner = SlotRunner(build.runner, self._slots)
        with self._lock:
            build_id = f"b{next(self._ids)}"
            entry = _Entry(build_id, build, str(path))
            entry.held = held
            self._entries[build_id] = entry
            self._forget_old()
        return build_id, build

    def start(self, build_id: str) -> None:
        """Start the build; BadInput, and the build forgotten, when it cannot start (another running build of this
        process writes the same output file: two engines in one file, the last would win without a word)."""
        entry = self.entry(build_id)
        try:
            entry.build.start()
        except ValueError as exc:
            with self._lock:
                self._entries.pop(build_id, None)
            raise BadInput(str(exc)) from None

    def settle(self, build_id: str, timeout: float = SETTLE_S) -> None:
        """Wait (up to ``timeout``) until the started build holds a slot or waits for one, so that its status says
        which (``queued`` or ``running``): it is set on the build's own thread, after ``start()`` returns."""
        from ..matrix import SlotRunner

        build = self.entry(build_id).build
        runner = build.runner
        if not isinstance(runner, SlotRunner):
            return
        deadline = time.monotonic() + timeout
        while not runner.placed.wait(0.05) and not build.done() and time.monotonic() < deadline:
            pass

    def release(self, build_id: str) -> None:
        """The command that waited on the build is done with it: it may be forgotten for newer builds now."""
        with self._lock:
            entry = self._entries.get(build_id)
            if entry is not None:
                entry.held = False
                self._forget_old()

    def _forget_old(self) -> None:
        for build_id in list(self._entries):
            if len(self._entries) <= self.keep:
                return
            entry = self._entries[build_id]
            if entry.build.done() and not entry.held:
                del self._entries[build_id]

    def entry(self, build_id: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(build_id)
            known = list(self._entries)
        if entry is None:
            hint = f"; known builds: {', '.join(known[-10:])}" if known else "; no builds yet"
            raise BadInput(f"no build with id {build_id!r}{hint}")
        return entry

    def id_of(self, build: Build) -> str:
        with self._lock:
            return next(e.id for e in self._entries.values() if e.build is build)

    def entries(self) -> list[_Entry]:
        """Every remembered build, newest first."""
        with self._lock:
            return list(self._entries.values())[::-1]

    def stop(self, build_id: str, reason: str = "stopped by the MCP client") -> bool:
        entry = self.entry(build_id)
        asked = bool(entry.build.stop(reason))
        if asked and entry.stop_requested_at is None:
            entry.stop_requested_at = time.time()
        return asked

    def stop_all(self, reason: str) -> None:
        for entry in self.entries():
            entry.build.stop(reason)

    # -- what the tools return -------------------------------------------------------------------------
    def describe(self, build_id: str) -> BuildDescription:
        """Status, engine path and size, build time, running phase, top phases, warnings, error with its cause."""
        entry = self.entry(build_id)
        build = entry.build
        final = bool(build.done())
        error = build.error if build.status == "failed" else None
        cause = error.__cause__ if error is not None else None
        engine_path = build.options.output if build.status == "succeeded" and build.options.output else None
        return {
            "build_id": entry.id,
            "model": entry.model,
            "status": build.status,
            "detail": _clip(build.status_detail or ""),
            "build_s": round(build.elapsed_s, 3),
            "phase": path_label(running_path(build)) if not final else "",
            "engine_path": engine_path,
            "engine_bytes": build.engine_size if build.status == "succeeded" else None,
            "top_phases": top_phases(build.timings(), TOP) if final else [],
            "warnings": [_clip(p["message"]) for p in build.problems if p.get("severity") == "WARNING"][:10],
            "error": _clip(str(error)) if error is not None else None,
            "error_cause": _clip(f"{type(cause).__name__}: {cause}") if cause is not None else None,
            "created_at": round(entry.created_at, 3),
            "ended_at": round(entry.ended_at, 3) if entry.ended_at is not None else None,
            "engine": _engine(build) if build.status == "succeeded" else None,
        }

    def timings(self, build_id: str, top: int = 10) -> TimingsDescription:
        """Where the time went: phases by self time, and the comparison with the last matching build."""
        entry = self.entry(build_id)
        build = entry.build
        if not build.done():
            raise BadInput(f"build {build_id} is still {build.status}: timings come once it has ended")
        return {
            "build_id": entry.id,
            "status": build.status,
            "build_s": round(build.elapsed_s, 3),
            "top_phases": top_phases(build.timings(), max(1, min(top, 100))),
            "comparison": _comparison(build, max(1, min(top, 100))),
        }


def _engine(build: Build) -> JSONObject:
    """What the engine holds, briefly (EngineReport.brief): layers, precision mix, types, memory; or why not."""
    report = build.engine_report
    if report is None:
        return {"report": None, "reason": _clip(build.engine_report_reason)}
    return report.brief()


def top_phases(rows: Sequence[PhaseRow], count: int) -> list[TopPhase]:
    """Phase names by self time (time not spent in a child phase), over their finished instances."""
    children: dict[int, float] = {}
    for row in rows:
        if row and row["parent"] is not None and row["duration_s"] is not None:
            children[row["parent"]] = children.get(row["parent"], 0.0) + row["duration_s"]
    totals: dict[str, list[float]] = {}
    for row in rows:
        if not row or row["duration_s"] is None:
            continue
        own = max(row["duration_s"] - children.get(row["id"], 0.0), 0.0)
        total = totals.setdefault(row["name"], [0.0, 0])
        total[0] += own
        total[1] += 1
    best = sorted(totals.items(), key=lambda item: -item[1][0])[:count]
    return [{"name": name, "self_s": round(s, 3), "instances": int(n)} for name, (s, n) in best]


def _comparison(build: Build, count: int) -> HistoryComparison | None:
    """This build against the newest succeeded build with the same model and options (its history match)."""
    link = getattr(build, "history", None)
    if link is None:
        return None
    link.ready.wait(5.0)
    if link.match is None:
        return None
    from ..history import compare

    rows = compare(link.match, build)
    total = next((r for r in rows if r["path"] == "(total)"), None)
    changed: list[tuple[float, PhaseChange]] = []
    for r in rows:
        a_s, b_s, delta = r["a_s"], r["b_s"], r["delta"]
        if r["path"] != "(total)" and a_s is not None and b_s is not None and delta is not None:
            change: PhaseChange = {
                "path": r["path"],
                "previous_s": round(a_s, 3),
                "now_s": round(b_s, 3),
                "delta_s": round(delta, 3),
            }
            changed.append((delta, change))
    changed.sort(key=lambda item: -abs(item[0]))
    previous_s = total["a_s"] if total else None
    delta_s = total["delta"] if total else None
    return {
        "previous": link.based_on,
        "previous_s": round(previous_s, 3) if previous_s is not None else None,
        "delta_s": round(delta_s, 3) if delta_s is not None else None,
        "phases": [change for _, change in changed[:count]],
    }
