"""k-hop paths between seed entities, found one after another, and their merging.

The unified framework's KhopPath operator (spec 002 §4.4 S1, DALK's path-based
exploration) works on an entity set: find a path of at most ``k`` hops whose start
and end both belong to the set, remove the path's entities from the set, and go on
until the set is empty; then merge paths that extend one another (``A-B-C`` and
``C-D`` join into ``A-B-C-D``; ``A-B-C`` inside ``A-B-C-D`` is dropped).

The spec leaves two choices open; ours:

* **where the next path starts**: from the end of the last path found, so that
  consecutive paths chain (DALK's code walks its entity list the same way); when the
  current start reaches no remaining entity within ``k`` hops, the next remaining
  entity becomes the start;
* **which path**: a shortest one (breadth-first search over the undirected graph,
  neighbours in sorted order, so ties are deterministic) to the *nearest* remaining
  entity (ties by the set's order); ``per_pair`` > 1 keeps up to that many shortest
  paths to it.

Everything here is plain Python over an adjacency mapping (node → sorted neighbour
ids), so it is tested on hand-made graphs; the operator builds the mapping from the
entity graph's relation edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Adjacency = Mapping[str, Sequence[str]]


def nearest_paths(
    adjacency: Adjacency,
    start: str,
    targets: Sequence[str],
    *,
    max_hops: int,
    per_pair: int = 1,
) -> list[list[str]]:
    """Shortest paths from ``start`` to the nearest of ``targets`` within ``max_hops``.

    The nearest target is the one at the least hop distance (ties: the first in
    ``targets``); up to ``per_pair`` distinct shortest paths to it are returned, in
    the order the sorted neighbour lists give ([] when no target is within reach).
    """
    wanted = [t for t in targets if t != start]
    if start not in adjacency or not wanted or max_hops < 1:
        return []
    goal = set(wanted)
    parents: dict[str, list[str]] = {start: []}
    frontier = [start]
    for _ in range(max_hops):
        level: dict[str, list[str]] = {}
        for node in frontier:
            for other in adjacency.get(node, ()):
                if other in parents:
                    continue
                level.setdefault(other, []).append(node)
        if not level:
            return []
        parents.update(level)
        reached = [t for t in wanted if t in level]
        if reached:
            return _unwind(parents, start, reached[0], max(1, per_pair))
        frontier = [n for n in level if n not in goal]
    return []


def _unwind(parents: dict[str, list[str]], start: str, end: str, limit: int) -> list[list[str]]:
    """Up to ``limit`` shortest paths ``start → end`` read back through ``parents``."""
    out: list[list[str]] = []

    def walk(node: str, tail: list[str]) -> None:
        if len(out) >= limit:
            return
        if node == start:
            out.append([start, *tail])
            return
        for parent in parents[node]:
            walk(parent, [node, *tail])

    walk(end, [])
    return out


def khop_paths(
    adjacency: Adjacency, seeds: Sequence[str], *, max_hops: int, per_pair: int = 1
) -> list[list[str]]:
    """Paths between the seeds, found one after another (see the module docstring).

    Seeds absent from ``adjacency`` (no relation at all) cannot be joined and are
    skipped. Each round removes at least one seed from the set, so the search ends.
    """
    remaining = [s for s in dict.fromkeys(seeds) if s in adjacency]
    if len(remaining) < 2:
        return []
    found: list[list[str]] = []
    start = remaining.pop(0)
    while remaining:
        paths = nearest_paths(adjacency, start, remaining, max_hops=max_hops, per_pair=per_pair)
        if not paths:
            start = remaining.pop(0)
            continue
        found.extend(paths)
        on_paths = {node for path in paths for node in path}
        remaining = [s for s in remaining if s not in on_paths]
        start = paths[0][-1]
    return found


def _inside(short: Sequence[str], long: Sequence[str]) -> bool:
    """Whether ``short`` appears contiguously in ``long``, in either direction."""
    n = len(short)
    if n > len(long):
        return False
    forward, backward = list(short), list(reversed(short))
    for i in range(len(long) - n + 1):
        window = list(long[i : i + n])
        if window == forward or window == backward:
            return True
    return False


def merge_paths(
    paths: Sequence[Sequence[str]], *, join: bool = True, limit: int = 0
) -> list[list[str]]:
    """Paths that extend one another merged (spec 002 §4.4 S1), in first-found order.

    With ``join``, two paths join when one ends where the other starts and they share
    no other node (``A-B-C`` + ``C-D`` → ``A-B-C-D``; a path followed by several joins
    each of them). Then a path lying inside a longer one (either direction) is
    dropped, as is a repeat. ``limit`` keeps the first ``limit`` paths (0: all).
    """
    work = [list(p) for p in paths if len(p) >= 2]
    changed = join
    while changed:
        changed = False
        for i, head in enumerate(work):
            follow = [
                j
                for j, tail in enumerate(work)
                if j != i and tail[0] == head[-1] and not set(tail[1:]) & set(head)
            ]
            if follow:
                joined = [head + work[j][1:] for j in follow]
                at = sum(1 for n in range(i) if n not in follow)
                rest = [p for n, p in enumerate(work) if n != i and n not in follow]
                work = [*rest[:at], *joined, *rest[at:]]
                changed = True
                break
    out: list[list[str]] = []
    for n, path in enumerate(work):
        if any(_inside(path, kept) for kept in out):
            continue
        if any(len(other) > len(path) and _inside(path, other) for other in work[n + 1 :]):
            continue
        out.append(path)
    return out[:limit] if limit > 0 else out
