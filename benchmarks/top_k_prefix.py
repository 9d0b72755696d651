"""Does a query for k passages return the first k of a query for more?

For every question of a benchmark folder, asks a built index for ``--more`` passages and
for each k of ``--ks``, and counts the queries whose passages are exactly the head of
the deeper query's. A method whose internal depths follow the number of passages asked
for would rank differently at each k; the count shows that it does not.

    python benchmarks/top_k_prefix.py INDEX --data ../shared/data/musique \\
        --method hybrid-ppr --ks 2,5 --more 10
"""

from __future__ import annotations

import argparse

from hygraph.bench.data import load_dataset
from hygraph.index import GraphIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="a built index (for example a bench work index)")
    parser.add_argument("--data", required=True, help="the dataset folder of its questions")
    parser.add_argument("--method", default="hybrid-ppr")
    parser.add_argument("--ks", default="2,5", help="the shorter queries' passage counts")
    parser.add_argument("--more", type=int, default=10, help="the deeper query's count")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    questions = load_dataset(args.data).questions
    same = asked = 0
    with GraphIndex(args.index, progress=False) as index:
        for q in questions:
            deeper = index.retrieve(q.question, args.method, top_k=args.more).chunks
            for k in ks:
                asked += 1
                same += index.retrieve(q.question, args.method, top_k=k).chunks == deeper[:k]
    print(
        f"{args.method}: {same}/{asked} queries for k in {ks} return the first k passages "
        f"of a top_k={args.more} query"
    )


if __name__ == "__main__":
    main()
