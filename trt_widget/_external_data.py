"""Which files an ONNX model names as external data, and whether this build may let TensorRT read them.

The rule: a model never reads a file it was not given. A model given as a path may name files inside its own
directory (no absolute paths, no ``..``, no symlink out of it); a model given as bytes, as an
``onnx.ModelProto`` or uploaded to a server has no directory and may name none. TensorRT's parser would
resolve such names against the working directory, so the model is read here (protobuf wire format, big
tensors skipped unread) and refused before it reaches the parser.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import mmap
import os
import stat
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

from ._errors import BuildError
from ._format import escape_controls

MAX_DEPTH = 64  # graphs nest in node attributes; deeper than any real model
QUICK_SCAN_BYTES = 16 << 20  # below this, searching for the key "location" is quicker than walking the nodes


def _writeback_window_ns() -> int:
    """How long after a file's last change its stat may still not stand for its bytes. A write in the same tick of
    a coarse file-system clock leaves every stat field as it was ("racy git"); so does a store through a shared
    writable map into a page already dirty: the kernel stamps mtime and ctime at a page's first write fault only,
    and again only once the page has been written back (``vm.dirty_expire_centisecs`` +
    ``vm.dirty_writeback_centisecs``, 35 s by default: twenty-fourth and twenty-fifth re-runs, D24-1, D25-1).
    Twice that, at least 60 s; never (a century) where periodic writeback is off."""
    try:
        with open("/proc/sys/vm/dirty_expire_centisecs") as a, open("/proc/sys/vm/dirty_writeback_centisecs") as b:
            expire, writeback = int(a.read()), int(b.read())
    except (OSError, ValueError):
        return 60 * 10**9
    if writeback <= 0 or expire < 0:
        return 100 * 365 * 86400 * 10**9
    return max(60 * 10**9, 2 * (expire + writeback) * 10**7)


# A file's stat seen as unchanged is trusted only when its last change (ctime: set by every write, truncate, rename
# onto and utime, never set back by a user) lies this long before it was read (:func:`_writeback_window_ns`).
RACY_NS = _writeback_window_ns()
# file systems whose pages, once written back, take a new mtime and ctime at their next store through a map (tmpfs
# and ramfs never write back; network and FUSE file systems: other processes, other rules)
STAMPING_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "overlay"})
MEMO_FILES = 64
MAX_MODEL_BYTES = 2 << 30  # protobuf's own limit: no ONNX model file is larger (its big weights go to external data)


class _Malformed(Exception):
    """Not a well-formed protobuf."""


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Malformed
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _key(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """(field number, wire type, position after the key); a key protobuf itself would refuse is malformed."""
    key, pos = _varint(buf, pos)
    number, wire = key >> 3, key & 7
    if number == 0 or key > 0xFFFFFFFF or wire > 5:
        raise _Malformed
    return number, wire, pos


def _skip(buf: memoryview, pos: int, number: int, wire: int, depth: int = 0) -> int:
    """The position after a field's value that is not yielded: fixed-size, or a group (skipped to its end, as
    protobuf skips an unknown group: a group must not hide the fields after it)."""
    if wire == 1:
        return pos + 8
    if wire == 5:
        return pos + 4
    if wire != 3 or depth > MAX_DEPTH:
        raise _Malformed  # an end-group without its start, or groups nested deeper than any real model
    while pos < len(buf):
        inner, inner_wire, pos = _key(buf, pos)
        if inner_wire == 4:
            if inner != number:
                raise _Malformed
            return pos
        if inner_wire == 0:
            pos = _varint(buf, pos)[1]
        elif inner_wire == 2:
            size, pos = _varint(buf, pos)
            pos += size
        else:
            pos = _skip(buf, pos, inner, inner_wire, depth + 1)
    raise _Malformed  # a group with no end


def _fields(buf: memoryview) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value): an int for varints, a memoryview for length-delimited fields."""
    pos, end = 0, len(buf)
    while pos < end:
        number, wire, pos = _key(buf, pos)
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > end:
                raise _Malformed
            yield number, wire, buf[pos : pos + size]
            pos += size
        else:
            pos = _skip(buf, pos, number, wire)
    if pos != end:
        raise _Malformed


# message kind -> {field number: message kind of that field}; "tensor" is handled by _tensor
_CHILDREN: dict[str, dict[int, str]] = {
    "model": {7: "graph", 25: "function"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},
    "function": {7: "node"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph", 22: "sparse", 23: "sparse"},
    "sparse": {1: "tensor", 2: "tensor"},
}


def _tensor(buf: memoryview) -> list[str]:
    """The locations an external tensor names ([""] when it names none); [] for a tensor held inline. Every
    "location" entry counts, whichever one a parser would use; names are decoded as the file system would."""
    external = False
    locations: list[str] = []
    for number, wire, value in _fields(buf):
        if number == 14 and wire == 0 and value == 1:  # data_location = EXTERNAL
            external = True
        elif number == 13 and wire == 2 and isinstance(value, memoryview):  # external_data: key/value
            key, entry = b"", b""
            for n, w, v in _fields(value):
                if w == 2 and isinstance(v, memoryview):
                    if n == 1:
                        key = bytes(v)
                    elif n == 2:
                        entry = bytes(v)
            if key == b"location":
                locations.append(os.fsdecode(entry))
    return locations or ([""] if external else [])


def _walk(buf: memoryview, kind: str, depth: int, found: list[str]) -> None:
    if depth > MAX_DEPTH:
        raise BuildError(f"the model nests graphs more than {MAX_DEPTH} deep; trt_widget does not build it")
    children = _CHILDREN[kind]
    for number, wire, value in _fields(buf):
        child = children.get(number)
        if child is None or wire != 2 or not isinstance(value, memoryview):
            continue
        if child == "tensor":
            found.extend(_tensor(value))
        else:
            _walk(value, child, depth + 1, found)


def external_locations(data: bytes | memoryview) -> list[str]:
    """Every external-data location the serialized model names, in order (duplicates kept once)."""
    found: list[str] = []
    if isinstance(data, bytes) and len(data) < QUICK_SCAN_BYTES and b"location" not in data:
        return found  # an external-data entry names its file under the key "location": none, nothing to walk
    try:
        _walk(memoryview(data), "model", 0, found)
    except _Malformed:
        # fail closed: what this reader cannot follow might hide a name from it, never from TensorRT's parser
        raise BuildError(
            "the model is not a well-formed ONNX protobuf where it names external data; trt_widget does not "
            "build it (re-save it with onnx.save_model)"
        ) from None
    return list(dict.fromkeys(found))


# Set in the builder process only: there a model file is memory-mapped (big tensors never copied). A mapped file that
# shrinks (an exporter rewriting the model) is SIGBUS, which ends the builder process, reported, never the user's:
# in the user's process a model file is read instead.
MAP_FILES = False


class NotAModelFile(OSError):
    """A model path that is no regular file (a FIFO, a device, a folder) or is larger than any ONNX model file."""


def open_model(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of the model file at ``path``, opened without blocking (a FIFO would wait for a
    writer for ever); NotAModelFile unless it is a regular file of at most :data:`MAX_MODEL_BYTES` (``/dev/zero``
    was read until memory ran out)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAModelFile(errno.EINVAL, "not a regular file (a FIFO, a device or a folder?)", os.fspath(path))
        if info.st_size > MAX_MODEL_BYTES:
            raise NotAModelFile(
                errno.EFBIG, f"larger than {MAX_MODEL_BYTES:,} bytes (protobuf's limit)", os.fspath(path)
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_model(handle: BinaryIO, path: str | os.PathLike[str]) -> bytes:
    """The bytes of a model file opened with :func:`open_model`, never more than :data:`MAX_MODEL_BYTES` of them
    (a file that grows meanwhile, or a ``/proc`` file whose size says 0, is refused at the bound)."""
    data = handle.read(MAX_MODEL_BYTES + 1)
    if len(data) > MAX_MODEL_BYTES:
        raise NotAModelFile(errno.EFBIG, f"larger than {MAX_MODEL_BYTES:,} bytes (protobuf's limit)", os.fspath(path))
    return data


def read_model_keyed(handle: BinaryIO, path: str | os.PathLike[str]) -> tuple[bytes, str | None]:
    """:func:`read_model`, and the key of the file read (:func:`read_key`): a runner that ships the model's bytes
    tells its build which file they came from (``RunContext.on_read_files``)."""
    before = os.fstat(handle.fileno())
    data = read_model(handle, path)
    vouches = stat_vouches(before, handle.fileno(), time.time_ns())
    return data, read_key(before, os.fstat(handle.fileno()), None if vouches else hashlib.sha256(data).hexdigest())


def stat_key(info: os.stat_result) -> str:
    """``device:inode:size:mtime_ns:ctime_ns``: changes with any write, replacement or utime of the file."""
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def settled(info: os.stat_result, read_at: int) -> bool:
    """Whether what was read of the file ``info`` describes from ``read_at`` (``time.time_ns()``) still holds
    while its stat is unchanged: its last change lies :data:`RACY_NS` before the read began."""
    return max(info.st_ctime_ns, info.st_mtime_ns) <= read_at - RACY_NS


MODEL_FILE = ""  # the model file's name in a record of the files read (no external-data location is empty)


def content_key(sha256: str) -> str:
    """The key of a file's bytes by their hash, where its stat cannot stand for them (:func:`vouching_key`)."""
    return f"sha256:{sha256}"


def stat_vouches(info: os.stat_result, file: int | str | None, at: int) -> bool:
    """Whether the stat key of the file ``info`` describes (``file``: its descriptor or path) stands for its bytes
    read at ``at`` (``time.time_ns()``): only this user (or root) may write it now, its file system stamps stores
    through a map once written back, and its last change lies :data:`RACY_NS` before ``at``, so that no page of it
    can still be dirty from a time another user could write it (a map made then keeps write access after a chmod
    or chown: D25-1). A builder that reads a file whose stat does not vouch for it parses a private copy of its
    bytes and reports their hash (:func:`read_key`)."""
    if os.name != "posix":
        return settled(info, at)
    return not rewritable_by_others(info, file) and _stamping(info.st_dev) and settled(info, at)


def vouching_key(info: os.stat_result, sha256: str, file: int | str | None, at: int) -> str:
    """The key a build compares with the file its builder read (``RunContext.on_read_files``): the stat key where
    it stands for the bytes hashed from ``at`` (:func:`stat_vouches`), so that any change since shows in it; else
    the hash of the bytes (``sha256``, read now, never remembered)."""
    return stat_key(info) if stat_vouches(info, file, at) else content_key(sha256)


def read_key(before: os.stat_result, after: os.stat_result | None, sha256: str | None) -> str | None:
    """What a builder records of a file it read (:func:`note_key`): its stat key where unchanged across the read
    (``before``, ``after``), and the hash of the bytes it parsed where it took one (``sha256``: a file whose stat may
    not stand for its bytes), space-separated; None where it has neither. A build's key matches either."""
    parts = [stat_key(before)] if after is not None and stat_key(after) == stat_key(before) else []
    parts += [content_key(sha256)] if sha256 is not None else []
    return " ".join(parts) or None


def read_matches(read: str | None, hashed: str | None) -> bool:
    """Whether what a builder read (:func:`read_key`) is what a build hashed (:func:`vouching_key`)."""
    return read is not None and hashed is not None and hashed in read.split(" ")


def _stamping(device: int) -> bool:
    """Whether the file system of ``device`` is one of :data:`STAMPING_FILE_SYSTEMS` (``/proc/self/mountinfo``, read
    each time: an anonymous device number, a tmpfs's or an overlay's, is given to another mount once unmounted)."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split(" ")
                if len(fields) > 2 and fields[2] == wanted and " - " in line:
                    return line.split(" - ", 1)[1].split(" ", 1)[0] in STAMPING_FILE_SYSTEMS
    except OSError:
        pass
    return False


_reads: contextvars.ContextVar[dict[str, str | None] | None] = contextvars.ContextVar("trt_widget_reads", default=None)


@contextlib.contextmanager
def recording_reads() -> Iterator[dict[str, str | None]]:
    """Around a build: which files its parser read, by name (:data:`MODEL_FILE`, each location), each with the
    stat key its descriptor had before and after the read (None where the two differ): see :func:`note_read`."""
    reads: dict[str, str | None] = {}
    token = _reads.set(reads)
    try:
        yield reads
    finally:
        _reads.reset(token)


def note_read(name: str, before: os.stat_result, after: os.stat_result | None, sha256: str | None = None) -> None:
    """Record that the build read the file ``name`` (its descriptor's stat ``before`` and ``after`` the read; None:
    the bytes read are not that file's for sure; ``sha256``: the hash of the bytes parsed, where taken: see
    :func:`read_key`). Two reads of one name with different keys record None."""
    note_key(name, read_key(before, after, sha256))


def note_key(name: str, key: str | None) -> None:
    """Record that the build read the file ``name`` as ``key`` (:func:`read_key`; None: not for sure). Every record
    goes through here, most through :func:`note_read`; two reads of one name with different keys record None."""
    reads = _reads.get()
    if reads is None:
        return
    if name in reads and reads[name] != key:
        key = None
    reads[name] = key


_memo_lock = threading.Lock()
_memo: dict[str, tuple[int, tuple[str, ...]]] = {}  # stat_key -> (read_at, locations), this process only


def remember_locations(info: os.stat_result, read_at: int, locations: tuple[str, ...] | list[str]) -> None:
    """Keep the external-data locations read (from ``read_at``) of the model file ``info`` describes, so the
    output-path checks of a build do not read an unchanged model again (a few files, this process only)."""
    with _memo_lock:
        _memo.pop(stat_key(info), None)
        _memo[stat_key(info)] = (read_at, tuple(locations))
        while len(_memo) > MEMO_FILES:
            del _memo[next(iter(_memo))]


def _recall(info: os.stat_result) -> list[str] | None:
    with _memo_lock:
        found = _memo.get(stat_key(info))
    return list(found[1]) if found is not None and settled(info, found[0]) else None


def file_locations(path: str, mapped: mmap.mmap | None = None, *, remembered: bool = True) -> list[str]:
    """``external_locations`` of an ONNX file, read through a read-only map in the builder process (big tensors are
    never copied), read into memory elsewhere (see ``MAP_FILES``); ``mapped``: the caller's map of that file.
    Remembered by the file's stat in this process (see :func:`settled`); ``remembered=False``: read now (the check
    before TensorRT's parser reads the file, which trusts no earlier answer)."""
    if mapped is not None:
        return _mapped_locations(mapped)
    with open(open_model(path), "rb") as handle:
        info = os.fstat(handle.fileno())
        known = _recall(info) if remembered else None
        if known is not None:
            return known
        read_at = time.time_ns()
        if not MAP_FILES:
            found = external_locations(read_model(handle, path))
        elif info.st_size == 0:
            found = []
        else:
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as own:
                found = _mapped_locations(own)
        if stat_key(os.fstat(handle.fileno())) == stat_key(info):
            remember_locations(info, read_at, found)
    return found


def _mapped_locations(mapped: mmap.mmap) -> list[str]:
    if mapped.size() < QUICK_SCAN_BYTES and mapped.find(b"location") < 0:
        return []  # as in external_locations
    view = memoryview(mapped)
    try:
        return external_locations(view)
    finally:
        view.release()


NO_DIRECTORY_HINT = (
    "Save the model with its data next to it (onnx.save_model(model, 'dir/model.onnx', "
    "save_as_external_data=True)) and pass the path 'dir/model.onnx'"
)


def check_external_data(locations: list[str], directory: str | None, label: str, hint: str = "") -> None:
    """Raise BuildError unless every location is a file inside ``directory`` (None: no location is allowed)."""
    if not locations:
        return
    label = escape_controls(label)  # the model's path as given: one line in the message, its newline as \x0a
    first = locations[0][:200]
    if directory is None:
        raise BuildError(
            f"{label} refers to external data ({first!r}{f' and {len(locations) - 1} more' if locations[1:] else ''})"
            f" that this build does not read: a model given without its directory may name no files. "
            f"{hint or NO_DIRECTORY_HINT}"
        )
    root = os.path.realpath(directory)
    for location in locations:
        shown = location[:200]
        if "\0" in location:
            raise BuildError(f"{label} names external data {shown!r}, which holds a NUL byte: no file has such a name")
        if not _relative_inside(location):
            raise BuildError(
                f"{label} names external data {shown!r} outside its own directory; external data must be a "
                "relative path inside the model's directory (no absolute paths, no '..')"
            )
        target = os.path.realpath(os.path.join(root, location))
        if not _under(root, target):
            raise BuildError(
                f"{label} names external data {shown!r}, which leads outside the model's directory "
                "(a symbolic link?); external data must be a file inside the model's directory"
            )
        if not os.path.isfile(target):
            raise BuildError(f"{label} names external data {shown!r}, which is not a file next to the model")


def _relative_inside(location: str) -> bool:
    """A relative name without ``..`` or NUL (no file's name: ``realpath`` raises ValueError): the first half of the
    model-file rule, before any link is resolved."""
    parts = location.replace("\\", "/").split("/")
    return (
        bool(location)
        and "\0" not in location
        and not os.path.isabs(location)
        and not location.startswith(("/", "\\"))
        and ".." not in parts
    )


def _under(root: str, target: str) -> bool:
    return os.path.commonpath([root, target]) == root and target != root


def allowed_file(location: str, directory: str) -> str | None:
    """The real path of the external-data file ``location`` when the model-file rule lets a build read it (a
    regular file inside ``directory``, links resolved), else None: what a bundle may pack of a model's data."""
    if not _relative_inside(location):
        return None
    root = os.path.realpath(directory)
    target = os.path.realpath(os.path.join(root, location))
    return target if _under(root, target) and os.path.isfile(target) else None


def opened_path(fd: int, expected: str | None = None) -> str | None:
    """Where the file open as ``fd`` lies now, links resolved (``/proc/self/fd``): the file read, whatever its name
    leads to since. Without ``/proc``: ``expected`` when that real path names the very file (device and inode),
    else None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if expected is None:
        return None
    try:
        real = os.path.realpath(expected)
        here, there = os.fstat(fd), os.stat(real)
    except (OSError, ValueError):
        return None
    return real if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino) else None


def open_inside(location: str, directory: str) -> int | None:
    """A read-only descriptor of the external-data file ``location`` when what it opens is a regular file inside
    ``directory`` (links resolved, checked on the descriptor: no later swap of a name for a link changes the file
    read), else None. The check-and-open of :func:`allowed_file` in one step."""
    if not _relative_inside(location):
        return None
    root = os.path.realpath(directory)
    joined = os.path.join(root, location)
    try:
        fd = os.open(joined, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        where = opened_path(fd, joined)
        if stat.S_ISREG(os.fstat(fd).st_mode) and where is not None and _under(root, where):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def rewritable_by_others(info: os.stat_result, file: int | str | None = None) -> bool:
    """Whether a user other than this one (or root) may write the file ``info`` describes (``file``: its
    descriptor or path, to look at its group and ACL): it is theirs, others may write it, or its group may, unless
    that group is this user's private group (umask 002 systems) and no ACL grants more. Its bytes may then change
    between a check and a parse that reads it again, and without its stat key changing (:func:`vouching_key`)."""
    if os.name != "posix":
        return False
    if info.st_uid not in (0, os.geteuid()) or info.st_mode & stat.S_IWOTH:
        return True
    if not info.st_mode & stat.S_IWGRP:
        return False
    return file is None or not _private_group(info.st_gid) or _has_acl(file)


def _private_group(gid: int) -> bool:
    """Whether ``gid`` is this user's private group: their primary group, named as they are, with no members, and
    no other account's primary group (``useradd -g alice``: D25-2; accounts a directory service does not list are
    not seen)."""
    import grp
    import pwd

    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(os.geteuid())
        if gid != user.pw_gid or group.gr_name != user.pw_name or group.gr_mem:
            return False
        return not any(other.pw_gid == gid and other.pw_uid != user.pw_uid for other in pwd.getpwall())
    except (KeyError, OSError):
        return False


def _has_acl(file: int | str) -> bool:
    """Whether the file has an access ACL (which may grant write to others; its mask shows in the group bits);
    True where that cannot be told."""
    try:
        os.getxattr(file, "system.posix_acl_access")
    except OSError as exc:
        return exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)
    except AttributeError:  # no xattr calls on this platform
        return True
    return True


def others_may_write(directory: str) -> str:
    """Why another user could rename entries of ``directory`` or of a folder on its way ("" where none can): its
    files' names may then lead elsewhere by the time a parser opens them."""
    from ._leftovers import UnsafeTempDir, check_parent

    try:
        check_parent(directory, "the model's folder", "")
    except UnsafeTempDir as exc:
        return str(exc).removesuffix("; ")
    except OSError as exc:
        return f"the model's folder cannot be inspected ({exc.strerror or exc})"
    return ""


def _theirs_in_open_folder(name: str, owner: int, folder: str, mine: tuple[int, int]) -> str:
    """Why the entry ``name`` (owned by ``owner``) of ``folder`` may be renamed by another user ("" where not): it
    is theirs and others may write the folder; the sticky bit stops no one renaming their own entries."""
    info = os.stat(os.path.realpath(folder))
    if owner in mine or not info.st_mode & (stat.S_IWOTH | stat.S_IWGRP):  # group bits: the group or an ACL's mask
        return ""
    return (
        f"{name[:200]!r} belongs to another user (uid {owner}) in {folder[:200]!r}, which others may write: they "
        "may rename it even where the folder is sticky"
    )


class HeldData:
    """The external-data files of a model opened once, each checked on its descriptor (:func:`open_inside`); what
    TensorRT's parser reads must be these files: see :meth:`folder`."""

    def __init__(self, locations: list[str], directory: str, label: str) -> None:
        label = escape_controls(label)  # quoted by the errors below: one line
        self.directory = directory
        self.fds: dict[str, int] = {}
        self.opened: dict[str, os.stat_result] = {}  # each file's stat as it was opened
        self.snapshot: str | None = None
        self.model: str | None = None  # the path of the model the parser is given, whose entry counts in shared()
        try:
            for location in locations:
                fd = open_inside(location, directory)
                if fd is None:
                    raise BuildError(
                        f"{label} names external data {location[:200]!r}, which is no longer a file inside the "
                        "model's directory (replaced by a symbolic link leading out, or removed, since it was "
                        "checked); external data must be a file inside the model's directory"
                    )
                self.fds[location] = fd
                self.opened[location] = os.fstat(fd)
        except BaseException:
            self.close()
            raise
        self.label = label
        # files whose stat does not stand for their bytes (:func:`stat_vouches`): parsed from a private copy,
        # hashed while copied
        now = time.time_ns()
        self.unvouched = {loc for loc, fd in self.fds.items() if not stat_vouches(self.opened[loc], fd, now)}
        self.copied: dict[str, str] = {}  # location -> sha256 of the bytes copied, for those

    def shared(self) -> str:
        """Why another user could swap the names in the model's folder ("" where only this user can): a folder on
        the way they may write without the sticky bit, or one they may write (sticky or not) holding an entry on
        the way that is theirs (the sticky bit lets a user rename their own entries: D22-2), ``model``'s too."""
        if not self.fds and self.model is None:
            return ""
        folders = {os.path.realpath(self.directory)}
        for location in self.fds:
            folders.add(os.path.dirname(os.path.realpath(os.path.join(self.directory, location))))
        for folder in sorted(folders):
            why = others_may_write(folder)
            if why:
                return why
        return self._others_entry(self.model)

    def _others_entry(self, model: str | None) -> str:
        """Why an entry on the way to a file held (or to ``model``) may be renamed by another user: it is theirs,
        in a folder others may write ("" where none is)."""
        if os.name != "posix":
            return ""
        given = os.path.abspath(self.directory)
        parts = given.split(os.sep)
        named = [os.sep.join(parts[:n]) for n in range(2, len(parts) + 1)]  # the folders as given (links too)
        named += [os.path.abspath(model)] if model is not None else []
        held: list[tuple[str, int]] = []  # (location, descriptor): the files themselves, whatever their names
        for location, fd in self.fds.items():
            steps = os.path.normpath(location).split(os.sep)
            named += [os.path.join(given, *steps[:n]) for n in range(1, len(steps) + 1)]
            held.append((location, fd))
        mine = (0, os.getuid())
        try:
            for entry in dict.fromkeys(named):
                why = _theirs_in_open_folder(entry, os.lstat(entry).st_uid, os.path.dirname(entry), mine)
                if why:
                    return why
            for location, fd in held:
                real = os.path.realpath(os.path.join(given, location))
                why = _theirs_in_open_folder(location, os.fstat(fd).st_uid, os.path.dirname(real), mine)
                if why:
                    return why
        except (OSError, ValueError) as exc:
            return f"an entry on the way to the model's data cannot be inspected ({getattr(exc, 'strerror', exc)})"
        return ""

    def copy_to_snapshot(self, model: bytes | memoryview) -> str:
        """A private 0700 folder holding ``model`` (as ``model.onnx``) and a copy of each file held, under the
        name the model gives it: the path of the model there, whose data no other user can swap."""
        from ._leftovers import private_dir

        self.snapshot = private_dir("trt_widget-model-")
        folder = os.path.join(self.snapshot, "model")  # apart from the lock file private_dir keeps
        os.mkdir(folder, 0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        digests: dict[str, str] = {}  # target -> sha256 of the bytes copied there (of a file others may write)
        for location, fd in self.fds.items():
            target = os.path.join(folder, os.path.normpath(location))
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            try:
                out = os.open(target, flags, 0o600)
            except FileExistsError:  # 'w.bin' and './w.bin': one file, one copy the parser reads for both
                if target in digests:
                    self.copied[location] = digests[target]
                continue
            digest = hashlib.sha256() if location in self.unvouched else None
            with open(out, "wb") as sink:
                os.lseek(fd, 0, os.SEEK_SET)
                while block := os.read(fd, 16 << 20):
                    sink.write(block)
                    if digest is not None:
                        digest.update(block)
            if digest is not None:
                self.copied[location] = digests[target] = digest.hexdigest()
        path, n = os.path.join(folder, "model.onnx"), 0
        while os.path.lexists(path):  # a model naming its data 'model.onnx'
            n += 1
            path = os.path.join(folder, f"model-{n}.onnx")
        with open(os.open(path, flags, 0o600), "wb") as sink:
            sink.write(model)
        return path

    def check_unchanged(self) -> None:
        """Raise BuildError unless each name still leads to the file held (the parser opened the names again)."""
        root = os.path.realpath(self.directory)
        for location, fd in self.fds.items():
            try:
                real = os.path.realpath(os.path.join(root, location))
                here, there = os.fstat(fd), os.stat(real)
                same = _under(root, real) and (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
            except (OSError, ValueError):
                same = False
            if not same:
                raise BuildError(
                    f"{self.label}: its external data {location[:200]!r} was replaced while the model was parsed; "
                    "the engine is not built from it (build again once the model's folder is settled)"
                )

    def note_reads(self) -> None:
        """Record each file held as read (:func:`note_read`): its stat as opened and now, once the parser read it
        in place or it was copied."""
        for location, fd in self.fds.items():
            try:
                now: os.stat_result | None = os.fstat(fd)
            except OSError:
                now = None
            # where copied for its stat's sake, with the hash of the bytes copied (None: not copied under this name)
            if location in self.unvouched and location not in self.copied:
                note_key(location, None)
                continue
            note_read(location, self.opened[location], now, self.copied.get(location))

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        if self.snapshot is not None:
            from ._leftovers import remove_private_dir

            remove_private_dir(self.snapshot)
            self.snapshot = None

    def __enter__(self) -> HeldData:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
