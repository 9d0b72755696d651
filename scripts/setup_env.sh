#!/usr/bin/env bash
# Create ./.venv (if missing) and install hygraph from this checkout.
# torch is installed first and pinned: it is the CPU build on supported machines,
# and installing it before sentence-transformers keeps pip from pulling CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install --quiet "torch==2.13.0" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install --quiet -e ".[${HYGRAPH_EXTRAS:-dev}]" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import hygraph, torch; print('hygraph', hygraph.__version__, '| torch', torch.__version__)"
