"""Public signatures name what they take with type aliases, not ``Any``: mypy --strict checks callers against them
and the API docs show them."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from trt_widget import Build, BuildMatrix, BuildWidget
from trt_widget._engine import ModelLike
from trt_widget.matrix import Executor, ModelsLike
from trt_widget.runners import Recording

PARAMETERS = [
    (Build.from_events, "recording", "Recording", Recording),
    (BuildWidget.from_events, "recording", "Recording", Recording),
    (BuildMatrix.__init__, "models", "ModelsLike", ModelsLike),
    (BuildMatrix.__init__, "executor", "Executor", Executor),
]


@pytest.mark.parametrize(("fn", "name", "alias", "value"), PARAMETERS, ids=lambda p: getattr(p, "__qualname__", None))
def test_the_parameter_is_typed_with_its_alias(fn: Callable[..., Any], name: str, alias: str, value: object) -> None:
    annotation = inspect.signature(fn).parameters[name].annotation
    assert annotation == alias
    assert fn.__globals__[alias] is value  # the name the signature uses is the public alias


def test_the_aliases_say_what_is_accepted() -> None:
    models = set(typing.get_args(ModelsLike))
    assert set(typing.get_args(ModelLike)) <= models
    assert {list[ModelLike], tuple[ModelLike, ...], Mapping[str, ModelLike]} <= models
    assert set(typing.get_args(Executor)) == {typing.Literal["local", "ray"], typing.ForwardRef("RayRunner")}
    *paths, lines = typing.get_args(Recording)  # a path, or an iterable of JSON lines or event dicts
    assert str in paths
    assert set(typing.get_args(typing.get_args(lines)[0])) == {str, bytes, dict[str, Any]}
