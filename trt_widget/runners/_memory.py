"""One copy between this process and its builder process: Linux's ``process_vm_readv`` / ``process_vm_writev``.

Otherwise the model and the engine (about 100 MB each for resnet50) travel through files in ``/dev/shm``: each
written, read and removed, about 0.13 s per such build here, where this is one copy (the same the parent's
``bytes`` of the engine cost in any case). Where the kernel refuses (not Linux, a seccomp filter, Yama's
``ptrace_scope`` 3), every function here says so and the caller uses the files.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Iterator


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _PyBuffer(ctypes.Structure):  # CPython's Py_buffer
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


def _calls() -> tuple[ctypes._NamedFuncPointer, ctypes._NamedFuncPointer] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        calls = (libc.process_vm_readv, libc.process_vm_writev)
    except (OSError, AttributeError):
        return None
    for call in calls:
        iovecs = ctypes.POINTER(_IOVec)
        call.argtypes = [ctypes.c_int, iovecs, ctypes.c_ulong, iovecs, ctypes.c_ulong, ctypes.c_ulong]
        call.restype = ctypes.c_ssize_t
    return calls


_CALLS = _calls()
_new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
_new_bytes.restype = ctypes.py_object
_new_bytes.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t]
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]


def available() -> bool:
    """Whether this system has the calls at all (whether the kernel allows them shows only when used)."""
    return _CALLS is not None


@contextlib.contextmanager
def pinned(buffer: bytes | bytearray | memoryview) -> Iterator[tuple[int, int]]:
    """``(address, size)`` of a contiguous buffer's memory, held in place until the block ends."""
    view = _PyBuffer()
    _get_buffer(buffer, ctypes.byref(view), 0)  # PyBUF_SIMPLE: contiguous bytes; raises BufferError otherwise
    try:
        yield int(view.buf or 0), int(view.len)
    finally:
        _release_buffer(ctypes.byref(view))


def new_bytes(size: int) -> bytes:
    """A new ``bytes`` of ``size`` whose content is not set yet: only for filling through ``pinned`` before anyone
    else sees it (a bytes object is immutable once shared)."""
    return bytes(_new_bytes(None, size))


def _copy(call: ctypes._NamedFuncPointer, pid: int, local: int, remote: int, size: int) -> bool:
    done = 0
    while done < size:
        here, there = _IOVec(local + done, size - done), _IOVec(remote + done, size - done)
        moved = call(pid, ctypes.byref(here), 1, ctypes.byref(there), 1, 0)
        if moved <= 0:
            return False
        done += moved
    return True


def read_from(pid: int, address: int, size: int) -> bytes | None:
    """``size`` bytes at ``address`` in process ``pid``; None where the kernel refuses."""
    if _CALLS is None or size <= 0:
        return None
    data = new_bytes(size)
    with pinned(data) as (local, _):
        return data if _copy(_CALLS[0], pid, local, address, size) else None


def write_to(pid: int, address: int, data: bytes | memoryview) -> bool:
    """Copy ``data`` to ``address`` in process ``pid`` (memory that process set aside for it); False where the
    kernel refuses."""
    if _CALLS is None:
        return False
    with pinned(data) as (local, size):
        return size > 0 and _copy(_CALLS[1], pid, local, address, size)
