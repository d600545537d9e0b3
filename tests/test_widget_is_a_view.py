"""``BuildWidget`` is a view of a ``Build``: it defines none of Build's public methods again (each one it offers
reaches the build through ``_view``), and Build's API works on it, typed, as on the build."""

from __future__ import annotations

import inspect
from typing import Any

import traitlets

from trt_widget import Build, BuildWidget, models
from trt_widget._build import Build as CoreBuild
from trt_widget._view import Attribute, Chained, Delegate

CONSTRUCTORS = {"from_events"}  # the widget's own named constructor: it makes a widget, not a build


def public(cls: type) -> set[str]:
    """Everything a class offers (its own names and its bases'): public names and ``await``."""
    return {name for name in dir(cls) if not name.startswith("_") or name == "__await__"}


def copied(view: type, shown: type) -> set[str]:
    """The names of ``shown``'s public surface that ``view`` defines itself: neither a delegate nor a trait."""
    own = vars(view)
    delegates = (Delegate, Chained, Attribute, traitlets.TraitType)
    return {name for name in public(shown) & set(own) if not isinstance(own[name], delegates)}


def test_the_widget_copies_none_of_builds_methods() -> None:
    builds = public(CoreBuild)
    assert {"done", "wait", "result", "start", "save", "__await__"} <= builds
    widget = vars(BuildWidget)
    # traits are the view's synced state; delegates call the build's own method
    assert copied(BuildWidget, CoreBuild) == CONSTRUCTORS
    fields = {name for name in vars(CoreBuild(models.deep_residual(2), history=False)) if not name.startswith("_")}
    assert "reused_from" in fields  # a build's public fields (set in its constructor) are its API too
    assert {name for name in widget if isinstance(widget[name], (Delegate, Chained, Attribute))} <= builds | fields
    assert inspect.isfunction(vars(BuildWidget)["to_json"])  # the widget's own: its state, not Build's


def test_builds_api_on_the_widget_is_the_builds(tmp_path: Any) -> None:
    widget = BuildWidget(models.deep_residual(2), history=False)
    assert widget.start() is widget  # a cell's last expression: the widget displays
    assert widget.wait(120) == "succeeded" and widget.status == "succeeded"  # the final state is shown
    assert widget.result() == widget.engine == widget.build.engine and widget.future is widget.build
    assert widget.timings() == widget.build.timings() and widget.done() and not widget.cancelled()
    assert widget.save(str(tmp_path / "m.engine")) == str(tmp_path / "m.engine")
    assert BuildWidget.result.__doc__ == Build.result.__doc__  # Build's docstring, not a copy


def test_a_delegated_stop_reaches_a_subclasss_own_stop() -> None:
    class Counting(Build):
        stops = 0

        def stop(self, reason: str = "stopped by user") -> bool:
            Counting.stops += 1
            return super().stop(reason)

    widget = BuildWidget(Counting(models.deep_residual(2), history=False))
    assert widget.stop() is False and Counting.stops == 1  # not started: nothing to stop, but it was asked


WATCH_OWN = {"stop"}  # Stop all: the widget's button, which also shows the notice it returns (also with no call)


def test_the_watch_widget_copies_none_of_the_watched_calls_methods() -> None:
    """``WatchWidget`` is a view of a :class:`WatchedCall` as ``BuildWidget`` is of a Build: what both offer
    reaches the call (or its watch) through ``_view``'s delegates."""
    from trt_widget.watch import WatchedCall
    from trt_widget.watch._widget import WatchWidget

    assert {"done", "result", "exception", "timings", "builds", "__await__"} <= public(WatchedCall)
    assert copied(WatchWidget, WatchedCall) == WATCH_OWN
    assert WatchWidget.result.__doc__ == WatchedCall.result.__doc__
