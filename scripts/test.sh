#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs (Python venv, Debian chromium when run as
# root, the front end's npm packages), runs the fast checks (scripts/check.sh) and the docs build (strict),
# rebuilds the front-end bundle, then runs the JS tests, the Python tests (real TensorRT-for-RTX builds and
# real-browser e2e tests) and the project's notebooks (nbval), under branch coverage with its floor enforced: the
# tests marked deadline alone, after the rest ran on two pytest-xdist workers beside the browser tests (below).
set -euo pipefail
cd "$(dirname "$0")/.."
# bytecode caches on, whatever the environment says: pytest keeps each test module's rewritten asserts in __pycache__
# (without them each pytest process rewrites all the suite's modules again: ~12 s of CPU under coverage), and the
# processes the tests start load trt_widget compiled
unset PYTHONDONTWRITEBYTECODE

# --fast: the fast tier while editing (docs/development.md): the JS unit tests and the Python tests that need no
# TensorRT build, server, browser or Ray (`pytest --fast`), side by side, in about a minute; no install beyond a
# first one, no checks, no coverage. Extra arguments go to pytest.
if [ "${1:-}" = "--fast" ]; then
    shift
    if [ ! -x .venv/bin/pytest ] || [ ! -d js/node_modules ]; then
        python3 -m venv .venv
        .venv/bin/python -m pip install -q -e ".[rtx,dev]"
        (cd js && npm ci --no-audit --no-fund --loglevel=error)
    fi
    start=$SECONDS
    (cd js && npx vitest run --reporter=dot >../.vitest-fast.log 2>&1) &
    js=$!
    status=0
    .venv/bin/python -m pytest --fast -q "$@" || status=$?
    if wait "$js"; then
        grep -E "Tests +[0-9]+" .vitest-fast.log || true
    else
        cat .vitest-fast.log
        status=1
    fi
    rm -f .vitest-fast.log
    echo "fast tier: $((SECONDS - start)) s"
    exit "$status"
fi

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q -U pip
.venv/bin/python -m pip install -q -e ".[rtx,dev]"
# ipykernel 6.x beside the venv's 7.x, for the e2e test of a Stop click that ipykernel 6 cannot deliver
.venv/bin/python -m pip install -q --no-deps --upgrade --target .venv/ipykernel6 "ipykernel>=6.29,<7" "nest_asyncio>=1.5"

(cd js && npm ci --no-audit --no-fund --loglevel=error)
bash scripts/check.sh
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
# in ( ) so that a failure stops the script: set -e ignores failures before the last command of an && list
(cd js && npm run build && npm test)
if ! git diff --quiet -- trt_widget/static 2>/dev/null; then
    if [ -n "${CI:-}" ]; then
        echo "error: trt_widget/static is stale: rebuilding from js/ changed it; run 'cd js && npm run build' and commit it" >&2
        exit 1
    fi
    echo "note: trt_widget/static differs from the committed bundle after rebuilding from js/ (commit the rebuilt one)" >&2
fi

export TRT_WIDGET_ARTIFACTS="${TRT_WIDGET_ARTIFACTS:-$PWD/artifacts}"
# under coverage (branch; the processes the tests start too: see [tool.coverage.run] in pyproject.toml)
rm -f .coverage .coverage.*
status=0
# the project's notebooks only (tracked ones), not one a user saved in the clone
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t notebooks < <(git ls-files -- 'notebooks/*.ipynb')
else
    notebooks=(notebooks)
fi
# Two passes by default (docs/development.md, "The full suite in parallel"). Pass 1: the browser tests and the
# notebooks in one pytest (one JupyterLab server and Chromium for the session; Playwright's event loop stays on its
# main thread, so nothing else may run after them there) beside every other test on N pytest-xdist workers
# (TRT_WIDGET_TEST_WORKERS, 2 by default; tests/conftest.py groups each module, the Ray tests and the e2e tests onto
# one worker each). Pass 2, once pass 1 has ended: the tests marked `deadline` (a wall-clock bound, a race with a
# real build's step, a Ray start: pyproject.toml's markers) in one pytest, with nothing else running, so that no
# other test competes with them for the two cores. TRT_WIDGET_TEST_WORKERS=0: the whole suite in one pytest run,
# as before. Each run prints its 25 slowest tests; its log is shown whole.
workers=${TRT_WIDGET_TEST_WORKERS:-2}
started=$SECONDS
# exit status 5 is "no test collected": not a failure where arguments (-k, -m, a path) narrowed the run to nothing
# in one of the passes
passed() { [ "$1" = 0 ] || { [ "$1" = 5 ] && [ "$narrowed" = 1 ]; }; }
narrowed=0
[ "$#" = 0 ] || narrowed=1
if [ "$workers" = 0 ]; then
    rc=0
    .venv/bin/coverage run -m pytest tests "${notebooks[@]}" --nbval-lax -ra --durations=25 "$@" || rc=$?
    passed "$rc" || status=$rc
else
    logs=$(mktemp -d)
    .venv/bin/coverage run -m pytest tests/e2e "${notebooks[@]}" --nbval-lax --deadline-tests=skip -ra --durations=25 \
        "$@" >"$logs/browser.log" 2>&1 &
    browser=$!
    rc=0
    .venv/bin/coverage run -m pytest tests --ignore=tests/e2e --deadline-tests=skip -n "$workers" --dist loadgroup \
        -ra --durations=25 "$@" >"$logs/rest.log" 2>&1 || rc=$?
    passed "$rc" || status=$rc
    rest_s=$((SECONDS - started))
    rc=0
    wait "$browser" || rc=$?
    passed "$rc" || status=$rc
    echo "== pytest pass 1: tests outside a browser (-n $workers, ${rest_s} s) =="
    cat "$logs/rest.log"
    echo "== pytest pass 1: browser tests and notebooks, beside them =="
    cat "$logs/browser.log"
    rm -rf "$logs"
    pass1_s=$((SECONDS - started))
    echo "== pytest pass 2: the tests marked deadline, alone (pass 1 took ${pass1_s} s) =="
    rc=0
    .venv/bin/coverage run -m pytest tests --deadline-tests=only -ra --durations=25 "$@" || rc=$?
    passed "$rc" || status=$rc
fi
echo "pytest: $((SECONDS - started)) s in all"
# the fast tier on the other Pythons pyproject.toml claims (3.10+), where this machine has them: each in a venv of
# its own with only what the fast tier needs (the [test] extra)
for version in 3.10 3.12; do
    # pyenv's interpreters (its shims answer only for the version selected), else one on PATH
    python=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version" 2>/dev/null | tail -1)
    python=${python:-$(command -v "python$version" || true)}
    if [ -z "$python" ] || ! "$python" -c "import venv" 2>/dev/null; then
        echo "note: no python$version here: the fast tier ran on $(.venv/bin/python -V) only" >&2
        continue
    fi
    "$python" -m venv ".venv-$version"
    ".venv-$version/bin/python" -m pip install -q -U pip
    ".venv-$version/bin/python" -m pip install -q -e ".[rtx,test]"
    echo "fast tier on $(".venv-$version/bin/python" -V):"
    ".venv-$version/bin/python" -m pytest --fast -q -p no:cacheprovider || status=$?
done
# the report is information: a problem making it is said, and does not change the tests' verdict
# the coverage floor (fail_under in pyproject.toml) holds for the whole suite, not for a run narrowed by arguments
floor=()
[ "$#" = 0 ] || floor=(--fail-under=0)
if .venv/bin/coverage combine -q; then
    .venv/bin/coverage report --sort=cover "${floor[@]}" || {
        echo "error: branch coverage fell under the floor (fail_under in pyproject.toml's [tool.coverage.report])" >&2
        status=1
    }
else
    echo "note: no coverage data" >&2
fi
exit "$status"
