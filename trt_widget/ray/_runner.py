"""``RayRunner``: a :class:`~trt_widget.runners.Runner` building on a Ray cluster (``pip install "trt_widget[ray]"``).

Each build is one Ray task (``num_gpus=1`` where the cluster has GPUs, else ``num_cpus=1``; Ray queues it until
a worker is free: the build's status is ``queued`` until the task reports in). In the task a thread-isolated
:class:`~trt_widget.Build` runs; its JSON events (``trt_widget._events``) and every log line go to one hub
actor per driver, which the driver long-polls from the build's own thread and feeds into the local phase model
with :func:`trt_widget.runners.apply_event` — so the widget, terminal and events see an ordinary build. The
engine comes back as the task's return value (bytes through Ray's object store).

Stop has the two stages of a local build: the hub's cancel flag, which a thread in the task waits on and turns
into the remote build's graceful stop (at TensorRT's next step boundary); then, when the task has not ended
``force_after`` s (0.1) later or on a second Stop, ``ray.cancel(force=True)``, which kills its worker process.
A queued task is taken off Ray's queue at once. A worker that dies ends the build failed, naming where.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING

from .._errors import BuildError
from .._format import escape_controls
from .._leftovers import private_dir, remove_private_dir
from .._options import builder_options
from ..runners import RunContext
from ._remote import Hub, RayJob, RayResult, remote_build

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.actor import ActorHandle
    from ray.remote_function import RemoteFunction

    from .._json import JSON, JSONObject

POLL_S = 0.05  # how often the driver looks at Stop while waiting for Ray
PULL_S = 0.5  # a long poll of the hub returns at once with events, else after this long
REMOTE_OPTIONS = builder_options()  # the options applied where TensorRT runs

_init_lock = threading.Lock()
_initializer = ThreadPoolExecutor(1, thread_name_prefix="trt_widget-ray-init")  # its thread lives as long as we do
_hub_lock = threading.Lock()
_hub: tuple[str, ActorHandle[Hub]] | None = None  # (job id, hub actor handle) for this driver's Ray session
_task: RemoteFunction | None = None  # the Ray remote function of remote_build (exported once per process)
PREFIX = "trt_widget-ray-"  # the private folders of ray.init: the job's working_dir, a local instance's session
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107  # AF_UNIX's 104 / 108 bytes, less the final NUL
_instance_lock = threading.Lock()
# the private folder of the local instance this process started, while it lives, and the ray module that started it
_instance: tuple[str, ModuleType] | None = None
_end_registered = False


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise BuildError('executor "ray" needs Ray: pip install "trt_widget[ray]" (or pip install ray)') from exc
    return ray


class _NoSigtermWarning(logging.Filter):
    """Drops Ray's "SIGTERM handler is not set because current thread is not the main thread." (issue 39: it
    landed in the notebook cell). Known harmless here: that handler only turns a SIGTERM of this process into
    ``sys.exit``, which a signal handler can do on the main thread only; Ray still shuts its local instance
    down at this process's exit. Every other record of Ray's logger passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


_RAY_WORKER_LOGGER = "ray._private.worker"  # where ray.init logs that warning (Ray 2.x)


def ensure_ray(address: str | None = None, init_kwargs: Mapping[str, object] | None = None) -> ModuleType:
    """Connect to Ray once: ``ray.init(address)`` unless initialised (no address: ``RAY_ADDRESS`` or a local
    instance). Returns the ray module.

    A local instance is started from one long-lived thread: Ray ties its processes' death signal to the thread
    that started them, so starting it from a build's thread would end the instance with that thread. Called on
    the main thread (the CLI does, before its builds), it starts there: Ray then sets its SIGTERM handler (which
    shuts the instance down); elsewhere (a notebook's builds) Ray's warning that it could not is filtered out."""
    ray = _ray()
    with _init_lock:
        if not ray.is_initialized():
            if threading.current_thread() is threading.main_thread():
                _init(ray, address, init_kwargs)
            else:
                worker_log = logging.getLogger(_RAY_WORKER_LOGGER)
                if not any(isinstance(f, _NoSigtermWarning) for f in worker_log.filters):
                    worker_log.addFilter(_NoSigtermWarning())
                _initializer.submit(_init, ray, address, init_kwargs).result()
    return ray


def _init(ray: ModuleType, address: str | None, init_kwargs: Mapping[str, object] | None) -> None:
    """``ray.init`` with an empty folder of ours as the job's ``working_dir`` (issue 35): Ray otherwise puts this
    process's working directory first on every worker's ``sys.path`` (``py_driver_sys_path``), so a
    ``tensorrt_rtx_bindings.py`` or ``queue.py`` there ran in the worker that builds. A working_dir the caller's
    ``runtime_env``, a submitted Ray job or Ray's ``uv run`` support sets is left to Ray (docs/security.md).

    A local instance started here keeps its session in that private folder too (``_temp_dir``), for its life: under
    the shared ``/tmp/ray`` Ray makes the session's folders 0777 without the sticky bit, so another user swapped
    the unpacked working_dir for theirs (adversary 21b, D2). An instance the caller names or made is theirs."""
    global _instance
    kwargs = dict(init_kwargs or {})
    env = kwargs.get("runtime_env")
    own_cwd = (env is None or isinstance(env, Mapping)) and not _working_dir_given(env)
    local = _starts_local(address) and kwargs.get("_temp_dir") is None
    if local:
        end_local_ray()  # what an earlier start of ours left (shut down since, or failed): its processes, its folder
    made: str | None = None
    if own_cwd or local:
        made = private_dir(PREFIX, _instance_parent() if local else None)  # 0700 (where no one else can rename it)
    try:
        if made is not None and own_cwd:  # its lock file stays outside what Ray uploads
            os.mkdir(os.path.join(made, "cwd"), 0o700)
            given = env if isinstance(env, Mapping) else {}
            kwargs["runtime_env"] = {**given, "working_dir": os.path.join(made, "cwd")}
        if made is not None and local:
            # a folder inside ours: Ray makes its temp dir 0777 (try_make_directory_shared), ours stays 0700
            kwargs["_temp_dir"] = os.path.join(made, "r")
            with _instance_lock:
                _instance = (made, ray)  # the session lives here until the instance ends (end_local_ray)
            _register_end()
        ray.init(address=address, **kwargs)
    except Exception:
        if local:  # a failed start's processes first: they would make its folders again
            end_local_ray()
        elif made is not None:
            remove_private_dir(made)
        raise
    except BaseException:  # a Ctrl-C in ray.init: its half-started processes end at exit, the folder with them
        if made is not None and not local:
            remove_private_dir(made)
        raise
    if made is not None and not local:
        remove_private_dir(made)  # uploaded by now: the workers start in their own copy


def _starts_local(address: str | None) -> bool:
    """Whether ``ray.init(address)`` starts a local instance of ours rather than joining one: no address and no
    ``RAY_ADDRESS`` (Ray's own search of ``/tmp/ray/ray_current_cluster``, a file any user may write there, is not
    made: the private temp dir holds none), or Ray's ``"local"``."""
    return address == "local" or (address is None and not os.environ.get("RAY_ADDRESS"))


def _instance_parent() -> str:
    """Where a local instance's private folder goes: Ray's own choice (``RAY_TMPDIR``, else the temporary folder)
    where Ray's socket paths under it still fit AF_UNIX's 107 bytes, else ``/tmp``."""
    parent = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    pid = str(os.getpid())
    # <parent>/trt_widget-ray-<pid>-XXXXXXXX/r/session_<date>_<time>_<us>_<pid>/sockets/plasma_store
    room = len(f"/{PREFIX}{pid}-XXXXXXXX/r/session_2026-12-07_12-34-56_123456_{pid}/sockets/plasma_store.1")
    if os.name == "posix" and len(os.fsencode(os.path.realpath(parent))) + room > MAX_SOCKET_PATH:
        return "/tmp"
    return parent


def _register_end() -> None:
    """Shut a local instance of ours down at exit before its folder goes (once; registered after Ray's own
    handler, so it runs first)."""
    global _end_registered
    if not _end_registered:
        _end_registered = True
        atexit.register(end_local_ray, exiting=True)


def end_local_ray(*, exiting: bool = False) -> None:
    """Shut down the local Ray instance this process started (if any), waiting for its processes, then remove its
    private folder, session included. An instance the caller started or joined is left alone."""
    global _instance
    with _instance_lock:
        instance, _instance = _instance, None
    if instance is None:
        return
    made, ray = instance
    if hasattr(ray, "shutdown"):  # initialised, or a failed start's processes (Ray's shutdown ends those too)
        import inspect

        wait = (
            {"wait_for_processes": True} if "wait_for_processes" in inspect.signature(ray.shutdown).parameters else {}
        )
        with contextlib.suppress(Exception):  # Ray's own shutdown errors: its processes are ending anyway
            ray.shutdown(_exiting_interpreter=exiting, **wait)
    remove_private_dir(made)


def _working_dir_given(env: Mapping[str, object] | None) -> bool:
    """Whether the job gets a working_dir without ours: the caller's runtime_env, the one ``ray job submit`` passes
    its driver, or Ray's ``uv run`` support (which makes it the uv project, and refuses another)."""
    if env and env.get("working_dir") is not None:
        return True
    try:
        submitted = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}").get("runtime_env") or {}
    except (ValueError, AttributeError):
        submitted = {}
    if isinstance(submitted, dict) and submitted.get("working_dir") is not None:
        return True
    try:
        from ray._private import ray_constants
        from ray._private.runtime_env.uv_runtime_env_hook import _get_uv_run_cmdline
    except ImportError:  # a Ray without uv support
        return False
    return bool(getattr(ray_constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", False)) and _get_uv_run_cmdline() is not None


def _get_hub(ray: ModuleType) -> ActorHandle[Hub]:
    """This driver's hub actor (one per Ray session; num_cpus=0, so it never takes a build's place)."""
    global _hub
    job = ray.get_runtime_context().get_job_id()
    with _hub_lock:
        if _hub is None or _hub[0] != job:
            actor = ray.remote(num_cpus=0, max_restarts=0)(Hub).remote()
            _hub = (job, actor)
        return _hub[1]


def _remote_task(ray: ModuleType) -> RemoteFunction:
    global _task
    with _hub_lock:
        if _task is None:
            _task = ray.remote(remote_build)
        return _task


# -- the driver side -----------------------------------------------------------------------------------
def _seconds(value: JSON) -> float:
    """An event's ``t`` (0 where it has none)."""
    return float(value) if isinstance(value, (int, float)) else 0.0


RAY_HINT = (
    "A Ray task receives the model's bytes, not its directory: embed the weights in the ONNX file "
    "(onnx.save_model(onnx.load('model.onnx'), 'embedded.onnx'), for models under 2 GB) and pass that"
)


class RayRunner:
    """Builds on Ray: ``Build(model, runner=RayRunner())`` or ``BuildMatrix(..., executor=RayRunner(...))``.

    ``address``: the cluster (``"ray://head:10001"``, ``"auto"``); None uses an initialised Ray, else
    ``RAY_ADDRESS``, else starts a local instance. ``num_cpus`` / ``num_gpus`` per build (``num_gpus=None``:
    1 where the cluster has GPUs, else 0); ``resources`` and ``runtime_env`` are passed to the task;
    ``init_kwargs`` to ``ray.init``.
    """

    name = "ray"
    framed = True
    local = True  # the options are checked against the driver's TensorRT, which the cluster is expected to run

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float | None = None,
        resources: dict[str, float] | None = None,
        runtime_env: Mapping[str, object] | None = None,
        init_kwargs: Mapping[str, object] | None = None,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.resources = resources
        self.runtime_env = runtime_env
        self.init_kwargs = init_kwargs
        self.worker_pid: int | None = None  # the Ray worker process building, once it reported in
        self.worker_node: str | None = None
        # a matrix's builds reach Ray in list order: this one submits its task once the one before did (or ended)
        self.after: threading.Event | None = None
        self.submitted = threading.Event()  # set once its task was submitted, or it will never be

    def clone(self) -> RayRunner:
        """A fresh runner with the same settings (one runner per build)."""
        return RayRunner(
            address=self.address,
            num_cpus=self.num_cpus,
            num_gpus=self.num_gpus,
            resources=self.resources,
            runtime_env=self.runtime_env,
            init_kwargs=self.init_kwargs,
        )

    def run(self, ctx: RunContext) -> bytes | None:
        ray_module = sys.modules.get("ray")
        if ray_module is None or not ray_module.is_initialized():  # say why a first build waits (Ray's start: ~15 s)
            local = not (self.address or os.environ.get("RAY_ADDRESS"))
            ctx.on_waiting("starting a local Ray instance …" if local else "connecting to Ray …")
        ctx.on_queued(True)  # until a Ray worker has the task
        try:
            ray = ensure_ray(self.address, self.init_kwargs)
            ctx.on_waiting("waiting for a Ray worker")
            while self.after is not None and not self.after.wait(POLL_S):  # the build before it goes first
                if ctx.cancel.is_set():
                    return None
            if ctx.cancel.is_set():
                return None
            return _Relay(self, ctx, ray).run()
        finally:
            self.submitted.set()

    def task_options(self, ray: ModuleType) -> dict[str, object]:
        gpus = self.num_gpus
        if gpus is None:
            gpus = 1 if ray.cluster_resources().get("GPU", 0) > 0 else 0
        options: dict[str, object] = {"num_cpus": self.num_cpus, "num_gpus": gpus, "max_retries": 0}
        if self.resources:
            options["resources"] = self.resources
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        return options


class _Relay:
    """One build on Ray: submit the task, relay its events, pass Stop on, collect the engine."""

    def __init__(self, runner: RayRunner, ctx: RunContext, ray: ModuleType) -> None:
        self.runner, self.ctx, self.ray = runner, ctx, ray
        self.key = uuid.uuid4().hex
        self.names: dict[int, str] = {}
        self.started = False  # the task reported in (a Ray worker runs it)
        self.built = False  # the remote build ended succeeded: a Stop now must not throw the engine away
        self.anchor: float | None = None  # this process's clock reading at the remote build's t=0 (best estimate)
        self.last_at = float("-inf")  # the local time of the last event applied

    def run(self) -> bytes | None:
        ray, ctx = self.ray, self.ctx
        hub = _get_hub(ray)
        ref = _remote_task(ray).options(**self.runner.task_options(ray)).remote(self.key, hub, self._job())
        self.runner.submitted.set()
        pull = hub.pull.remote(self.key, PULL_S)
        force_at: float | None = None
        try:
            while True:
                if ctx.cancel.is_set() and force_at is None:
                    force_at = time.monotonic() + ctx.graceful_s
                    hub.cancel.remote(self.key)
                    if not self.started:
                        ray.cancel(ref)  # still in Ray's queue: taken off it at once
                if (
                    force_at is not None
                    and self.started
                    and not self.built
                    and (ctx.force.is_set() or time.monotonic() >= force_at)
                ):
                    self._force_stop(ref, automatic=not ctx.force.is_set())
                    return None
                ready, _ = ray.wait([ref, pull], num_returns=1, timeout=POLL_S)
                if pull in ready:
                    try:
                        self._feed(ray.get(pull))
                    except ray.exceptions.RayError as exc:
                        raise BuildError(f"lost the Ray actor that relays this build's events: {exc}") from None
                    pull = hub.pull.remote(self.key, PULL_S)
                if ref in ready:
                    return self._final(ref, pull, hub)
        finally:
            hub.forget.remote(self.key)

    def _job(self) -> RayJob:
        from .._external_data import MODEL_FILE, check_external_data, external_locations, open_model, read_model_keyed

        source = self.ctx.source
        if source.kind == "path":
            try:
                with open(open_model(source.value), "rb") as handle:  # a regular file, read bounded
                    model, key = read_model_keyed(handle, source.value)  # the nodes need not see this file system
            except OSError as exc:
                raise BuildError(escape_controls(f"cannot read the model {source.value}: {exc}")) from exc
            # the task builds these very bytes (no external data: refused below), read from the file of this key
            self.ctx.on_read_files({MODEL_FILE: key})
        else:
            model = source.value
        if isinstance(model, bytes):  # the task gets the bytes, never the model's directory
            check_external_data(external_locations(model), None, source.label, source.hint or RAY_HINT)
        options = {name: getattr(self.ctx.options, name) for name in REMOTE_OPTIONS}
        return {"model": model, "label": source.label, "options": options}

    def _feed(self, events: list[JSONObject]) -> None:
        from ..runners import apply_event

        ctx = self.ctx
        sent = [_seconds(e.get("t")) for e in events if e.get("event") == "sent"]
        if sent and ctx.shared_clock:  # the least delayed push so far says best where the remote t=0 is here
            estimate = time.perf_counter() - max(sent)
            self.anchor = estimate if self.anchor is None else min(self.anchor, estimate)
        for event in events:
            kind = event.get("event")
            if kind in ("hello", "build_start"):
                self._reported_in(event)
                continue
            if kind == "sent":
                continue
            if kind == "build_end":
                self.built = event.get("status") == "succeeded"
                continue
            at = self.anchor + _seconds(event.get("t")) if self.anchor is not None else None
            if at is not None:  # the anchor only improves downwards: never let a later event land before an earlier
                at = self.last_at = max(at, self.last_at)
            try:
                apply_event(event, ctx.model, ctx.logger, self.names, at=at)
            except Exception:  # a malformed event must not end the relay
                continue

    def _reported_in(self, event: JSONObject) -> None:
        if self.started:
            return
        self.started = True
        pid = event.get("pid")
        if isinstance(pid, int):
            self.runner.worker_pid = pid
            self.runner.worker_node = str(event.get("node") or "")
            self.ctx.on_pid(self.runner.worker_pid)
        if event.get("cold") is True:  # the worker process's first build (an older task's hello says nothing)
            self.ctx.on_cold_builder()
        self.ctx.on_queued(False)

    def _final(
        self, ref: ObjectRef[RayResult], pull: ObjectRef[list[JSONObject]], hub: ActorHandle[Hub]
    ) -> bytes | None:
        ray = self.ray
        try:
            result: RayResult = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            if not self.started:
                self.ctx.note("stopped while queued: the Ray task was taken off the queue before it started")
            return None
        except ray.exceptions.RayError as exc:
            self._drain(pull, hub)
            raise self._died(exc) from None
        self._drain(pull, hub)
        status = result.get("status")
        if status == "succeeded":
            engine = result.get("engine")
            if not isinstance(engine, (bytes, bytearray)):
                raise BuildError("the Ray task reported success but returned no engine")
            return bytes(engine)
        if status == "cancelled":
            return None
        raise BuildError(result.get("error") or result.get("detail") or f"the Ray build ended {status}")

    def _drain(self, pull: ObjectRef[list[JSONObject]], hub: ActorHandle[Hub]) -> None:
        """Feed what the task pushed before it ended (the outstanding long poll, then the rest)."""
        ray = self.ray
        try:
            self._feed(ray.get(pull, timeout=PULL_S + 5))
            self._feed(ray.get(hub.pull.remote(self.key, 0.0), timeout=5))
        except Exception:
            pass

    def _where(self) -> str:
        runner = self.runner
        if runner.worker_pid is None:
            return "the Ray worker"
        return f"the Ray worker (pid {runner.worker_pid} on {runner.worker_node or 'its node'})"

    def _died(self, exc: Exception) -> BuildError:
        phase = self.ctx.model.innermost_running()
        where = f" during phase {phase.name!r}" if phase else " before any build phase started"
        reason = str(exc).strip().splitlines()
        detail = reason[0] if reason else type(exc).__name__
        if isinstance(exc, self.ray.exceptions.RayTaskError):  # the task raised: say what, not Ray's wrapping
            cause = getattr(exc, "cause", None)
            what = f"{type(cause).__name__}: {cause}" if cause is not None else detail
            return BuildError(f"the Ray task failed{where}: {what}")
        return BuildError(
            f"{self._where()} died{where}; no engine was built ({type(exc).__name__}: {detail[:300]}). "
            "This Python process is unaffected and the next build can run."
        )

    def _force_stop(self, ref: ObjectRef[RayResult], automatic: bool) -> None:
        """Kill the task's worker process; the build ends cancelled with a detail that says so."""
        with contextlib.suppress(Exception):
            self.ray.cancel(ref, force=True)
        if automatic:
            self.ctx.note(
                f"the builder did not reach a step boundary within {self.ctx.graceful_s:g} s, so "
                f"{self._where()} was killed (ray.cancel force=True)"
            )
        else:
            self.ctx.note(f"force stopped: {self._where()} was killed (ray.cancel force=True)")
