#!/usr/bin/env bash
# The main job on a fresh machine: install trt_widget with TensorRT for RTX into .venv and open the quick-start
# notebook in JupyterLab (no GPU needed). Pass --no-browser etc. through to jupyter lab.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q -U pip
.venv/bin/python -m pip install -q -e ".[rtx,pandas]" jupyterlab
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# default_url: the printed link (for a machine without a browser) opens the notebook itself, not the Launcher
exec .venv/bin/jupyter lab "${extra[@]}" --ServerApp.default_url=/lab/tree/notebooks/quickstart.ipynb "$@"
