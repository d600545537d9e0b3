"""Every fenced Python and shell block of README.md and docs/*.md runs as written, as the doctest habit has it
(issue 39). A block that needs a GPU, a server or a long-running process says so on the line before its fence,
``<!-- no-run: why -->``, and is only checked for that mark.

Per Markdown file: its Python blocks run in order in one fresh interpreter with one namespace (top-level
``await`` allowed, as in a notebook cell), then its shell blocks, each with ``bash -e`` (a ``console`` block: its
``$ `` lines), all in a temp folder holding the files the docs name (``model.onnx``, ``a.onnx``, ``build.py``...),
with this environment's ``bin`` first on PATH for shell blocks and off PATH for Python blocks (a notebook kernel
started as ``scripts/demo.sh`` does it lacks ``.venv/bin``: a block must name the interpreter). Every build a
Python block starts must not fail: a block that starts a build and moves on would otherwise pass whatever the
build did."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from trt_widget.models import deep_residual, to_bytes

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"python": "python", "bash": "shell", "sh": "shell", "console": "console"}
FENCE = re.compile(r"^```(\S*)\s*$")
NO_RUN = re.compile(r"^<!--\s*no-run:\s*(?P<why>.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # the opening fence's line, 1-based
    language: str  # python, shell or console
    code: str
    no_run: str | None  # why it is not run, from the mark before its fence

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` in a language this test runs."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        before = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        mark = NO_RUN.match(before)
        language = LANGUAGES.get(opening.group(1))
        if language is not None:
            code = "\n".join(lines[index + 1 : end]) + "\n"
            found.append(Block(path, index + 1, language, code, mark.group("why") if mark else None))
        index = end + 1
    return found


ALL = [block for path in FILES for block in blocks(path)]
RUN_FILES = sorted({b.path for b in ALL if b.no_run is None}, key=FILES.index)


def test_the_docs_have_blocks_to_run_and_every_exception_says_why() -> None:
    assert {b.language for b in ALL if b.no_run is None} == {"python", "shell", "console"}
    for block in ALL:
        if block.no_run is not None:
            assert re.search(r"\b(GPU|server|long-running|installs)\b", block.no_run), (block.where, block.no_run)
    for path in FILES:  # a mark is on the line before a fence, not lost somewhere else
        text = path.read_text(encoding="utf-8")
        marks = len(re.findall(r"<!--\s*no-run:", text))
        assert marks == sum(1 for b in ALL if b.path == path and b.no_run is not None), path


def test_a_widget_the_docs_say_a_cell_displays_is_that_cells_last_line() -> None:
    """Pasted into one cell, a block shows its widget only when the widget is the cell's last expression."""
    for block in (b for b in ALL if b.language == "python"):
        lines = [line for line in block.code.splitlines() if line.strip()]
        for index, line in enumerate(lines):
            if "last expression of" in line:
                assert index == len(lines) - 1, f"{block.where}: {line.strip()!r} is not the block's last line"


def test_no_block_ends_by_dumping_a_report_text_into_the_cell() -> None:
    """Issue 39 (fifth trial, J): docs/notebooks.md ended a block with ``b.to_html(), b.to_trace()``: pasted into a
    cell, 37 KB of raw text as its output. A block's last expression is never such a text."""
    import ast

    texts = {"to_html", "to_trace", "to_json", "table_text"}
    for block in (b for b in ALL if b.language == "python"):
        try:
            body = ast.parse(block.code).body
        except SyntaxError:
            continue  # top-level await and the like: the run test covers these blocks
        if not body or not isinstance(body[-1], ast.Expr):
            continue
        value = body[-1].value
        calls = value.elts if isinstance(value, ast.Tuple) else [value]
        dumped = [
            c.func.attr
            for c in calls
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in texts and not c.args
        ]
        assert not dumped, f"{block.where}: its last line shows the raw text of {', '.join(dumped)}()"


# the interpreter the Python blocks of one file run in: one namespace, one event loop for top-level await, and
# every Build started recorded so that its outcome is checked when the blocks are done
RUNNER = textwrap.dedent(
    r"""
    import ast, asyncio, json, logging, sys, traceback
    from trt_widget import _build

    logged = []  # an error a library logs (e.g. a callback of the wrong kind) fails the block as a raise would

    class Errors(logging.Handler):
        def emit(self, record):
            logged.append(self.format(record))

    logging.getLogger().addHandler(Errors(logging.ERROR))

    started = []
    _start = _build.Build.start

    def start(self, *args, **kwargs):
        started.append(self)
        return _start(self, *args, **kwargs)

    _build.Build.start = start
    loop = asyncio.new_event_loop()
    namespace = {"__name__": "__main__"}
    for where, code in json.loads(sys.stdin.read()):
        print(f"--- {where}", flush=True)
        try:
            compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(compiled, namespace)
            if asyncio.iscoroutine(result):
                loop.run_until_complete(result)
        except BaseException:
            traceback.print_exc()
            print(f"BLOCK FAILED: {where}", flush=True)
            sys.exit(1)
        if logged:
            print(*logged, f"BLOCK LOGGED AN ERROR: {where}", sep="\n", flush=True)
            sys.exit(1)
    for build in started:
        build.wait(600)
        if build.status == "failed":
            print(f"BUILD FAILED: {build.source.label}: {build.error or build.status_detail}", flush=True)
            sys.exit(1)
    print("ALL BLOCKS RAN", flush=True)
    """
)

# a user's own build script, as the docs' `python build.py` means
BUILD_PY = textwrap.dedent(
    """
    from trt_widget import trt  # this machine's TensorRT: a user's script says import tensorrt as trt

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse_from_file("model.onnx")
    engine = builder.build_serialized_network(network, builder.create_builder_config())
    open("model.engine", "wb").write(engine)
    """
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the docs name, once: a small model whose input "input" takes the docs' shapes (N x 3 x 224 x
    224, a dynamic batch where the docs give profiles), copies as a.onnx and b.onnx, and a user's build.py."""
    folder = tmp_path_factory.mktemp("docs-files")
    static = to_bytes(deep_residual(2, channels=3, size=224))
    (folder / "model.onnx").write_bytes(static)
    (folder / "a.onnx").write_bytes(static)
    (folder / "b.onnx").write_bytes(static)
    (folder / "dynamic.onnx").write_bytes(to_bytes(deep_residual(2, channels=3, size=224, batch="N")))
    (folder / "build.py").write_text(BUILD_PY)
    return folder


# the docs whose examples give profiles for a dynamic batch: their model.onnx is the dynamic one
DYNAMIC = {"options.md"}


def _folder(files: Path, tmp_path: Path, path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(files, work)
    if path.name in DYNAMIC:
        for name in ("model.onnx", "a.onnx", "b.onnx"):
            shutil.copyfile(work / "dynamic.onnx", work / name)
    return work


def _env(work: Path, *, venv_bin: bool = True) -> dict[str, str]:
    """The blocks' environment: shell blocks get this environment's ``bin`` first on PATH, Python blocks none."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    rest = [d for d in env.get("PATH", "").split(os.pathsep) if d and d != bin_dir]
    env["PATH"] = os.pathsep.join([bin_dir, *rest] if venv_bin else rest)
    env["HOME"] = str(work)  # ~ in a block is the temp folder
    env.setdefault("TRT_WIDGET_HISTORY", str(work / "history.sqlite"))
    return env


def _shell(block: Block) -> str:
    if block.language == "console":
        return "\n".join(line[2:] for line in block.code.splitlines() if line.startswith("$ ")) + "\n"
    return block.code


@pytest.mark.parametrize("path", RUN_FILES, ids=[str(p.relative_to(ROOT)) for p in RUN_FILES])
def test_every_block_runs_as_written(path: Path, files: Path, tmp_path: Path) -> None:
    work = _folder(files, tmp_path, path)
    env = _env(work)
    runnable = [b for b in ALL if b.path == path and b.no_run is None]
    python = [(b.where, b.code) for b in runnable if b.language == "python"]
    failures = []
    if python:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER],
            input=json.dumps(python),
            cwd=work,
            env=_env(work, venv_bin=False),
            capture_output=True,
            text=True,
            timeout=900,
        )
        if proc.returncode != 0 or "ALL BLOCKS RAN" not in proc.stdout:
            failures.append(f"{proc.stdout[-4000:]}{proc.stderr[-6000:]}")
    for block in (b for b in runnable if b.language != "python"):
        proc = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", _shell(block)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        if proc.returncode != 0:
            failures.append(f"{block.where} exited {proc.returncode}:\n{proc.stdout[-3000:]}{proc.stderr[-4000:]}")
    assert not failures, "\n\n".join(failures)
    assert not _not_ignored(files, work), f"{path.name}'s blocks leave files a clone's git status shows"


def _not_ignored(files: Path, work: Path) -> list[str]:
    """What the blocks left in ``work`` that the repository's .gitignore would not hide, had they run in a clone's
    root (issue 39: the quick start left model.cache, manifests, recordings untracked in the clone); the files the
    fixture put there, and the test's own history store and home folder, aside."""
    given = {p.relative_to(files).as_posix() for p in files.rglob("*")}
    left = [
        p.relative_to(work).as_posix()
        for p in work.rglob("*")
        if p.is_file() and not p.name.startswith("history.sqlite") and not p.relative_to(work).parts[0].startswith(".")
    ]
    left = [name for name in left if name not in given]
    if not left:  # git check-ignore reads an empty line as an empty pathspec, and fails
        return []
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=ROOT,
        input="\n".join(left) + "\n",
        capture_output=True,
        text=True,
    )
    if checked.returncode not in (0, 1):  # 1: none ignored; more: no git, or not a clone (an unpacked sdist)
        pytest.skip(f"git check-ignore cannot run here: {checked.stderr.strip()[:200]}")
    ignored = set(checked.stdout.splitlines())
    return sorted(name for name in left if name not in ignored)
