#!/usr/bin/env python3
"""Mutation check: does some test fail when the code is wrong? One small change (a mutant) at a time.

    .venv/bin/python scripts/mutate.py                      # the pure modules, each with its fast tests
    .venv/bin/python scripts/mutate.py trt_widget/_options.py --jobs 2
    .venv/bin/python scripts/mutate.py trt_widget/_engine.py --tests tests/test_options_reach_tensorrt.py
    .venv/bin/python scripts/mutate.py trt_widget/_phases.py --lines 150-170 --list   # the mutants, not run
    .venv/bin/python scripts/mutate.py trt_widget/_snapshot.py --fast --jobs 2   # through the fast tier alone

Mutants (from the module's AST; code inside f-strings, annotations and docstrings is left alone): a comparison
operator flipped (< <=, > >=, == !=, in / not in, is / is not), ``and``/``or`` swapped, a ``not`` dropped, an
``if``/``while``/conditional-expression test negated, a number changed (0 -> 1, 1 -> 0, n -> n + 1; a float
doubled), True/False swapped, a short string compared against changed, + - and * / swapped, ``min``/``max``
swapped, ``break``/``continue`` swapped, ``return x`` -> ``return None``, a statement in a function body
replaced by ``pass``.

Each mutant is written into a private copy of ``trt_widget/`` and ``tests/`` (the checkout is never touched, so
it is safe while others work in it) and the module's tests run against it (``pytest -x -q``) in a child forked
from a process that has already imported pytest and the heavy libraries, with a timeout. A test failure,
an error or the timeout kills the mutant; a mutant every test passes survives. Mutants on lines the tests
never run (measured once with coverage) survive without a run. The unmutated code must pass first.
With ``--fast`` every run is ``pytest --fast`` (root conftest.py: no test marked slow) on the module's tests
followed by the rest of the fast tier: what the fast tier alone catches, with no real TensorRT build.

Output: killed/survived per module and the survivors as ``file:line:col  before -> after``. Exit status 0
(survivors are information, not a failure) unless the unmutated code fails its tests (1). Rewriting one
mutant's source into a test is the way to kill it; an equivalent mutant (no test can tell) is explained, not
killed: mark a line ``# pragma: no mutate`` to leave it out for good.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> its fast tests, most likely to fail first (pytest stops at the first failure)
TARGETS: dict[str, list[str]] = {
    "trt_widget/_phases.py": ["tests/test_phases.py", "tests/test_phases_fuzz.py"],
    "trt_widget/_snapshot.py": ["tests/test_snapshot.py"],
    "trt_widget/_options.py": ["tests/test_options.py"],
    "trt_widget/_shapes.py": ["tests/test_cli_shapes.py", "tests/test_options.py"],
    "trt_widget/_cli_options.py": ["tests/test_cli_shapes.py", "tests/test_options_typed.py"],
    "trt_widget/_events.py": ["tests/test_events.py", "tests/test_events_sinks.py"],
    "trt_widget/_event_sinks.py": ["tests/test_events_sinks.py", "tests/test_events.py"],
    "trt_widget/_subscribe.py": ["tests/test_subscribe.py"],
}
# not run by default (real builds: minutes), given on the command line as `MODULE --tests ...`
EXTRA_TARGETS: dict[str, list[str]] = {
    "trt_widget/_engine.py": [
        "tests/test_options_reach_tensorrt.py",
        "tests/test_build_errors.py",
        "tests/test_threads.py",
    ],
}
PREIMPORT = [
    *("pytest", "hypothesis", "nbval.plugin", "anyio", "numpy", "onnx", "traitlets", "anywidget", "ipywidgets"),
    *("cloudpickle", "rich", "psutil", "jsonschema", "tensorrt_rtx_bindings", "coverage"),
]

FLIP_COMPARE: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
FLIP_BINOP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository
    line: int
    col: int
    start: int  # byte offsets into the source
    end: int
    replacement: str
    before: str
    kind: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}"

    def describe(self) -> str:
        return f"{self.where}  {_short(self.before)} -> {_short(self.replacement)}  ({self.kind})"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode() + source[self.end :]


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Finder(ast.NodeVisitor):
    """Collects mutants; skips annotations, docstrings, f-strings, decorators and ``# pragma: no mutate`` lines."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.lines = source.split(b"\n")
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line) + 1)
        self.mutants: list[Mutant] = []
        self.function_depth = 0

    # -- helpers ---------------------------------------------------------------------------------------------
    def _span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def _text(self, node: ast.AST) -> str:
        start, end = self._span(node)
        return self.source[start:end].decode()

    def _skipped(self, node: ast.AST) -> bool:
        return b"pragma: no mutate" in self.lines[node.lineno - 1]  # type: ignore[attr-defined]

    def add(self, node: ast.AST, replacement: str, kind: str) -> None:
        if self._skipped(node):
            return
        start, end = self._span(node)
        self.mutants.append(
            Mutant(self.path, node.lineno, node.col_offset, start, end, replacement, self._text(node), kind)  # type: ignore[attr-defined]
        )

    def add_expr(self, node: ast.expr, new: ast.expr, kind: str) -> None:
        self.add(node, f"({ast.unparse(new)})", kind)

    # -- what is not mutated -----------------------------------------------------------------------------------
    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # f-strings: messages

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self._statement(node)

    def visit_arg(self, node: ast.arg) -> None:
        return  # annotations

    def _body(self, body: list[ast.stmt]) -> None:
        for index, stmt in enumerate(body):
            if index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self.visit(default)
        self.function_depth += 1
        self._body(node.body)
        self.function_depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._body(node.body)

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node.body)

    def visit_If(self, node: ast.If) -> None:
        if isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            return
        self._negate(node.test)
        self.generic_visit(node)

    # -- statements ----------------------------------------------------------------------------------------
    def _statement(self, node: ast.stmt) -> None:
        if self.function_depth:
            self.add(node, "pass", "statement removed")

    def visit_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):
            self._statement(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._statement(node)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._statement(node)
        if type(node.op) in FLIP_BINOP:
            new = copy.copy(node)
            new.op = FLIP_BINOP[type(node.op)]()
            self.add(node, ast.unparse(new), "augmented operator")
        self.visit(node.value)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._statement(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._statement(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            self.add(node, "return None", "return value")
            self.visit(node.value)

    def visit_Break(self, node: ast.Break) -> None:
        self.add(node, "continue", "break/continue")

    def visit_Continue(self, node: ast.Continue) -> None:
        self.add(node, "break", "break/continue")

    def visit_While(self, node: ast.While) -> None:
        if not (isinstance(node.test, ast.Constant) and node.test.value is True):
            self._negate(node.test)
        self.generic_visit(node)

    # -- expressions ---------------------------------------------------------------------------------------
    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.Compare) or (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            return  # the operator flips cover these
        self.add_expr(test, ast.UnaryOp(ast.Not(), test), "condition negated")

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for index, op in enumerate(node.ops):
            if type(op) in FLIP_COMPARE:
                new = copy.copy(node)
                new.ops = [*node.ops]
                new.ops[index] = FLIP_COMPARE[type(op)]()
                self.add_expr(node, new, "comparison")
        for operand in [node.left, *node.comparators]:
            for const in _short_strings(operand):
                self.add_expr(const, ast.Constant("X" + str(const.value)), "string compared")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        new = copy.copy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self.add_expr(node, new, "and/or")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.add_expr(node, node.operand, "not dropped")
        elif isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return  # -1: the constant rule would make it -2; leave negative literals alone
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in FLIP_BINOP and not _is_string_concat(node):
            new = copy.copy(node)
            new.op = FLIP_BINOP[type(node.op)]()
            self.add_expr(node, new, "arithmetic")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
            other = "max" if node.func.id == "min" else "min"
            self.add(node.func, other, "min/max")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self.add_expr(node, ast.Constant(not value), "constant")
        elif isinstance(value, int):
            self.add_expr(node, ast.Constant(1 if value == 0 else 0 if value == 1 else value + 1), "constant")
        elif isinstance(value, float):
            self.add_expr(node, ast.Constant(1.0 if value == 0 else value * 2), "constant")


def _short_strings(node: ast.expr) -> Iterator[ast.Constant]:
    """String constants compared against (directly or in a tuple/list/set): names of states, events, kinds."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    for item in items:
        if isinstance(item, ast.Constant) and isinstance(item.value, str) and len(item.value) <= 40:
            yield item


def _is_string_concat(node: ast.BinOp) -> bool:
    return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
               for side in (node.left, node.right))  # fmt: skip


def find_mutants(path: str, lines: tuple[int, int] | None = None) -> list[Mutant]:
    source = (ROOT / path).read_bytes()
    finder = _Finder(path, source)
    finder.visit(ast.parse(source))
    seen: set[bytes] = set()
    mutants = []
    for mutant in sorted(finder.mutants, key=lambda m: (m.start, m.end, m.replacement)):
        if lines is not None and not lines[0] <= mutant.line <= lines[1]:
            continue
        mutated = mutant.apply(source)
        if mutated in seen:
            continue
        try:
            compile(mutated, path, "exec")
        except SyntaxError:
            continue
        seen.add(mutated)
        mutants.append(mutant)
    return mutants


# -- running -------------------------------------------------------------------------------------------------
def make_copy(parent: Path) -> Path:
    """A private copy of the package, its tests and what they read (no bytecode: a mutant never meets a stale .pyc)."""
    work = Path(tempfile.mkdtemp(prefix="copy-", dir=parent))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "e2e")
    shutil.copytree(ROOT / "trt_widget", work / "trt_widget", ignore=ignore)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", work / "pyproject.toml")
    shutil.copy2(ROOT / "conftest.py", work / "conftest.py")  # the tiers (--fast) and settings of every run
    for read in ("docs", "js/src", "notebooks"):  # what the fast tier's tests read: API docs, JS, notebooks
        shutil.copytree(ROOT / read, work / read, ignore=ignore)
    return work


def fork_pytest(work: Path, tests: list[str], log: Path, measure: str | None = None, fast: bool = False) -> int:
    """Run pytest on ``tests`` in ``work`` in a forked child (its own process group); returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 3
    try:
        os.setpgid(0, 0)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(work)
        sys.path.insert(0, str(work))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        os.environ["TRT_WIDGET_HISTORY"] = str(work / "history.sqlite")
        sys.dont_write_bytecode = True
        import pytest

        args = ["-x", "-q", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
        args += ["--rootdir", str(work), "-c", str(work / "pyproject.toml")] + (["--fast"] if fast else [])
        cov = None
        if measure is not None:  # which lines the tests run, in this process and in those they start
            import coverage

            rc = work / ".coveragerc-mutate"
            data = work / ".coverage-mutate" / "data"
            data.parent.mkdir(exist_ok=True)
            rc.write_text(
                f"[run]\nparallel = true\ndata_file = {data}\ninclude = {work / measure}\npatch = subprocess, _exit\n"
            )
            cov = coverage.Coverage(config_file=str(rc))
            cov.start()
        code = int(pytest.main([*args, *tests]))
        if cov is not None:
            assert measure is not None  # cov measures it
            cov.stop()
            cov.save()
            os.environ.pop("COVERAGE_PROCESS_CONFIG", None)
            combined = coverage.Coverage(config_file=str(rc))
            combined.combine([str(data.parent)])
            lines = sorted(combined.get_data().lines(str(work / measure)) or [])
            (log.parent / f"{log.name}.lines.json").write_text(json.dumps(lines))
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def wait_child(pid: int, deadline: float) -> int | None:
    """The child's exit code, or None after killing its process group at ``deadline``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


@dataclass
class Result:
    mutant: Mutant
    outcome: str  # killed | timeout | survived | not run (no test runs the line)
    seconds: float


def run_module(path: str, tests: list[str], args: argparse.Namespace, parent: Path) -> list[Result] | None:
    mutants = find_mutants(path, args.lines)
    # --fast: a mutant the module's tests miss meets the whole fast tier (a kill by the module's tests alone
    # saves collecting the rest); the baseline runs (and measures) them all
    stages = [tests, ["tests"]] if args.fast else [tests]
    tests = [*tests, "tests"] if args.fast else tests
    tier = " (pytest --fast: the fast tier alone)" if args.fast else ""
    print(f"\n== {path}: {len(mutants)} mutants; tests: {' '.join(tests)}{tier}", flush=True)
    if args.list:
        for mutant in mutants:
            print("  " + mutant.describe())
        return []
    works = [make_copy(parent) for _ in range(max(1, args.jobs))]
    log = parent / "baseline.log"
    started = time.monotonic()
    code = wait_child(fork_pytest(works[0], tests, log, measure=path, fast=args.fast), time.monotonic() + 1800)
    baseline = time.monotonic() - started
    if code != 0:
        print(f"   the unmutated code fails its tests (exit {code}); see {log}:")
        print("   " + "\n   ".join(log.read_text(errors="replace").splitlines()[-15:]))
        return None
    covered = set(json.loads((parent / "baseline.log.lines.json").read_text()))
    timeout = args.timeout or max(30.0, 3 * baseline + 10)
    print(f"   baseline {baseline:.1f} s (with coverage); timeout per mutant {timeout:.0f} s", flush=True)
    original = (ROOT / path).read_bytes()
    results: list[Result] = []
    queue = list(mutants)
    running: dict[int, tuple[Mutant, Path, float, int, float]] = {}  # pid -> mutant, copy, start, stage, its start
    free = list(works)
    total = len(queue)
    while queue or running:
        while queue and free:
            mutant = queue.pop(0)
            if not any(line in covered for line in range(mutant.line, mutant.line + mutant.before.count("\n") + 1)):
                results.append(Result(mutant, "not run", 0.0))
                continue
            work = free.pop()
            (work / path).write_bytes(mutant.apply(original))
            pid = fork_pytest(work, stages[0], work / "mutant.log", fast=args.fast)
            running[pid] = (mutant, work, time.monotonic(), 0, time.monotonic())
        if not running:
            continue
        time.sleep(0.02)
        for pid in list(running):
            mutant, work, t0, stage, t_stage = running[pid]
            done, status = os.waitpid(pid, os.WNOHANG)
            over = time.monotonic() - t_stage > timeout
            if not done and not over:
                continue
            if not done:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                outcome = "timeout"
            else:
                outcome = "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
            with contextlib.suppress(ProcessLookupError):  # what the tests left running (builder processes)
                os.killpg(pid, signal.SIGKILL)
            del running[pid]
            if outcome == "survived" and stage + 1 < len(stages):
                next_pid = fork_pytest(work, stages[stage + 1], work / "mutant.log", fast=args.fast)
                running[next_pid] = (mutant, work, t0, stage + 1, time.monotonic())
                continue
            (work / path).write_bytes(original)
            free.append(work)
            results.append(Result(mutant, outcome, time.monotonic() - t0))
            if args.verbose or outcome == "survived" or len(results) % 25 == 0:
                print(f"   [{len(results)}/{total}] {outcome:8} {mutant.describe()}", flush=True)
    return sorted(results, key=lambda r: (r.mutant.start, r.mutant.replacement))


def report(all_results: dict[str, list[Result]]) -> None:
    print("\n== summary")
    killed_all = total_all = 0
    for path, results in all_results.items():
        killed = sum(r.outcome in ("killed", "timeout") for r in results)
        timeouts = sum(r.outcome == "timeout" for r in results)
        not_run = sum(r.outcome == "not run" for r in results)
        killed_all += killed
        total_all += len(results)
        score = 100 * killed / len(results) if results else 100.0
        print(
            f"   {path}: {killed}/{len(results)} killed ({score:.0f}%)"
            + (f", {timeouts} by timeout" if timeouts else "")
            + (f"; {not_run} on lines no test runs" if not_run else "")
        )
    if total_all:
        print(f"   total: {killed_all}/{total_all} killed ({100 * killed_all / total_all:.0f}%)")
    survivors = [r for results in all_results.values() for r in results if r.outcome in ("survived", "not run")]
    if survivors:
        print(f"\n== survivors ({len(survivors)})")
        for r in survivors:
            print(f"   {r.mutant.describe()}" + ("  [not run by the tests]" if r.outcome == "not run" else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("modules", nargs="*", help=f"default: {' '.join(TARGETS)}")
    parser.add_argument("--tests", nargs="+", help="the tests to run (default: the module's list in this script)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 3x the unmutated run + 10)")
    parser.add_argument(
        "--fast", action="store_true", help="run the fast tier only (pytest --fast): the module's tests, then the rest"
    )
    parser.add_argument("--lines", help="only mutants starting on these lines, e.g. 120-180")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every mutant's outcome")
    args = parser.parse_args(argv)
    if args.lines:
        lo, _, hi = args.lines.partition("-")
        args.lines = (int(lo), int(hi or lo))
    modules = args.modules or list(TARGETS)
    for name in PREIMPORT:  # once, here: every forked child starts with them
        with contextlib.suppress(Exception):
            __import__(name)
    all_results: dict[str, list[Result]] = {}
    with tempfile.TemporaryDirectory(prefix="trt_widget-mutate-") as parent:
        for path in modules:
            path = str(Path(path).resolve().relative_to(ROOT)) if Path(path).is_absolute() else path
            tests = args.tests or TARGETS.get(path) or EXTRA_TARGETS.get(path)
            if not tests:
                parser.error(f"no test list for {path}: pass --tests")
            results = run_module(path, tests, args, Path(parent))
            if results is None:
                return 1
            if results:
                all_results[path] = results
    if args.list:
        return 0
    report(all_results)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "where": r.mutant.where,
                        "before": r.mutant.before,
                        "after": r.mutant.replacement,
                        "kind": r.mutant.kind,
                        "outcome": r.outcome,
                        "seconds": round(r.seconds, 2),
                    }
                    for results in all_results.values()
                    for r in results
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
