#!/usr/bin/env bash
# `hygraph copy` of one index onto PostgreSQL with several versions of the code, taking turns.
#
#   bash benchmarks/copy_turns.sh INDEX 'postgresql://user@host:port/db' NAME=SRC_DIR ...
#
# Each NAME=SRC_DIR is a folder holding a version's `shared/hygraph` (for example made
# with `git archive REV shared/hygraph | tar -x -C DIR`); the runs go in the order given
# (repeat a name for more runs). Each copy goes into a new folder and schema, which are
# removed afterwards. Prints `NAME seconds` per run from the copy's own report.
set -euo pipefail
INDEX="$1"; STORE="$2"; shift 2
PY="${PYTHON:-$(dirname "$0")/../.venv/bin/python}"
i=0
for spec in "$@"; do
  i=$((i + 1)); name="${spec%%=*}"; src="${spec#*=}"
  target="$(mktemp -d)/copy"; schema="copy_turns_${i}_$$"
  out="$(PYTHONPATH="$src/shared" "$PY" -m hygraph.cli copy --index "$INDEX" --to "$target" \
         --store "$STORE?schema=$schema" 2>&1 | tail -1)"
  echo "$name $(echo "$out" | sed -n 's/.* in \([0-9.]*\)s:.*/\1/p')   ($out)"
  psql -q "$STORE" -c "DROP SCHEMA $schema CASCADE" 2>/dev/null || true
  rm -rf "$(dirname "$target")"
done
