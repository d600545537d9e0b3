"""A Build's methods on a view of it (``BuildWidget``): one line per name, typed from Build's own signature, so a
view copies no body or docstring that could drift from Build's. ``via`` names the view's attribute that holds
what it shows when that is not ``build`` (``WatchWidget`` shows a ``WatchedCall``: ``via="call"``).

``before`` names the view's method that runs just before the call (a REPL's live view while a wait blocks);
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
S = TypeVar("S")
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
    via: str = "build"

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} delegates {self.via}.{self.name}: use the same name")


class Delegate(_Named, Generic[S, P, R]):
    """``name = Delegate(Build.name, then="_hook")``: the view's ``name(...)`` is ``view.build.name(...)``
    (``view.<via>.name(...)`` with ``via``)."""

    def __init__(
        self,
        method: Callable[Concatenate[S, P], R],
        *,
        then: str | None = None,
        before: str | None = None,
        via: str = "build",
    ) -> None:
        self.name = method.__name__
        self.then = then
        self.before = before
        self.via = via
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, view: None, owner: type) -> Delegate[S, P, R]: ...
    @overload
    def __get__(self, view: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, view: object | None, owner: type) -> Delegate[S, P, R] | Callable[P, R]:
        if view is None:
            return self
        method = cast("Callable[P, R]", getattr(getattr(view, self.via), self.name))
        if self.then is None:
            return method
        hook = cast("Callable[[], object]", getattr(view, self.then))
        first = cast("Callable[[], object] | None", getattr(view, self.before) if self.before else None)

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            if first is not None:
                first()
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


class Attribute(_Named, Generic[S, T]):
    """``name = Attribute(lambda build: build.name, "name")``: a read-only attribute of the build, on the view
    (of ``view.<via>`` with ``via``: then ``read`` is a typed function of it)."""

    @overload
    def __init__(self: Attribute[Build, T], read: Callable[[Build], T], name: str) -> None: ...
    @overload
    def __init__(self, read: Callable[[S], T], name: str, *, via: str) -> None: ...
    def __init__(self, read: Callable[[S], T] | Callable[[Build], T], name: str, *, via: str = "build") -> None:
        self.read = cast("Callable[[S], T]", read)
        self.name = name
        self.via = via

    @overload
    def __get__(self, view: None, owner: type) -> Attribute[S, T]: ...
    @overload
    def __get__(self, view: object, owner: type) -> T: ...
    def __get__(self, view: object | None, owner: type) -> Attribute[S, T] | T:
        return self if view is None else self.read(getattr(view, self.via))


__all__ = ["Attribute", "BuildView", "Chained", "Delegate"]
