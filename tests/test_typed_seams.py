"""The types where modules meet agree with each other and with the JavaScript that reads them: the build and phase
statuses (``Literal``), the phase row (``PhaseRow``) and what ``js/src/build`` says it reads."""

from __future__ import annotations

import re
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest

from trt_widget import models
from trt_widget._build import TIMING_COLUMNS, Build
from trt_widget._phases import PHASE_STATUSES, PhaseRow, PhaseStatus
from trt_widget._status import BUILD_STATUSES, BuildStatus

JS = Path(__file__).resolve().parents[1] / "js" / "src" / "build"


def test_the_status_literals_are_the_status_lists() -> None:
    assert get_args(BuildStatus) == BUILD_STATUSES
    assert get_args(PhaseStatus) == PHASE_STATUSES


def test_the_js_row_status_is_the_phase_status() -> None:
    typedef = re.search(r"@typedef \{([^}]*)\} RowStatus", (JS / "structure.js").read_text(encoding="utf-8"))
    assert typedef is not None
    # plus the view's own "interrupted": a row still running when the kernel went away (no phase model says it)
    assert set(re.findall(r'"([\w-]+)"', typedef.group(1))) == {*get_args(PhaseStatus), "interrupted"}


def test_the_js_traits_say_every_build_status_and_the_row_keys() -> None:
    source = (JS / "widget.js").read_text(encoding="utf-8")
    status = re.search(r"@property \{string\} status ([\w |]+)\n", source)
    assert status is not None and [s.strip() for s in status.group(1).split("|")] == list(BUILD_STATUSES)
    keys = re.search(r"phases_json the phase rows as one JSON text: \[\{([^}]*)\}", source)
    assert keys is not None
    assert [k.strip() for k in keys.group(1).replace("*", "").split(",")] == list(PhaseRow.__annotations__)


def test_a_real_builds_rows_have_the_phase_row_keys_and_types() -> None:
    build = Build(models.deep_residual(2), history=False, resources=False, isolation="thread").start()
    assert build.wait(120) == "succeeded"
    rows = build.timings()
    assert rows and all(list(row) == [*PhaseRow.__annotations__, "ended_early"] == TIMING_COLUMNS for row in rows)
    assert all(row["status"] in get_args(PhaseStatus) for row in rows)


def test_the_snapshot_type_is_the_widgets_synced_state_and_a_real_snapshot() -> None:
    from trt_widget import BuildWidget
    from trt_widget._snapshot import Snapshot, snapshot

    fields = list(Snapshot.__annotations__)
    # the rows travel encoded
    wire = {*fields} - {"phases"} | {"phases_json", "phases_seq", "phases_delta"}
    assert wire == set(BuildWidget.class_own_traits(sync=True))
    build = Build(models.deep_residual(2), history=False, resources=False, isolation="thread")
    assert list(snapshot(build)) == fields
    build.start().wait(120)
    final = snapshot(build)
    assert list(final) == fields and final["status"] == "succeeded" and final["phases"] == build.model.rows()


@pytest.mark.slow  # a whole mypy run: ~20 s of CPU on a cold cache, under a second on the one check.sh warmed
def test_a_user_of_the_package_gets_the_types(tmp_path: Path) -> None:
    """``from trt_widget import Build, BuildWidget`` names the real classes for a type checker (the names load
    lazily at run time): ``await build`` is bytes, ``widget.result`` Build's own signature, statuses Literals."""
    from mypy import api

    user = tmp_path / "user.py"
    user.write_text(
        "from trt_widget import Build, BuildWidget\n"
        "def use(b: Build, w: BuildWidget) -> None:\n"
        "    reveal_type(w.result)\n"
        "    reveal_type(b.wait())\n"
        "    reveal_type(w.start())\n"
        "async def wait(b: Build) -> None:\n"
        "    reveal_type(await b)\n",
        encoding="utf-8",
    )
    # incremental, on the project's cache (scripts/check.sh, run first by scripts/test.sh, fills it): mypy re-checks
    # every module whose source changed, so the answer is a cold run's
    cache = Path(__file__).resolve().parent.parent / ".mypy_cache"
    out, _err, _code = api.run(["--strict", "--cache-dir", str(cache), str(user)])
    revealed = re.findall(r'Revealed type is "(.*)"', out)
    assert revealed[0] == "def (timeout: float | None =) -> bytes", out
    assert revealed[1].startswith("Literal['idle'] | Literal['queued']"), out
    assert revealed[2] == "trt_widget._widget.BuildWidget" and revealed[3] == "bytes", out


def _hints(cls: type) -> dict[str, object]:
    from trt_widget import _json

    return get_type_hints(cls, localns=vars(_json))  # JSON's own forward references


def _schema_types(prop: dict[str, Any], defs: dict[str, Any]) -> set[object]:
    """A schema property as a set: JSON type names, and the allowed values of a ``const``/``enum``."""
    if "$ref" in prop:
        return _schema_types(defs[prop["$ref"].rsplit("/", 1)[1]], defs)
    if "const" in prop:
        return {("value", prop["const"])}
    if "enum" in prop:
        return {("value", value) for value in prop["enum"]}
    if "oneOf" in prop:
        return set().union(*(_schema_types(option, defs) for option in prop["oneOf"]))
    kinds = prop["type"]
    return set(kinds) if isinstance(kinds, list) else {kinds}


def _python_types(hint: object) -> set[object]:
    """A TypedDict field's type as the same kind of set."""
    if get_origin(hint) is Literal:
        return {("value", value) for value in get_args(hint)}
    if get_origin(hint) in (Union, UnionType):
        return set().union(*(_python_types(arg) for arg in get_args(hint)))
    names = {int: "integer", float: "number", str: "string", type(None): "null", bool: "boolean"}
    return {"object"} if get_origin(hint) is dict else {names[hint]}  # type: ignore[index]


def test_each_event_typeddict_is_its_schema_definition() -> None:
    """One TypedDict per event of events.schema.json, with its keys, its required keys, and its values' types
    (statuses and severities as Literals with the schema's values), so the two cannot drift apart."""
    from trt_widget._events import EVENT_TYPES, schema

    events: dict[str, Any] = schema()
    defs = events["$defs"]
    names = [ref["$ref"].rsplit("/", 1)[1] for ref in events["oneOf"]]
    typed = {get_args(_hints(cls)["event"])[0]: cls for cls in EVENT_TYPES}
    assert list(typed) == names  # one each, in the schema's order
    for name, cls in typed.items():
        definition = defs[name]
        properties = definition["properties"]
        assert list(cls.__annotations__) == list(properties), name
        assert cls.__required_keys__ == set(definition["required"]), name  # type: ignore[attr-defined]
        hints = _hints(cls)
        for key, prop in properties.items():
            assert _python_types(hints[key]) == _schema_types(prop, defs), f"{name}.{key}"


def test_a_real_builds_events_are_the_typeddicts() -> None:
    from trt_widget._events import EVENT_TYPES, Event

    typed = {get_args(_hints(cls)["event"])[0]: cls for cls in EVENT_TYPES}
    events: list[Event] = []  # a sink typed with the events' own types
    for model, ends in ((models.deep_residual(2), "succeeded"), (b"not onnx", "failed")):  # the failed one logs
        build = Build(model, history=False, resources=False, isolation="thread", events=events.append)
        assert build.start().wait(120) == ends and build.events is not None and build.events.join(30)
    assert {event["event"] for event in events} == set(typed)  # every kind, a succeeded build's report included
    for event in events:
        assert list(event) == list(typed[event["event"]].__annotations__)


def _js_typedefs(source: str) -> dict[str, str]:
    """``@typedef {BODY} Name`` of a JSDoc source: name -> body (braces balanced, comment stars removed)."""
    found: dict[str, str] = {}
    for start in (m.end() for m in re.finditer(r"@typedef \{", source)):
        depth, end = 1, start
        while depth:
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            end += 1
        name = re.match(r"\s*(\w+)", source[end:])
        assert name is not None
        found[name.group(1)] = re.sub(r"\n\s*\*", " ", source[start : end - 1])
    return found


def _js_alternatives(name: str, typedefs: dict[str, str]) -> set[frozenset[tuple[str, str]]]:
    """A message union of shared/messages.js as a set of {key: "literal" or type name} alternatives."""
    alternatives: set[frozenset[tuple[str, str]]] = set()
    for part in re.findall(r"\{[^}]*\}|\w+", typedefs[name]):
        if not part.startswith("{"):
            alternatives |= _js_alternatives(part, typedefs)  # another typedef
            continue
        fields = re.findall(r"(\w+): (\"[\w-]+\"|\w+)", part)
        alternatives.add(frozenset((key, value.strip('"')) for key, value in fields))
    return alternatives


def _py_alternatives(union: object) -> set[frozenset[tuple[str, str]]]:
    """A message union of trt_widget._messages in the same form."""
    js_names = {int: "number", bool: "boolean", str: "string"}
    alternatives: set[frozenset[tuple[str, str]]] = set()
    for cls in get_args(union) or (union,):  # a union, or one message type
        fields = []
        for key, hint in get_type_hints(cls).items():
            value = get_args(hint)[0] if get_origin(hint) is Literal else js_names[hint]
            fields.append((key, value))
        alternatives.add(frozenset(fields))
    return alternatives


def test_the_widget_messages_are_the_same_in_python_and_javascript() -> None:
    """What the front end sends (``js/src/shared/messages.js``, checked at each send by tsc) is what the widgets
    read (``trt_widget/_messages.py``): the same alternatives, keys and literal types."""
    from trt_widget import _messages

    source = (JS.parent / "shared" / "messages.js").read_text(encoding="utf-8")
    typedefs = _js_typedefs(source)
    assert set(typedefs) == {"ViewMessage", "BuildMessage", "RowsMessage", "KernelMessage"}
    for name in ("BuildMessage", "RowsMessage", "KernelMessage"):
        assert _js_alternatives(name, typedefs) == _py_alternatives(getattr(_messages, name)), name
    sources = "".join(path.read_text("utf-8") for path in JS.parent.rglob("*.js"))
    types = {value for name in typedefs for alt in _js_alternatives(name, typedefs) for k, value in alt if k == "type"}
    assert set(re.findall(r'send\(\{ type: "([\w-]+)"', sources)) <= types  # each literal sent is declared


def test_messages_from_the_browser_are_read_into_their_types_or_refused() -> None:
    from trt_widget._messages import build_message, rows_message

    assert build_message({"type": "stop", "extra": 1}) == {"type": "stop"}
    bad: list[object] = [None, [], "stop", {"type": "stop_all"}, {}]
    assert [build_message(content) for content in bad] == [None] * 5
    assert rows_message({"type": "expand", "build": 1}, rows=2) == {"type": "expand", "build": 1, "open": True}
    assert rows_message({"type": "expand", "build": 0, "open": 0}, rows=2) == {
        "type": "expand",
        "build": 0,
        "open": False,
    }
    assert rows_message({"type": "stop_all", "build": "x"}, rows=0) == {"type": "stop_all"}
    refused: list[object] = [
        {"type": "stop", "build": 2},
        {"type": "stop", "build": -1},
        {"type": "stop", "build": "0"},
        {"type": "x", "build": 0},
        [],
    ]
    assert [rows_message(content, rows=2) for content in refused] == [None] * len(refused)
