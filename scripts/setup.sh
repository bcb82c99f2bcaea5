#!/usr/bin/env bash
# Create .venv (if missing) and install HeteroSched with everything it needs.
#   PYTHON      interpreter to build the venv with (default: python3, needs >= 3.10)
#   TORCH_SPEC  the torch requirement installed first (default: torch==2.13.0, the CPU build
#               these machines provide; an unpinned torch would pull a multi-GB CUDA build)
#   TORCH_INDEX_URL  the package index torch is installed from (default: pip's own); where
#               that index serves the CUDA build (plain PyPI on Linux), set it to
#               https://download.pytorch.org/whl/cpu for the CPU build
# Extras: dev (pytest, hypothesis) and ray (Ray core, for --backend ray; its tests skip without it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
pip_install() { .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"; }
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  pip_install --index-url "$TORCH_INDEX_URL" "$TORCH_SPEC"
else
  pip_install "$TORCH_SPEC"
fi
pip_install -e ".[dev,ray]"      # ray: hsched evaluate/compare --backend ray
