#!/usr/bin/env bash
# The fast checks, under a minute: ruff, ruff format, mypy (strict), biome and tsc. Run first by scripts/test.sh
# and by the pre-commit hook (.pre-commit-config.yaml). Only the project's own files are checked: a notebook or
# script a user saves in the clone is not (tracked files when this is a git checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TRT_WIDGET_VENV:-.venv}/bin

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # tracked files, and new ones in the project's own folders (not notebooks/: a user's notebook lives there)
    mapfile -t files < <(git ls-files -- '*.py' '*.ipynb'
        git ls-files --others --exclude-standard -- 'trt_widget/*.py' 'tests/*.py' 'bench/*.py' 'scripts/*.py')
else
    files=(trt_widget tests bench scripts notebooks)
fi
"$bin/ruff" check --quiet "${files[@]}"
"$bin/ruff" format --check --quiet "${files[@]}"
"$bin/mypy"  # trt_widget/, tests/ and scripts/ ([tool.mypy] files)
# each a module named `conftest` beside tests/conftest.py: checked on their own
"$bin/mypy" tests/e2e/conftest.py
"$bin/mypy" conftest.py
(cd js && npm run --silent lint && npm run --silent typecheck && npm run --silent build:check)
echo "checks passed"
