"""What trt_widget's ``ray.init`` passes as the job's ``working_dir`` (issue 35, sixteenth re-run): an empty
private folder unless the caller, a submitted Ray job or ``uv run`` gives one; and, for a local instance it starts,
Ray's ``_temp_dir`` inside that private folder (twenty-first re-run, D2). ``ray.init`` itself is recorded here (what
a real start does with it: tests/ray/test_adversary_ray_working_directory.py, test_adversary_ray_session_folder.py)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from trt_widget.ray import _runner


class _Init(ModuleType):
    """Records the keyword arguments of ``init`` and what its ``working_dir`` held while it ran."""

    def __init__(self) -> None:
        super().__init__("ray")
        self.kwargs: dict[str, object] = {}
        self.held: list[str] | None = None
        self.mode = 0
        self.shutdowns = 0

    def init(self, **kwargs: object) -> None:
        self.kwargs = kwargs
        env = kwargs.get("runtime_env")
        folder = env.get("working_dir") if isinstance(env, dict) else None
        if isinstance(folder, str) and os.path.isdir(folder):
            self.held = os.listdir(folder)
            self.mode = stat.S_IMODE(os.stat(os.path.dirname(folder)).st_mode)

    def shutdown(self, **kwargs: object) -> None:
        self.shutdowns += 1


@pytest.fixture(autouse=True)
def _own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t").mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_TMPDIR", raising=False)
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    if _UV_HOOK is not None:  # whether these tests themselves run under `uv run` says nothing here
        monkeypatch.setattr(_UV_HOOK, "_get_uv_run_cmdline", lambda: None)


def _uv_hook() -> ModuleType | None:
    try:
        from ray._private.runtime_env import uv_runtime_env_hook
    except ImportError:
        return None
    return uv_runtime_env_hook


_UV_HOOK = _uv_hook()


def test_the_job_gets_an_empty_private_working_dir_and_keeps_the_callers_runtime_env(tmp_path: Path) -> None:
    ray = _Init()
    _runner._init(ray, "auto", {"num_cpus": 1, "runtime_env": {"env_vars": {"A": "1"}}})
    env = ray.kwargs["runtime_env"]
    assert isinstance(env, dict) and env["env_vars"] == {"A": "1"} and ray.kwargs["num_cpus"] == 1
    folder = env["working_dir"]
    assert ray.held == [] and ray.mode == 0o700, (ray.held, oct(ray.mode))
    assert not os.path.exists(folder) and os.listdir(tmp_path / "t") == []  # removed once Ray has it
    assert ray.kwargs["address"] == "auto" and "_temp_dir" not in ray.kwargs  # a cluster joined: its folders


def test_a_local_instance_keeps_its_session_in_the_private_folder_until_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray's temp dir (which Ray makes 0777) is a folder inside the 0700 private one, kept while the instance lives;
    ending it shuts the instance down, then removes the folder; a new local start ends what an earlier one left."""
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"  # short: Ray's socket paths must fit under it
    monkeypatch.setenv("TMPDIR", parent)

    def ours() -> list[str]:
        return glob.glob(os.path.join(parent, f"trt_widget-ray-{os.getpid()}-*"))

    try:
        ray = _Init()
        _runner._init(ray, None, None)
        made = os.path.dirname(str(ray.kwargs["_temp_dir"]))
        assert ours() == [made] and stat.S_IMODE(os.stat(made).st_mode) == 0o700
        assert ray.kwargs["_temp_dir"] == os.path.join(made, "r")
        assert ray.kwargs["runtime_env"] == {"working_dir": os.path.join(made, "cwd")}
        again = _Init()
        _runner._init(again, "local", None)  # Ray's "local": a new instance of ours too
        assert ray.shutdowns == 1 and not os.path.exists(made)  # the earlier one's, shut down and removed
        assert len(ours()) == 1
        _runner.end_local_ray()
        assert again.shutdowns == 1 and ours() == []
        _runner.end_local_ray()  # nothing of ours left: nothing done
        assert again.shutdowns == 1
        monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")  # RAY_ADDRESS: a cluster joined, its folders
        _runner._init(ray, None, None)
        assert "_temp_dir" not in ray.kwargs and ours() == []
        monkeypatch.delenv("RAY_ADDRESS")
        _runner._init(ray, None, {"_temp_dir": "/srv/mine"})  # the caller's own temp dir: theirs
        assert ray.kwargs["_temp_dir"] == "/srv/mine" and ours() == []
    finally:
        _runner.end_local_ray()


def test_a_long_temporary_folder_puts_the_local_instance_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a temporary folder too deep for Ray's socket paths (AF_UNIX: 107 bytes) the private folder goes to /tmp."""
    deep = tmp_path / "t" / ("d" * 60)
    deep.mkdir(mode=0o700)
    ray = _Init()
    monkeypatch.setenv("TMPDIR", str(deep))
    try:
        _runner._init(ray, None, None)
        made = os.path.dirname(str(ray.kwargs["_temp_dir"]))
        assert os.path.dirname(made) == "/tmp" and stat.S_IMODE(os.stat(made).st_mode) == 0o700
    finally:
        _runner.end_local_ray()
    assert not os.path.exists(made)


def test_a_working_dir_given_is_left_to_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _Init()
    _runner._init(ray, "auto", {"runtime_env": {"working_dir": "s3://bucket/pkg.zip"}})
    assert ray.kwargs == {"address": "auto", "runtime_env": {"working_dir": "s3://bucket/pkg.zip"}}
    # a `ray job submit` driver: Ray merges the job's runtime_env (its working_dir) with ours, and refuses a second
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": "gcs://p.zip"}}))
    _runner._init(ray, "auto", None)
    assert ray.kwargs == {"address": "auto"}
    # under `uv run` Ray makes the uv project the working_dir, and refuses one without its pyproject.toml
    if _UV_HOOK is not None:
        monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
        monkeypatch.setattr(_UV_HOOK, "_get_uv_run_cmdline", lambda: ["uv", "run", "trt-widget"])
        _runner._init(ray, "auto", {"num_cpus": 1})
        assert ray.kwargs == {"address": "auto", "num_cpus": 1}


def test_a_malformed_job_config_or_runtime_env_changes_nothing_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _Init()
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "[not json")
    _runner._init(ray, "auto", None)
    env = ray.kwargs["runtime_env"]
    assert isinstance(env, dict) and ray.held == []
    _runner._init(ray, "auto", {"runtime_env": "not a mapping"})  # Ray's own error to give
    assert ray.kwargs["runtime_env"] == "not a mapping"


# in a mount namespace of its own, a temporary folder (a tmpfs) with no inode left once the private folder and its
# lock file are made: the empty working_dir in it cannot be made (ENOSPC)
NO_ROOM = """
import os, sys
from trt_widget.ray import _runner
try:
    from ray._private.runtime_env import uv_runtime_env_hook
    uv_runtime_env_hook._get_uv_run_cmdline = lambda: None  # as _own_tmpdir: `uv run` around the tests says nothing
except ImportError:
    pass
class Ray:
    def init(self, **kwargs):
        print("INIT", kwargs)
try:
    _runner._init(Ray(), "auto", None)
except OSError as exc:
    print("REFUSED", exc.errno)
print("LEFT", sorted(os.listdir(sys.argv[1])))
"""


@pytest.mark.slow  # a Python of its own, in a mount namespace of its own
def test_the_private_folder_is_removed_when_its_working_dir_cannot_be_made(tmp_path: Path) -> None:
    """A temporary folder out of room (here out of inodes) after the private folder was made: the error is
    ``ray.init``'s caller's, and nothing of ours stays there (the folder stayed, locked, for the process's life)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux's unshare")
    room = tmp_path / "t" / "full"
    room.mkdir(mode=0o700)
    mount = 'mount -t tmpfs -o size=1m,nr_inodes=3,mode=0700 tmpfs "$1" && TMPDIR="$1" exec "$0" -c "$2" "$1"'
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", mount, sys.executable, str(room), NO_ROOM],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "LEFT" not in done.stdout:
        pytest.skip(f"no tmpfs in a mount namespace of its own here: {done.stderr[-500:]}")
    assert "REFUSED 28" in done.stdout and "INIT" not in done.stdout, done.stdout + done.stderr
    assert "LEFT []" in done.stdout, done.stdout + done.stderr
