"""Benchmark scripts and the peer-system adapters (:mod:`benchmarks.peers`) for ``hygraph bench``."""
