"""A Build's methods on a view of it (``BuildWidget``): one line per name, typed from Build's own signature, so a
view copies no body or docstring that could drift from Build's.

``then`` names the view's method that runs after the call — once an awaitable it returned has ended, and also
when the call raises — e.g. "show the final state" after a wait. The build's own method is called (a subclass's
override included: ``RemoteBuild.stop``).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

if TYPE_CHECKING:
    from ._build import Build

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
V = TypeVar("V", bound="BuildView")


class BuildView(Protocol):
    """What shows a build: it holds the Build it shows."""

    @property
    def build(self) -> Build: ...


def _then(result: T, hook: Callable[[], object]) -> T:
    """``result``, with ``hook`` run once it has ended: now, or when an awaitable it is has been awaited (the
    wrapper stands in for it: a coroutine for a coroutine, a generator for an ``__await__`` iterator)."""
    if isinstance(result, types.CoroutineType):
        coroutine = result

        async def awaited() -> object:
            try:
                return await coroutine
            finally:
                hook()

        return cast(T, awaited())
    if isinstance(result, Generator):  # an __await__ iterator
        generator = result

        def iterated() -> Generator[object, object, object]:
            try:
                return (yield from generator)
            finally:
                hook()

        return cast(T, iterated())
    hook()
    return result


class _Named:
    name: str

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} delegates Build.{self.name}: use the same name")


class Delegate(_Named, Generic[P, R]):
    """``name = Delegate(Build.name, then="_hook")``: the view's ``name(...)`` is ``view.build.name(...)``."""

    def __init__(self, method: Callable[Concatenate[Build, P], R], *, then: str | None = None) -> None:
        self.name = method.__name__
        self.then = then
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, view: None, owner: type) -> Delegate[P, R]: ...
    @overload
    def __get__(self, view: BuildView, owner: type) -> Callable[P, R]: ...
    def __get__(self, view: BuildView | None, owner: type) -> Delegate[P, R] | Callable[P, R]:
        if view is None:
            return self
        method = cast("Callable[P, R]", getattr(view.build, self.name))
        if self.then is None:
            return method
        hook = cast("Callable[[], object]", getattr(view, self.then))

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                result = method(*args, **kwargs)
            except BaseException:
                hook()
                raise
            return _then(result, hook)

        call.__doc__ = self.__doc__
        return call


class Chained(_Named, Generic[P]):
    """A Build method that returns the build (``start``): on the view it returns the view, so
    ``BuildWidget(...).start()`` as a cell's last expression displays the widget."""

    def __init__(self, method: Callable[Concatenate[Build, P], Build], *, then: str | None = None) -> None:
        self.name = method.__name__
        self.then = then
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, view: None, owner: type) -> Chained[P]: ...
    @overload
    def __get__(self, view: V, owner: type) -> Callable[P, V]: ...
    def __get__(self, view: V | None, owner: type) -> Chained[P] | Callable[P, V]:
        if view is None:
            return self
        shown = view
        method = cast("Callable[P, Build]", getattr(view.build, self.name))
        hook = cast("Callable[[], object] | None", getattr(view, self.then) if self.then else None)

        def call(*args: P.args, **kwargs: P.kwargs) -> V:
            method(*args, **kwargs)
            if hook is not None:
                hook()
            return shown

        call.__doc__ = self.__doc__
        return call


class Attribute(_Named, Generic[T]):
    """``name = Attribute(lambda build: build.name)``: a read-only attribute of the build, on the view."""

    def __init__(self, read: Callable[[Build], T], name: str) -> None:
        self.read = read
        self.name = name

    @overload
    def __get__(self, view: None, owner: type) -> Attribute[T]: ...
    @overload
    def __get__(self, view: BuildView, owner: type) -> T: ...
    def __get__(self, view: BuildView | None, owner: type) -> Attribute[T] | T:
        return self if view is None else self.read(view.build)


__all__ = ["Attribute", "BuildView", "Chained", "Delegate"]
