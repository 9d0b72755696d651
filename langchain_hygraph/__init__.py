"""LangChain and LangGraph integration for hygraph.

Will expose hygraph retrieval methods as LangChain retrievers, a LangGraph node
and an agent tool. Empty for now: the core lives in :mod:`hygraph`.
"""
