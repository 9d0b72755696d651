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
# pip's own exit status decides (pipefail); the filter only hides notes about
# optional local package folders that do not exist on this machine.
pip_install() {
  .venv/bin/python -m pip install --quiet "$@" 2>&1 | { grep -v "is ignored" || true; }
}
pip_install --upgrade pip
pip_install "torch==2.13.0"
pip_install -e ".[${HYGRAPH_EXTRAS:-dev}]"
.venv/bin/python -c "import hygraph, torch; print('hygraph', hygraph.__version__, '| torch', torch.__version__)"
