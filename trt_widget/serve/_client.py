"""A build running on a ``trt-widget serve`` server, with the :class:`~trt_widget.Build` API::

    from trt_widget.serve import RemoteBuild
    b = RemoteBuild("http://gpu-box:8765", token, "model.onnx", optimization_level=3).start()
    BuildWidget(b)          # the live tree of the remote build (or b.widget())
    engine = b.result()     # the engine bytes, downloaded once the server has built them

``RemoteBuild`` is a ``Build`` whose runner (:class:`RemoteRunner`) uploads the model, follows the server's
Server-Sent Events into the local phase model and logger (so every front end shows it), turns ``stop()`` into
``POST /builds/{id}/cancel`` (a second stop forces), reconnects with ``Last-Event-ID`` when the stream breaks,
and downloads the engine. Times are the server's: ``timings()`` match ``GET /builds/{id}``.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal

import httpx

from .._build import Build
from .._engine import ModelLike, ModelSource
from .._errors import BuildError
from .._event_sinks import Sink
from .._format import escape_controls
from .._http_options import http_refusals
from .._json import JSON, MAX_NESTING, MAX_VALUES, JSONObject, json_count, json_shape
from .._options import BuildOptions, BuildOptionsDict
from ..runners import MAX_PHASES, FollowClock, RunContext, apply_event, check_event

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .._widget import BuildWidget

_LOCAL = ("output",)  # options a RemoteBuild handles here: the engine is written to a local file
_NOT_REMOTE = {
    **{name: why for name, why in http_refusals().items() if name not in _LOCAL},
    "isolation": "the server decides where its builders run",
    "history": "remote builds keep no local history",
    "resources": "the builder's resources are the server's",
    "clock": "a remote build runs on the server's clock",
}


def sse_messages(lines: Iterable[str], limit: int | None = None) -> Iterator[tuple[str | None, str, str]]:
    """(id, event type, data) per Server-Sent Events message of ``lines`` (comments and retry: skipped); a message
    whose data lines hold more than ``limit`` characters in all is refused (``_Refused``) before holding more."""
    ident: str | None = None
    kind, data, size = "message", list[str](), 0
    for line in lines:
        if not line:
            if data:
                yield ident, kind, "\n".join(data)
            kind, data, size = "message", [], 0
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            size += len(value) + 1
            if limit is not None and size > limit + 1:
                raise _Refused(f"an event larger than {limit:,} bytes")
            data.append(value)
        elif field == "id":
            ident = value
        elif field == "event":
            kind = value


def _refusal(response: httpx.Response) -> str:
    """The server's sentence for a refusal (its JSON ``error``, read by ``_server_json``), else the status line;
    clipped and escaped (outside text)."""
    try:
        message = _server_json(response.content, "a refusal", str(response.request.url)).get("error")
    except BuildError:
        message = None
    said = message if isinstance(message, str) and message else response.reason_phrase
    return f"HTTP {response.status_code}: {_outside(said)}"


def _outside(text: object, limit: int = 500) -> str:
    """Text a server sent (or an error about its reply), as it goes into an exception's message: at most ``limit``
    characters, control characters escaped (a traceback prints the message raw)."""
    shown = str(text)
    return escape_controls(shown[:limit] + ("..." if len(shown) > limit else ""))


MAX_EVENT_BYTES = 1 << 20  # one event (an SSE line) from the server; TensorRT's longest are a few KB
MAX_REPLY_BYTES = 1 << 20  # any other reply than an event stream or an engine (limits, a build's state, an error)
_STREAMED = "trt_widget.streamed"  # a request extension: its 200 reply is bounded by its reader (events, engine)


class _CappedBody(httpx.SyncByteStream):
    """A reply's body that ends in an error once it passes ``MAX_REPLY_BYTES``: a server that answers with a body
    without end (500 MB a second here) would otherwise be read into memory until it ran out."""

    def __init__(self, inner: httpx.SyncByteStream) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self._inner:
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise httpx.RemoteProtocolError(f"the server's reply is larger than {MAX_REPLY_BYTES:,} bytes")
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _cap_reply(response: httpx.Response) -> None:
    """An httpx response hook (before the body is read): bound every reply but a streamed request's 200."""
    if response.request.extensions.get(_STREAMED) and response.status_code == 200:
        return
    if isinstance(response.stream, httpx.SyncByteStream):
        response.stream = _CappedBody(response.stream)


def _client(url: str, headers: dict[str, str] | None, timeout: float | httpx.Timeout) -> httpx.Client:
    """The HTTP client of every request to the server: its replies bounded (``_cap_reply``)."""
    return httpx.Client(base_url=url, headers=headers, timeout=timeout, event_hooks={"response": [_cap_reply]})


SILENT_S = 60.0  # a stream that sends nothing, not even the server's ping (every 15 s), for this long is broken
STOP_WAIT_S = 0.7  # after stop() (or its force_after), how long the server may take to confirm the end


class _Refused(Exception):
    """The server broke the protocol (an oversized or malformed event): not worth a reconnection."""


def _lines(reply: httpx.Response, limit: int) -> Iterator[str]:
    """The response's lines, refusing (``_Refused``) one longer than ``limit`` bytes before holding more."""
    pending = b""
    for chunk in reply.iter_raw():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if len(line) > limit:
                raise _Refused(f"an event larger than {limit:,} bytes")
            yield line.rstrip(b"\r").decode("utf-8", "replace")
        if len(pending) > limit:
            raise _Refused(f"an event larger than {limit:,} bytes")
    if pending:
        yield pending.decode("utf-8", "replace")


# what the event stream's reader hands over: ("message", (id, event type, data)), or ("end", why it ended)
_Item = tuple[Literal["message"], tuple[str | None, str, str]] | tuple[Literal["end"], str]


def _seconds(value: JSON) -> float:
    """A checked event's ``t`` (``check_event``: a finite time; 0 where it has none)."""
    return float(value) if isinstance(value, (int, float)) else 0.0


def _server_json(text: str | bytes, what: str, server: str) -> JSONObject:
    """Every JSON body a server sends (limits, a new build, a build's state, an event, a refusal), parsed in one
    place: a JSON object of at most ``MAX_REPLY_BYTES`` whose fields nest at most ``MAX_NESTING`` deep (as an
    event's, ``check_event``), else BuildError in one line naming the server and ``what`` it should have been. A
    body nested deeper than ``json.loads`` recurses raised RecursionError there; one just less, later readers."""
    sent = f"the build server {_outside(server, 200)} sent {what}"
    if len(text) > MAX_REPLY_BYTES:
        raise BuildError(f"{sent} larger than {MAX_REPLY_BYTES:,} bytes")
    deep = f"nests lists or objects more than {MAX_NESTING} deep"
    try:
        value: JSON = json.loads(text)
    except RecursionError:
        raise BuildError(f"{sent} that {deep}") from None
    except ValueError:  # also not UTF-8, or an integer of 4,300+ digits
        value = None
    if not isinstance(value, dict):
        shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise BuildError(f"{sent} that is not a JSON object: {_outside(repr(shown[:80]))}")
    count = 0
    for field, item in value.items():
        depth, values = json_shape(item, MAX_NESTING, MAX_VALUES - count)
        if depth > MAX_NESTING:
            raise BuildError(f"{sent} whose field {_outside(repr(field[:40]))} {deep}")
        count += values
        if count > MAX_VALUES:  # check_outside's bound: a body of 16 MiB of [{},{},...] held ~50x its size
            raise BuildError(f"{sent} of more than {MAX_VALUES:,} JSON values")
    return value


class RemoteRunner:
    """The Runner of a build on a server: upload, follow the events, cancel on ``ctx.cancel``, fetch the engine.

    What it accepts is bounded: events of at most ``MAX_EVENT_BYTES``, ``MAX_PHASES`` phases, an engine of
    exactly the size ``build_end`` announced; a stream silent (not even a ping) for ``SILENT_S`` is reconnected,
    and the build is lost once no new event came for ``timeout`` s. After ``stop()`` the local build ends within
    ``STOP_WAIT_S`` (after ``force_after``, when given) whatever the server does."""

    name = "remote"
    framed = False  # the server's build frames its events
    local = False  # the server's TensorRT checks the options

    def __init__(
        self,
        url: str,
        token: str,
        *,
        options: dict[str, object],
        name: str | None,
        clock: FollowClock,
        build_id: str | None = None,
        timeout: float = 30.0,
        queue: float = 0.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"}
        self.options = options
        self.label = name
        self.clock = clock
        self.build_id = build_id
        self.timeout = timeout
        self.queue = queue
        self._poke = threading.Event()
        self._reason = "stopped by the client"
        self._origin = 0.0
        self._names: dict[int, str] = {}
        self._stopped_at: float | None = None  # when a stop's graceful window ends (monotonic)
        self._forced_at: float | None = None

    def poke(self, reason: str | None = None) -> None:
        """Look at ctx.cancel / ctx.force now (``RemoteBuild.stop`` calls this), instead of within 0.25 s."""
        if reason:
            self._reason = reason
        self._poke.set()

    def run(self, ctx: RunContext) -> bytes | None:
        with _client(self.url, self.headers, self.timeout) as client:
            if self.build_id is None:
                self.build_id = self._upload_or_stop(ctx)
                if self.build_id is None:
                    return None  # stopped before the server had it
            finished = threading.Event()
            watcher = threading.Thread(target=self._watch, args=(ctx, finished), name="trt_widget-remote", daemon=True)
            watcher.start()
            try:
                return self._follow(client, ctx)
            finally:
                finished.set()
                self._poke.set()

    # -- upload --------------------------------------------------------------------------------------
    def _upload_or_stop(self, ctx: RunContext) -> str | None:
        """``_upload`` on a thread of its own, so a stop ends the build within ``STOP_WAIT_S`` even while the
        server takes the upload slowly or not at all; an upload it accepts after that is cancelled there."""
        uploaded: list[str | None] = []  # the id, once the upload answered
        failed: list[BaseException] = []
        abandoned = threading.Event()

        def upload() -> None:
            try:
                with _client(self.url, self.headers, self.timeout) as client:
                    uploaded.append(self._upload(client, ctx))
            except BaseException as exc:
                failed.append(exc)
            if abandoned.is_set() and uploaded and uploaded[0]:  # too late: nobody follows it, so it must not build
                self.build_id = uploaded[0]
                self._cancel(force=True)

        thread = threading.Thread(target=upload, name="trt_widget-remote-upload", daemon=True)
        thread.start()
        while thread.is_alive():
            if self._given_up(ctx):
                abandoned.set()
                return None
            thread.join(0.05)
        if failed:
            raise failed[0]
        return uploaded[0] if uploaded else None

    def _upload(self, client: httpx.Client, ctx: RunContext) -> str | None:
        """POST the model; the id, or None when stopped while waiting for a free slot. The server's limits are
        checked first: a server refusing an upload it has not read closes the connection, and a large body
        still on its way can then lose the refusal."""
        source = ctx.source
        model, key = _model_bytes(source)
        if source.kind == "path":  # the server builds these very bytes (it takes no external data)
            from .._external_data import MODEL_FILE

            ctx.on_read_files({MODEL_FILE: key})
        size = len(model)
        params = {"options": json.dumps(self.options), "name": self.label or source.label}
        deadline = time.monotonic() + self.queue
        problem = ""
        while True:
            limits = _server_json(self._get(client, "/builds", params={"limit": "1"}).content, "its limits", self.url)
            max_upload, running, max_concurrent = (limits.get(k) for k in ("max_upload", "running", "max_concurrent"))
            if not (isinstance(max_upload, int) and isinstance(running, int) and isinstance(max_concurrent, int)):
                raise BuildError(f"the build server {self.url} sent limits without max_upload/running/max_concurrent")
            if size > max_upload:
                raise BuildError(
                    f"the model is {size:,} bytes; the build server {self.url} accepts at most "
                    f"{max_upload:,} (its --max-upload)"
                )
            if running < max_concurrent:
                try:
                    response = client.post("/builds", content=model, params=params, headers=_OCTETS)
                except httpx.TransportError as exc:
                    problem = f"{type(exc).__name__}: {_outside(exc)}"  # look at the limits again, then say so
                else:
                    if response.status_code == 201:
                        ctx.on_queued(False)
                        build_id = _server_json(response.content, "the new build", self.url).get("id")
                        if not isinstance(build_id, str) or not build_id.replace("-", "").replace("_", "").isalnum():
                            raise BuildError(f"the build server {self.url} answered the upload without a build id")
                        return build_id
                    if response.status_code != 429:
                        raise BuildError(f"the build server {self.url} refused the build ({_refusal(response)})")
                    problem = _refusal(response)
            else:
                problem = f"HTTP 429: {limits['running']} of at most {limits['max_concurrent']} builds running"
            if time.monotonic() >= deadline:
                raise BuildError(f"the build server {self.url} is busy ({problem}); RemoteBuild(queue=seconds) waits")
            ctx.on_queued(True)  # status "queued" while the server is busy
            if ctx.cancel.wait(1.0):  # a stop ends the wait
                return None

    def _get(self, client: httpx.Client, path: str, params: dict[str, str] | None = None) -> httpx.Response:
        """A GET that must succeed: BuildError with the server's sentence otherwise."""
        try:
            response = client.get(path, params=params)
        except httpx.HTTPError as exc:
            raise BuildError(f"cannot reach the build server {self.url}: {_outside(exc)}") from exc
        if response.status_code != 200:
            raise BuildError(f"the build server {self.url} refused {path} ({_refusal(response)})")
        return response

    # -- cancel --------------------------------------------------------------------------------------
    def _watch(self, ctx: RunContext, finished: threading.Event) -> None:
        """POST cancel once ctx.cancel is set, and cancel?force=1 once ctx.force is set."""
        sent = forced = False
        while not finished.is_set() and not forced:
            self._poke.clear()
            if not sent and ctx.cancel.is_set():
                sent = self._cancel(force=False)
            if sent and ctx.force.is_set():
                forced = self._cancel(force=True)
            self._poke.wait(0.25)

    def _cancel(self, *, force: bool) -> bool:
        try:
            with _client(self.url, self.headers, self.timeout) as client:
                client.post(
                    f"/builds/{self.build_id}/cancel",
                    params={"force": "1"} if force else None,
                    json={"reason": self._reason},
                )
        except httpx.HTTPError:
            return False  # retried on the next look
        return True

    # -- events --------------------------------------------------------------------------------------
    def _follow(self, client: httpx.Client, ctx: RunContext) -> bytes | None:
        """Apply the server's events until ``build_end``; reconnect (``Last-Event-ID``) when the stream breaks.

        The stream is read on a thread of its own, so this thread can end the build after a stop whatever the
        server does (it may stop answering, or never confirm)."""
        last, problem, since, phases = 0, "", time.monotonic(), 0
        depths: dict[int, int] = {}  # phase nesting seen so far (check_event)
        while True:
            inbox: queue.Queue[_Item] = queue.Queue(maxsize=256)
            quit_reading = threading.Event()
            reader = threading.Thread(
                target=self._read, args=(last, inbox, quit_reading), name="trt_widget-remote-events", daemon=True
            )
            reader.start()
            try:
                while True:
                    if self._given_up(ctx):
                        return None
                    try:
                        got = inbox.get(timeout=0.05)
                    except queue.Empty:
                        continue
                    if got[0] == "end":
                        problem = got[1]
                        break
                    ident, sse_kind, data = got[1]
                    if sse_kind != "message":  # the server's own notice (it is shutting down): reconnect
                        problem = _outside(data, 200)
                        break
                    event = _server_json(data, f"event {last + 1} of build {self.build_id}", self.url)
                    if ident and ident.isascii() and ident.isdigit() and len(ident) < 19:
                        if int(ident) <= last:
                            continue  # seen already (a server replaying from the start)
                        last = int(ident)
                    else:
                        last += 1
                    since = time.monotonic()
                    if event.get("event") == "phase_start":
                        phases += 1
                        if phases > MAX_PHASES:
                            raise BuildError(
                                f"build {self.build_id} on {self.url} sent more than {MAX_PHASES:,} phases; "
                                "given up (no real build has so many)"
                            )
                    try:
                        check_event(event, "the server's event", last, depths)  # t, names, nesting bounded
                        if event.get("event") != "build_end":  # its end too: a t of 400 digits or Infinity
                            self._apply(ctx, event)
                    except (KeyError, TypeError, ValueError, AttributeError) as exc:
                        raise BuildError(
                            f"build {self.build_id} on {self.url} sent a malformed {str(event.get('event'))[:40]!r} "
                            f"event (event {last}): {type(exc).__name__}: {_outside(exc, 200)}"
                        ) from None
                    if event.get("event") == "build_end":
                        return self._end(client, ctx, event)
            finally:
                quit_reading.set()
            if problem.startswith("refused: "):
                raise BuildError(f"build {self.build_id} on {self.url}: the server sent {problem[9:]}; given up")
            if problem.startswith("HTTP 4"):
                raise BuildError(f"cannot follow build {self.build_id} on {self.url} ({problem})")
            if time.monotonic() - since > self.timeout:
                raise BuildError(
                    f"lost build {self.build_id} on {self.url}: no new event for {self.timeout:g} s ({problem})"
                )
            deadline = time.monotonic() + 0.5  # a reconnection back-off, not a synchronisation
            while time.monotonic() < deadline:
                if self._given_up(ctx):
                    return None
                time.sleep(0.05)

    def _read(self, last: int, inbox: queue.Queue[_Item], quit_reading: threading.Event) -> None:
        """One connection to the event stream: its messages into ``inbox``, then why it ended."""

        def put(item: _Item) -> bool:
            while not quit_reading.is_set():
                try:
                    inbox.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        headers = {**self.headers, **({"Last-Event-ID": str(last)} if last else {})}
        timeout = httpx.Timeout(self.timeout, read=SILENT_S)
        try:
            with (
                _client(self.url, None, timeout) as client,
                client.stream(
                    "GET", f"/builds/{self.build_id}/events", headers=headers, extensions={_STREAMED: True}
                ) as reply,
            ):
                if reply.status_code != 200:
                    reply.read()
                    put(("end", _refusal(reply)))
                    return
                for message in sse_messages(_lines(reply, MAX_EVENT_BYTES), MAX_EVENT_BYTES):
                    if not put(("message", message)):
                        return
            put(("end", "the event stream ended before build_end"))
        except _Refused as exc:
            put(("end", f"refused: {_outside(exc)}"))
        except httpx.HTTPError as exc:
            put(("end", f"{type(exc).__name__}: {_outside(exc)}"))
        except Exception as exc:  # never lose the reason: the follower decides
            put(("end", f"{type(exc).__name__}: {_outside(exc)}"))

    def _given_up(self, ctx: RunContext) -> bool:
        """True (and the build's detail says so) once a stop has waited longer than the server may take."""
        if not ctx.cancel.is_set():
            return False
        now = time.monotonic()
        if self._stopped_at is None:
            self._stopped_at = now + (ctx.options.force_after or 0.0)  # a graceful window the user chose
        if ctx.force.is_set() and self._forced_at is None:
            self._forced_at = now
        limit = min(self._stopped_at, self._forced_at if self._forced_at is not None else self._stopped_at)
        if now - limit < STOP_WAIT_S:
            return False
        if self.build_id is None:
            ctx.note(
                f"ended here: the upload to {self.url} had not finished {STOP_WAIT_S:g} s after the stop (a build "
                "the server accepts later is cancelled there)"
            )
            return True
        ctx.note(
            f"ended here: the server had not confirmed the cancel after {STOP_WAIT_S:g} s (it was asked to cancel "
            f"build {self.build_id}; GET {self.url}/builds/{self.build_id} says how it ended)"
        )
        return True

    def _download_unless_given_up(self, client: httpx.Client, announced: int, ctx: RunContext) -> bytes | None:
        """The engine, downloaded on a thread of its own; None when a stop gives up on a server that sends it
        slower than a stop may wait (the download is abandoned, the build ends cancelled here)."""
        outcome: list[bytes | BaseException] = []
        abandon = threading.Event()

        def fetch() -> None:
            try:
                outcome.append(self._download(client, announced, abandon))
            except BaseException as exc:  # handed to the following thread
                outcome.append(exc)

        fetcher = threading.Thread(target=fetch, name="trt_widget-remote-engine", daemon=True)
        fetcher.start()
        while not outcome:
            fetcher.join(0.05)
            if not outcome and self._given_up(ctx):
                abandon.set()
                return None
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _download(self, client: httpx.Client, announced: int, abandon: threading.Event) -> bytes:
        try:
            with client.stream("GET", f"/builds/{self.build_id}/engine", extensions={_STREAMED: True}) as reply:
                if reply.status_code != 200:
                    reply.read()
                    raise BuildError(f"build {self.build_id} succeeded, but its engine: {_refusal(reply)}")
                return _download_into(reply, announced, abandon)
        except httpx.HTTPError as exc:
            raise BuildError(f"build {self.build_id} succeeded on {self.url}, but its engine: {_outside(exc)}") from exc

    def _apply(self, ctx: RunContext, event: JSONObject) -> None:
        """Feed one event into the phase model / logger at the server's time (the replay's apply_event)."""
        if event.get("event") == "build_start":
            self._origin = self.clock.restart(ctx.model, ctx.logger)  # the remote build starts now: its t = 0
            return
        at = self._origin + _seconds(event.get("t"))
        self.clock.advance_to(at)  # a replayed log is ahead of this clock: move it, so times stay the server's
        apply_event(event, ctx.model, ctx.logger, self._names, at=at)

    def _end(self, client: httpx.Client, ctx: RunContext, end: JSONObject) -> bytes | None:
        self.clock.advance_to(self._origin + _seconds(end.get("t")))
        status, detail = end.get("status"), str(end.get("detail") or "")
        if status == "succeeded":
            announced = end.get("engine_bytes")
            if not json_count(announced) or announced == 0:  # 401 digits: no engine, and no size to show
                raise BuildError(f"build {self.build_id} succeeded on {self.url}, but its end names no engine size")
            engine = self._download_unless_given_up(client, announced, ctx)
            if engine is None:
                return None
            if detail:
                ctx.note(detail)
            return engine
        if status == "cancelled":
            if not ctx.cancel.is_set():
                ctx.note(f"cancelled on the server: {detail}")
            elif "; " in detail:  # what the server added to our reason (e.g. that it terminated the builder)
                ctx.note(detail.split("; ", 1)[1])
            return None
        raise BuildError(_outside(end.get("error") or detail or "the remote build failed"))


_OCTETS = {"Content-Type": "application/octet-stream"}


def _model_bytes(source: ModelSource) -> tuple[bytes, str | None]:
    """The model's bytes, read once before the upload so that its length is the one sent (a ``/proc`` file's size
    says 0; a model still being written grows): a path by the rules and bounded read of a local build, refused in
    the same one line (BuildError)."""
    if source.kind != "path":
        return bytes(source.value), None
    from .._external_data import open_model, read_model_keyed
    from .._files import BadModelPath, model_file

    try:
        path = model_file(source.value)  # not found, not a regular file, a path stat() refuses
    except BadModelPath as exc:
        raise BuildError(str(exc)) from None
    try:
        with open(open_model(path), "rb") as handle:  # a regular file, never more than 2 GiB of it read
            return read_model_keyed(handle, path)
    except OSError as exc:
        raise BuildError(f"cannot read the model {source.shown}: {exc.strerror or exc}") from None


def _download_into(reply: httpx.Response, announced: int, abandon: threading.Event) -> bytes:
    """The engine bytes of ``reply``: exactly ``announced`` of them, never holding more; BuildError once
    ``abandon`` is set."""
    declared = reply.headers.get("content-length")
    if declared is not None and declared.strip() != str(announced):
        raise BuildError(
            f"the server offers an engine of {_outside(declared, 20)} bytes; build_end announced {announced:,}"
        )
    parts, size = [], 0
    for chunk in reply.iter_bytes():
        if abandon.is_set():
            raise BuildError("the engine's download was abandoned after a stop")
        size += len(chunk)
        if size > announced:
            raise BuildError(f"the server sent more engine bytes than build_end announced ({announced:,})")
        parts.append(chunk)
    if size != announced:
        raise BuildError(f"the server sent {size:,} engine bytes; build_end announced {announced:,}")
    return b"".join(parts)


class RemoteBuild(Build):
    """A build on a ``trt-widget serve`` server, with the Build API (start, stop, wait, status, timings(),
    result(), done(), ...). ``model``: an ONNX path, bytes or ModelProto (uploaded on ``start()``). Options are
    those of ``Build`` that shape the engine (plus ``budget``, ``force_after``); ``output`` is a local file the
    engine is written to. ``queue`` s: how long to retry while the server is busy (429); ``timeout`` s: for
    requests, and how long a lost connection is retried. ``RemoteBuild.follow(url, token, id)`` watches (and can
    stop) a build someone else started."""

    def __init__(
        self,
        url: str,
        token: str,
        model: ModelLike | None,
        *,
        events: Sink | None = None,
        name: str | None = None,
        build_id: str | None = None,
        timeout: float = 30.0,
        queue: float = 0.0,
        **options: Unpack[BuildOptionsDict],
    ) -> None:
        for key in options:
            if key in _NOT_REMOTE:
                raise TypeError(f"{key}= is not available for a remote build: {_NOT_REMOTE[key]}")
        output = options.pop("output", None)
        checked = BuildOptions.from_kwargs(**options, output=output, isolation="process")
        remote: dict[str, object] = dict(options)  # what the request asks for: only what was given
        if build_id is None:
            source = ModelSource.of(model)
            if source.kind == "callable":
                raise TypeError(
                    "a remote build needs ONNX (a file path, bytes or an onnx.ModelProto): a network function "
                    "cannot travel to the server"
                )
        elif model is not None:
            raise TypeError("give either a model to build or the build_id of a build on the server, not both")
        else:
            source = ModelSource("remote", f"{url}/builds/{build_id}", f"build {build_id} on {url}")
        if checked.profiles is not None:
            profiles = [{k: [list(s) for s in v] for k, v in p.items()} for p in checked.profile_list()]
            remote["profiles"] = profiles if isinstance(checked.profiles, list) else profiles[0]
        if checked.workspace is not None:
            remote["workspace"] = checked.workspace
        clock = FollowClock()
        runner = RemoteRunner(
            url, token, options=remote, name=name, clock=clock, build_id=build_id, timeout=timeout, queue=queue
        )
        self.runner: RemoteRunner = runner
        self.url = url
        # options: what the server builds with (isolation: a builder process there)
        local: BuildOptionsDict = {**options, "output": output, "isolation": "process"}
        super().__init__(source, runner=runner, clock=clock, events=events, history=False, resources=False, **local)

    @classmethod
    def follow(cls, url: str, token: str, build_id: str, *, timeout: float = 30.0) -> RemoteBuild:
        """A RemoteBuild of a build already on the server: ``start()`` follows it (from its first event)."""
        return cls(url, token, None, build_id=build_id, timeout=timeout)

    @property
    def remote_id(self) -> str | None:
        """The build's id on the server, once uploaded."""
        return self.runner.build_id

    def stop(self, reason: str = "stopped by user") -> bool:
        """Cancel on the server: gracefully, forced after force_after; a second stop forces at once."""
        asked = super().stop(reason)
        if asked:
            self.runner.poke(reason)
        return asked

    def info(self) -> JSONObject:
        """The server's view of the build (``GET /builds/{id}``: status, detail, timings, subscribers, ...)."""
        if self.remote_id is None:
            raise RuntimeError("the build is not on the server yet")
        with _client(self.runner.url, self.runner.headers, self.runner.timeout) as c:
            reply = c.get(f"/builds/{self.remote_id}")
        if reply.status_code != 200:
            raise BuildError(f"the build server {self.runner.url} refused the build's state ({_refusal(reply)})")
        return _server_json(reply.content, "the build's state", self.runner.url)

    def widget(self) -> BuildWidget:
        """A BuildWidget showing this build (start it with the widget's ``start()``)."""
        from .._widget import BuildWidget

        return BuildWidget(None, build=self)

    def __repr__(self) -> str:
        return f"<RemoteBuild {self.source.label!r} on {self.url} status={self.status}>"
