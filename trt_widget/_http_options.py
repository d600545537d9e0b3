"""The HTTP projection of :class:`~trt_widget._options.BuildOptions`: the options a request to the build service
may set, and why each other one may not (its field's ``http`` metadata; a field without metadata is refused)."""

from __future__ import annotations

from dataclasses import fields

from ._options import BuildOptions

NOT_OVER_HTTP = "not settable over HTTP"


def http_refusals() -> dict[str, str]:
    """Option -> why an HTTP request may not set it (a field without metadata is refused)."""
    return {
        f.name: f.metadata.get("http", NOT_OVER_HTTP)
        for f in fields(BuildOptions)
        if f.metadata.get("http", NOT_OVER_HTTP)
    }


def http_options() -> tuple[str, ...]:
    """The options a request to the build service may set."""
    refused = http_refusals()
    return tuple(f.name for f in fields(BuildOptions) if f.name not in refused)


def host_argument(value: str) -> str:
    """``--host``'s value, checked: an empty one (``--host "$HOST"`` with the variable unset) would bind every
    interface, the opposite of the default, so it is a usage error naming the choices."""
    if not value.strip():
        import argparse

        raise argparse.ArgumentTypeError(
            "empty: give an address (127.0.0.1: this machine only; 0.0.0.0: every IPv4 interface)"
        )
    return value


def listen_failure(host: str, port: int, exc: OSError) -> str:
    """The one-line error for a port that cannot be listened on (taken, refused, a host not of this machine),
    naming the port and ``--port`` instead of the socket's bare ``[Errno 98]``."""
    import errno

    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use ({where}): choose another with --port N (--port 0: any free port)"
    reason = exc.strerror or str(exc)
    return f"cannot listen on {where}: {reason} (choose another --port or --host)"
