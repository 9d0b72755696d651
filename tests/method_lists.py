"""Method lists the integration tests run over."""

from __future__ import annotations

from hygraph.methods.base import available_methods, get_method


def offline_methods() -> list[str]:
    """Registered methods whose query runs without an LLM.

    The agentic methods (``query_llm`` "required: ...") fail with one clear line without
    one; their own test modules drive them through every integration with the scripted
    LLM double.
    """
    return [m for m in available_methods() if not get_method(m).query_llm.startswith("required")]
