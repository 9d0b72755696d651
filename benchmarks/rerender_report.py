"""Write a ``hygraph bench`` result's report again, with the build cost of every layer.

The per-layer build table is read from the index's build history
(:func:`hygraph.bench.runner.layer_builds`); a result saved before that table existed, or
whose index gained layers since, gets it here, with nothing measured again. Writes the
JSON (with ``layer_builds`` added), the Markdown report and its plots.

    python benchmarks/rerender_report.py /tmp/bench/out.json benchmarks/results/musique-x.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hygraph.bench.report import write_report
from hygraph.bench.runner import layer_builds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", help="the JSON a hygraph bench --out wrote")
    parser.add_argument("report", help="where the Markdown report goes (JSON beside it)")
    args = parser.parse_args()
    result = json.loads(Path(args.result).read_text())
    result["main"]["layer_builds"] = layer_builds(Path(result["main"]["index"]))
    report = Path(args.report)
    report.with_suffix(".json").write_text(json.dumps(result, indent=1))
    write_report(result, report.with_suffix(".md"))


if __name__ == "__main__":
    main()
