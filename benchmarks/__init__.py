"""Benchmark scripts, and the peer-system adapters for ``hygraph bench`` (:mod:`.peers`)."""
