#!/usr/bin/env bash
# The main job on a fresh machine: install trt_widget with TensorRT for RTX into .venv and open the quick-start
# notebook in JupyterLab (no GPU needed), as an untracked working copy (notebooks/my-quickstart.ipynb). Pass
# --no-browser etc. through to jupyter lab.
# TRT_WIDGET_VENV=DIR uses that environment as it is (nothing installed), as tests/e2e/test_e2e_demo.py does.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TRT_WIDGET_VENV:-.venv}
if [ -z "${TRT_WIDGET_VENV:-}" ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install -q -U pip
    .venv/bin/python -m pip install -q -e ".[rtx,pandas]" jupyterlab
fi
# JupyterLab saves outputs into the notebook it opens (autosave): open a working copy, never the tracked
# notebooks/quickstart.ipynb, so the clone stays clean. An existing copy is kept (it holds your changes).
notebook=notebooks/my-quickstart.ipynb
if [ ! -e "$notebook" ]; then
    cp notebooks/quickstart.ipynb "$notebook"
elif [ notebooks/quickstart.ipynb -nt "$notebook" ]; then
    echo "demo: notebooks/quickstart.ipynb is newer than your $notebook (kept); delete it for the new one" >&2
fi
extra=()
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# LabApp.default_url (ServerApp's is overridden by JupyterLab's own "/lab"): the browser and the printed link open
# the notebook itself, not the Launcher. No news: news_url=None stops the fetching, and the settings overrides in
# scripts/demo-lab-settings the "receive official Jupyter news?" pop-up over the page.
exec "$venv/bin/jupyter" lab "${extra[@]}" \
    --LabApp.default_url="/lab/tree/$notebook" \
    --LabApp.news_url=None \
    --LabApp.app_settings_dir=scripts/demo-lab-settings \
    "$@"
