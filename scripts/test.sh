#!/usr/bin/env bash
# Set up the environment and run the test suite (heavy cases run too unless
# PYTEST_ADDOPTS="-m 'not heavy'" is set).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
.venv/bin/ruff check .
# The one-way import contract between the package layers (pyproject: tool.importlinter).
.venv/bin/lint-imports
exec .venv/bin/python -m pytest -q "$@"
