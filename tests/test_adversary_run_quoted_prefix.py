"""Sixteenth adversarial re-run (issue 35): ``trt-widget run`` from a virtual environment whose path holds an
apostrophe (``~/Bob's project/.venv``) or a backslash watches nothing. The sitecustomize it injects (28e2688) puts
``repr()`` of "source <prefix>/bin/activate" inside an f-string's braces; Python 3.11 refuses a quote of the
f-string's own kind (repr picks ``"`` for a text holding ``'``) or a backslash there, so every Python process of the
command prints "Error in sitecustomize ... SyntaxError" and its TensorRT builds are not shown (nor is the command's
own sitecustomize run). A real TensorRT for RTX build, no trt_widget in the command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from user_scripts import DIRECT_BUILD

from trt_widget.models import deep_residual, to_bytes

# an apostrophe and a backslash (the two the re-run found), a double quote, a newline, braces, a name that is not UTF-8
NAMES = ["Bob's project", "back\\slash", 'say "env"', "new\nline", "{brace}", os.fsdecode(b"env-\xff")]


@pytest.mark.parametrize(
    "name", NAMES, ids=["apostrophe", "backslash", "double-quote", "newline", "braces", "not-utf8"]
)
def test_run_watches_builds_from_an_environment_whose_path_holds_an_apostrophe(tmp_path: Path, name: str) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs trt_widget installed in a virtual environment (the activate hint is given only there)")
    env = tmp_path / name
    env.symlink_to(sys.prefix, target_is_directory=True)  # the same environment, reached by such a path
    python = env / "bin" / "python"
    said_prefix = subprocess.run([str(python), "-c", "import sys; print(ascii(sys.prefix))"], capture_output=True,
                                 text=True, check=True).stdout.strip()  # fmt: skip
    assert said_prefix == ascii(str(env))
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (tmp_path / "direct.py").write_text(DIRECT_BUILD, encoding="utf-8")
    done = subprocess.run(
        [str(python), "-m", "trt_widget", "run", "--plain", "--", str(python), "direct.py", "m.onnx"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-1500:]
    assert "ENGINE" in done.stdout, said[-1500:]  # the command itself ran its build
    assert "SyntaxError" not in said, said[-1500:]
    assert "Succeeded in" in said, said[-1500:]  # and trt-widget run showed it


def test_run_gives_the_activate_hint_for_an_environment_whose_path_holds_quotes_and_a_backslash(
    tmp_path: Path,
) -> None:
    """The hint itself (the path the fix moved out of the f-string): a command that another python ran is told to
    activate this environment, its path printed as it is."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs trt_widget installed in a virtual environment (the activate hint is given only there)")
    env = tmp_path / 'Bob\'s "env" \\ here'
    env.symlink_to(sys.prefix, target_is_directory=True)
    bare = tmp_path / "bare"  # a second interpreter without TensorRT or trt_widget
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    (tmp_path / "hi.py").write_text('print("hi")\n', encoding="utf-8")
    done = subprocess.run(
        [
            str(env / "bin" / "python"),
            "-m",
            "trt_widget",
            "run",
            "--plain",
            "--",
            str(bare / "bin" / "python"),
            "hi.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, said[-1500:]
    assert "SyntaxError" not in said, said[-1500:]
    assert f"run the command with that python, or activate its environment first (source {env}/bin/activate)" in said


def test_run_watches_builds_when_the_temp_folder_holds_a_path_separator(tmp_path: Path) -> None:
    """The injected folder goes on PYTHONPATH, which splits at ':': under a TMPDIR holding one, the command's
    processes never found the sitecustomize and nothing was watched (silently). It is made under /tmp then."""
    temp = tmp_path / "a:b"
    temp.mkdir(mode=0o700)
    (tmp_path / "m.onnx").write_bytes(to_bytes(deep_residual(2)))
    (tmp_path / "direct.py").write_text(DIRECT_BUILD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--plain", "--", sys.executable, "direct.py", "m.onnx"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-1500:]
    assert "ENGINE" in done.stdout, said[-1500:]
    assert "Succeeded in" in said, said[-1500:]


def test_run_finds_its_sitecustomize_when_the_temp_folder_links_to_one_holding_a_path_separator(
    tmp_path: Path,
) -> None:
    """The folder made is the temp folder's real path: a TMPDIR without ':' that links to a folder with one put
    the injected folder on PYTHONPATH split in two, and the command's python never ran the sitecustomize."""
    temp = tmp_path / "a:b"
    temp.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(temp, target_is_directory=True)
    done = subprocess.run(
        [sys.executable, "-m", "trt_widget", "run", "--plain", "--", sys.executable, "-c",
         "import sitecustomize; print('INJECTED', sitecustomize.__doc__.startswith('Injected by trt-widget run'))"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path / "link")},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-1500:]
    assert "INJECTED True" in done.stdout, said[-1500:]
