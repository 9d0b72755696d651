#!/usr/bin/env bash
# Set up the environment and run the main job: index the bundled sample corpus
# offline and answer its sample questions with each built-in method.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/hygraph demo "$@"
