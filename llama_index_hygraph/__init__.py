"""LlamaIndex integration for hygraph.

Will expose hygraph indexes as a LlamaIndex ``PropertyGraphIndex`` with its
retrievers and extractors. Empty for now: the core lives in :mod:`hygraph`.
"""
